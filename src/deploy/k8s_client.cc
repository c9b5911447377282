// Kubernetes API client of the blue-green gate. One connection per request: the gate makes a
// handful of calls, so keep-alive would only add state.
#include "deploy/k8s_client.h"

#include <fmt/format.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <regex>

#include "common/file_util.h"
#include "common/json_writer.h"

namespace tg::deploy {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using common::Json;
using common::Result;
using common::Status;

constexpr std::uint64_t kMaxResponseBytes = 8ull << 20;
// A ConfigMap's data is limited to 1 MiB in total; stay clear of it.
constexpr std::size_t kMaxConfigMapValue = 900u << 10;

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

Result<std::string> ReadTrimmed(const std::string& path, const char* what) {
  auto text = common::ReadFileLimited(path, 1u << 20);
  if (!text.ok()) {
    return Status(text.status().code(), fmt::format("{}: {}", what, text.status().message()));
  }
  std::string s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

Status ParseServer(const std::string& url, K8sApiConfig* c) {
  static const std::regex kUrl(
      R"(^(https?)://(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+)(:([0-9]{1,5}))?/?$)");
  std::smatch m;
  if (url.size() > 512 || !std::regex_match(url, m, kUrl)) {
    return Status::InvalidArg(fmt::format(
        "--api-server '{}': expected https://HOST[:PORT] (or http://127.0.0.1:PORT for a local "
        "proxy)",
        url.substr(0, 128)));
  }
  c->scheme = m[1];
  c->host = m[2];
  if (c->host.front() == '[') c->host = c->host.substr(1, c->host.size() - 2);
  c->port = m[4].matched ? std::string(m[4]) : (c->scheme == "https" ? "443" : "80");
  if (const int port = std::stoi(c->port); port < 1 || port > 65535) {
    return Status::InvalidArg(
        fmt::format("--api-server '{}': port {} is outside 1..65535", url.substr(0, 128), c->port));
  }
  if (c->scheme == "http" && !IsLoopback(c->host)) {
    return Status::InvalidArg(fmt::format(
        "--api-server '{}': plain http is accepted only to a loopback address (the bearer token "
        "would cross the network in clear); use https",
        url));
  }
  return Status::Ok();
}

// The API's own explanation: a Status object's "message", or the start of the body.
std::string ApiMessage(const std::string& body) {
  auto j = Json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("message") && j["message"].is_string()) {
    return j["message"].get<std::string>();
  }
  return body.substr(0, 200);
}

Status StatusFromApi(const K8sResponse& r, const std::string& what) {
  const std::string msg = ApiMessage(r.body);
  switch (r.status) {
    case 401:
      return Status::InvalidArg(fmt::format(
          "{}: 401 Unauthorized: the token was refused ({}); check --token-file", what, msg));
    case 403:
      return Status::InvalidArg(
          fmt::format("{}: 403 Forbidden: {}; the gate's Role must allow it (`truegreen k8s render "
                      "--rollout blue-green` writes that Role)",
                      what, msg));
    case 404:
      return Status::NotFound(fmt::format("{}: 404 Not Found: {}", what, msg));
    default:
      break;
  }
  if (r.status >= 500 || r.status == 429) {
    return Status::Unavailable(fmt::format("{}: API server answered {}: {}", what, r.status, msg));
  }
  return Status::InvalidArg(fmt::format("{}: API server answered {}: {}", what, r.status, msg));
}

// Writes the request and reads the response; everything referenced lives in the caller's frame
// until its io_context has run out of work.
template <class Stream>
void Exchange(Stream* stream, beast::tcp_stream* tcp, beast::flat_buffer* buffer,
              http::request<http::string_body>* req,
              http::response_parser<http::string_body>* parser, std::chrono::milliseconds timeout,
              beast::error_code* ec) {
  tcp->expires_after(timeout);
  http::async_write(*stream, *req,
                    [stream, tcp, buffer, parser, timeout, ec](beast::error_code e, std::size_t) {
                      if (e) {
                        *ec = e;
                        return;
                      }
                      tcp->expires_after(timeout);
                      http::async_read(*stream, *buffer, *parser,
                                       [ec](beast::error_code e2, std::size_t) { *ec = e2; });
                    });
}

}  // namespace

