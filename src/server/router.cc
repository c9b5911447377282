#include "server/router.h"

#include "common/json_writer.h"

namespace tg::server {
namespace {

std::vector<std::string> Segments(std::string_view path) {
  std::vector<std::string> out;
  if (path.starts_with('/')) path.remove_prefix(1);
  while (true) {
    const auto slash = path.find('/');
    out.emplace_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

bool IsParam(const std::string& segment) {
  return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

bool PathMatches(const RouteTable::Route& r, const std::vector<std::string>& got,
                 std::map<std::string, std::string>* params) {
  if (r.segments.size() != got.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (IsParam(r.segments[i])) {
      if (got[i].empty()) return false;
      (*params)[r.segments[i].substr(1, r.segments[i].size() - 2)] = got[i];
    } else if (r.segments[i] != got[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

HttpResponse ErrorFor(const RequestCtx& ctx, const ApiError& e) {
  return ErrorResponse(ApiForPath(ctx.path), e);
}

HttpResponse JsonResponse(int status, const common::Json& body) {
  HttpResponse r;
  r.status = status;
  r.body = common::WriteJson(body);
  return r;
}

const std::string& Call::Param(const std::string& name) const {
  static const std::string kNone;
  auto it = params.find(name);
  return it == params.end() ? kNone : it->second;
}

void RouteTable::Add(std::string method, std::string_view pattern, Access access, Handler handler) {
  Route r{std::move(method), Segments(pattern), access, std::move(handler)};
  bool literal = true;
  for (const std::string& s : r.segments) literal = literal && !IsParam(s);
  // A literal route takes the fast path only where the full scan would pick it too: no route
  // added before it takes the same method and path.
  for (const Route& earlier : routes_) {
    std::map<std::string, std::string> unused;
    if (literal && earlier.method == r.method && PathMatches(earlier, r.segments, &unused)) {
      literal = false;
    }
  }
  if (literal) literals_.push_back({std::string(pattern), routes_.size()});
  routes_.push_back(std::move(r));
}

RouteTable::Match RouteTable::Find(std::string_view method, std::string_view path) const {
  const std::string_view want = method == "HEAD" ? "GET" : method;
  Match m;
  for (const Literal& l : literals_) {
    const Route& r = routes_[l.index];
    if (l.path == path && r.method == want) {
      m.route = &r;
      m.access = r.access;
      return m;
    }
  }
  const std::vector<std::string> got = Segments(path);
  for (const Route& r : routes_) {
    std::map<std::string, std::string> params;
    if (!PathMatches(r, got, &params)) continue;
    if (r.method == want) {
      m.route = &r;
      m.params = std::move(params);
      m.access = r.access;
      m.allow.clear();
      return m;
    }
    if (m.allow.empty()) m.access = r.access;
    if (m.allow.find(r.method) == std::string::npos) {
      m.allow += (m.allow.empty() ? "" : ", ") + r.method;
    }
  }
  return m;
}

}  // namespace tg::server