bool IsK8sObjectName(std::string_view name) {
  static const std::regex kName("^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$");
  return !name.empty() && name.size() <= 253 && std::regex_match(name.begin(), name.end(), kName);
}

Result<K8sApiConfig> ResolveK8sApiConfig(const K8sApiOverrides& o) {
  K8sApiConfig c;
  if (!o.api_server.empty()) {
    TG_RETURN_IF_ERROR(ParseServer(o.api_server, &c));
  } else {
    const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
    const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
    if (host == nullptr || *host == '\0') {
      return Status::InvalidArg(
          "not in a cluster (KUBERNETES_SERVICE_HOST is unset): give --api-server URL");
    }
    std::string h = host;
    const std::string url =
        fmt::format("https://{}:{}", h.find(':') != std::string::npos ? "[" + h + "]" : h,
                    port && *port ? port : "443");
    TG_RETURN_IF_ERROR(ParseServer(url, &c));
  }
  const std::string token_file = o.token_file.empty() ? o.secrets_dir + "/token" : o.token_file;
  // A stub API server on loopback may need no token; in-cluster the token is required.
  if (!(o.token_file.empty() && c.scheme == "http")) {
    TG_ASSIGN_OR_RETURN(c.token, ReadTrimmed(token_file, "--token-file"));
  }
  if (c.scheme == "https") {
    c.ca_file = o.ca_file.empty() ? o.secrets_dir + "/ca.crt" : o.ca_file;
    TG_RETURN_IF_ERROR(ReadTrimmed(c.ca_file, "--ca-file").status());
  }
  if (!o.namespace_name.empty()) {
    c.namespace_name = o.namespace_name;
  } else {
    auto ns = ReadTrimmed(o.secrets_dir + "/namespace", "service account namespace");
    if (!ns.ok()) {
      return Status::InvalidArg(
          fmt::format("{} (outside a pod, give --namespace)", ns.status().message()));
    }
    c.namespace_name = *ns;
  }
  if (!IsK8sObjectName(c.namespace_name)) {
    return Status::InvalidArg(
        fmt::format("--namespace '{}': not a Kubernetes name", c.namespace_name.substr(0, 64)));
  }
  return c;
}

namespace {

http::request<http::string_body> BuildRequest(const K8sApiConfig& c, std::string_view method,
                                              const std::string& path,
                                              const std::string& content_type,
                                              const std::string& body) {
  http::request<http::string_body> req;
  req.method(http::string_to_verb(beast::string_view(method.data(), method.size())));
  req.target(path);
  req.version(11);
  const bool v6 = c.host.find(':') != std::string::npos;
  req.set(http::field::host, (v6 ? "[" + c.host + "]" : c.host) + ":" + c.port);
  req.set(http::field::user_agent, "truegreen");
  req.set(http::field::accept, "application/json");
  req.set(http::field::connection, "close");
  if (!c.token.empty()) req.set(http::field::authorization, "Bearer " + c.token);
  if (!body.empty()) {
    req.set(http::field::content_type, content_type);
    req.body() = body;
  }
  req.prepare_payload();
  return req;
}

}  // namespace

Result<K8sResponse> K8sApiRequest(const K8sApiConfig& c, std::string_view method,
                                  const std::string& path, const std::string& content_type,
                                  const std::string& body) {
  const std::string where = fmt::format("{} {}://{}:{}{}", method, c.scheme, c.host, c.port, path);
  http::request<http::string_body> req = BuildRequest(c, method, path, content_type, body);
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxResponseBytes);
  const auto timeout = std::chrono::milliseconds(c.timeout_ms);

  asio::io_context ioc;
  asio::ip::tcp::resolver resolver(ioc);
  beast::error_code ec;
  auto results = resolver.resolve(c.host, c.port, ec);
  if (ec) return Status::Unavailable(fmt::format("{}: cannot resolve: {}", where, ec.message()));
  beast::error_code io_ec;
  beast::flat_buffer buffer;
  auto connect = [&](beast::tcp_stream& tcp, std::function<void()> next) {
    tcp.expires_after(timeout);
    tcp.async_connect(results, [&, next](beast::error_code e, const auto&) {
      if (e) {
        io_ec = e;
        return;
      }
      next();
    });
  };
  if (c.scheme == "http") {
    beast::tcp_stream tcp(ioc);
    connect(tcp, [&] { Exchange(&tcp, &tcp, &buffer, &req, &parser, timeout, &io_ec); });
    ioc.run();
  } else {
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    ctx.set_verify_mode(asio::ssl::verify_peer);
    ctx.load_verify_file(c.ca_file, ec);
    if (ec) return Status::InvalidArg(fmt::format("--ca-file {}: {}", c.ca_file, ec.message()));
    beast::ssl_stream<beast::tcp_stream> tls(ioc, ctx);
    tls.set_verify_callback(asio::ssl::host_name_verification(c.host));
    // SNI: an API server behind a name-based proxy needs it; an address must not be sent.
    boost::system::error_code addr_ec;
    asio::ip::make_address(c.host, addr_ec);
    if (addr_ec && !SSL_set_tlsext_host_name(tls.native_handle(), c.host.c_str())) {
      return Status::Unavailable(where + ": cannot set the TLS server name");
    }
    auto& tcp = beast::get_lowest_layer(tls);
    connect(tcp, [&] {
      tcp.expires_after(timeout);
      tls.async_handshake(asio::ssl::stream_base::client, [&](beast::error_code e) {
        if (e) {
          io_ec = e;
          return;
        }
        Exchange(&tls, &tcp, &buffer, &req, &parser, timeout, &io_ec);
      });
    });
    ioc.run();
  }
  if (io_ec == beast::error::timeout) {
    return Status::Unavailable(fmt::format("{}: no answer within {} ms", where, c.timeout_ms));
  }
  if (io_ec == http::error::body_limit) {
    return Status::Unavailable(
        fmt::format("{}: response larger than {} bytes", where, kMaxResponseBytes));
  }
  if (io_ec) return Status::Unavailable(fmt::format("{}: {}", where, io_ec.message()));
  K8sResponse r;
  r.status = static_cast<int>(parser.get().result_int());
  r.body = std::move(parser.get().body());
  return r;
}

namespace {

Result<Json> GetObject(const K8sApiConfig& c, const std::string& path, const std::string& what) {
  TG_ASSIGN_OR_RETURN(K8sResponse r, K8sApiRequest(c, "GET", path, "", ""));
  if (r.status != 200) return StatusFromApi(r, "reading " + what);
  auto j = Json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Unavailable(
        fmt::format("reading {}: the API server's answer is not a JSON "
                    "object",
                    what));
  }
  return j;
}

std::string ObjectPath(const K8sApiConfig& c, const char* group_version, const char* resource,
                       const std::string& name) {
  return fmt::format("/{}/namespaces/{}/{}/{}", group_version, c.namespace_name, resource, name);
}

}  // namespace

Result<std::string> SwitchServiceSelector(const K8sApiConfig& c, const std::string& service,
                                          const std::string& label, const std::string& value) {
  const std::string what = fmt::format("Service {}/{}", c.namespace_name, service);
  const std::string path = ObjectPath(c, "api/v1", "services", service);
  TG_ASSIGN_OR_RETURN(Json svc, GetObject(c, path, what));
  const Json selector = svc.value("spec", Json::object()).value("selector", Json::object());
  if (!selector.is_object() || !selector.contains(label) || !selector[label].is_string()) {
    return Status::InvalidArg(
        fmt::format("{}: its spec.selector has no '{}' (found {}): not a blue-green Service", what,
                    label, common::WriteJson(selector, -1, common::JsonNotice::kNone)));
  }
  const std::string previous = selector[label].get<std::string>();
  const Json patch = {{"spec", {{"selector", {{label, value}}}}}};
  TG_ASSIGN_OR_RETURN(K8sResponse r,
                      K8sApiRequest(c, "PATCH", path, "application/merge-patch+json",
                                    common::WriteJson(patch, -1, common::JsonNotice::kNone)));
  if (r.status != 200) return StatusFromApi(r, "patching " + what);
  auto after = Json::parse(r.body, nullptr, false);
  if (after.is_discarded() ||
      after.value("spec", Json::object()).value("selector", Json::object()).value(label, "") !=
          value) {
    return Status::Unavailable(fmt::format(
        "patching {}: the API server accepted the patch but the selector does not show {}={}", what,
        label, value));
  }
  return previous;
}

Status StoreConfigMapValue(const K8sApiConfig& c, const std::string& configmap,
                           const std::string& key, const std::string& text,
                           const std::string& color) {
  const std::string what = fmt::format("ConfigMap {}/{}", c.namespace_name, configmap);
  if (text.size() > kMaxConfigMapValue) {
    return Status::InvalidArg(
        fmt::format("{}: the value for '{}' is {} bytes; a ConfigMap holds "
                    "at most 1 MiB (limit used: {} bytes)",
                    what, key, text.size(), kMaxConfigMapValue));
  }
  const std::string path = ObjectPath(c, "api/v1", "configmaps", configmap);
  K8sResponse r;
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto got = GetObject(c, path, what);
    if (!got.ok() && got.status().code() == common::StatusCode::kNotFound) {
      return Status::NotFound(fmt::format(
          "{} does not exist: seed the first baseline once (docs/DEPLOY.md, \"Blue-green\")",
          what));
    }
    TG_RETURN_IF_ERROR(got.status());
    Json cm = std::move(*got);
    if (!cm.contains("data") || !cm["data"].is_object()) cm["data"] = Json::object();
    cm["data"][key] = text;
    cm["metadata"]["annotations"]["truegreen.dev/baseline-color"] = color;
    // The read resourceVersion stays in metadata: a concurrent writer makes this PUT a 409.
    TG_ASSIGN_OR_RETURN(r, K8sApiRequest(c, "PUT", path, "application/json",
                                         common::WriteJson(cm, -1, common::JsonNotice::kNone)));
    if (r.status == 200) return Status::Ok();
    if (r.status != 409) break;
  }
  return StatusFromApi(r, "updating " + what);
}

Result<DeploymentRollout> ReadDeploymentRollout(const K8sApiConfig& c, const std::string& name) {
  const std::string what = fmt::format("Deployment {}/{}", c.namespace_name, name);
  TG_ASSIGN_OR_RETURN(Json d,
                      GetObject(c, ObjectPath(c, "apis/apps/v1", "deployments", name), what));
  auto num = [](const Json& o, const char* k, long long def) {
    return o.is_object() && o.contains(k) && o[k].is_number_integer() ? o[k].get<long long>() : def;
  };
  const Json meta = d.value("metadata", Json::object());
  const Json spec = d.value("spec", Json::object());
  const Json st = d.value("status", Json::object());
  const long long want = num(spec, "replicas", 1);
  const long long gen = num(meta, "generation", 0), observed = num(st, "observedGeneration", -1);
  const long long updated = num(st, "updatedReplicas", 0), ready = num(st, "readyReplicas", 0);
  const long long available = num(st, "availableReplicas", 0), total = num(st, "replicas", 0);
  DeploymentRollout out;
  out.detail = fmt::format(
      "{}/{} ready, {}/{} updated, {}/{} available, {} total (generation {} "
      "observed {})",
      ready, want, updated, want, available, want, total, gen, observed);
  // Zero desired replicas is never "ready": the gate would benchmark nothing.
  out.complete = want >= 1 && observed >= gen && updated >= want && ready >= want &&
                 available >= want && total == updated;
  return out;
}

}  // namespace tg::deploy
