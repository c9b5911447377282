// Strategic merge and JSON 6902 over yaml-cpp trees. The patch trees are already bounded
// (CheckYamlBounds) and the targets are private clones, so recursion depth is bounded by the
// patch's depth (at most YamlBounds::max_depth).
#include <fmt/format.h>

#include <charconv>
#include <vector>

#include "audit/k8s/k8s_yaml.h"
#include "audit/k8s/kustomize.h"

namespace tg::audit {
namespace {

using common::Result;
using common::Status;

// A copy of `n` without `$patch` and `$setElementOrder/...` keys (at every level).
YAML::Node StripDirectives(const YAML::Node& n) {
  if (n.IsMap()) {
    YAML::Node out(YAML::NodeType::Map);
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string k = YamlScalar(it->first);
      if (k == "$patch" || k.rfind("$setElementOrder/", 0) == 0) continue;
      out[YAML::Clone(it->first)] = StripDirectives(it->second);
    }
    return out;
  }
  if (n.IsSequence()) {
    YAML::Node out(YAML::NodeType::Sequence);
    for (const auto& e : n) out.push_back(StripDirectives(e));
    return out;
  }
  return YAML::Clone(n);
}

const char* MergeKey(const YAML::Node& element) {
  for (const char* k : {"name", "containerPort", "mountPath", "devicePath", "ip", "topologyKey"}) {
    if (YamlPresent(YamlChild(element, k))) return k;
  }
  return nullptr;
}

Status MergeList(YAML::Node target, const YAML::Node& patch, const std::string& where) {
  // {$patch: replace} inside a list replaces the whole list with the other elements.
  for (const auto& p : patch) {
    if (p.IsMap() && YamlScalar(YamlChild(p, "$patch")) == "replace") {
      YAML::Node out(YAML::NodeType::Sequence);
      for (const auto& q : patch) {
        if (!(q.IsMap() && YAML::Node(YamlChild(q, "$patch")).IsDefined())) {
          out.push_back(StripDirectives(q));
        }
      }
      target = out;  // in-place: rewrites the list node itself
      return Status::Ok();
    }
  }
  for (const auto& p : patch) {
    const char* key = p.IsMap() ? MergeKey(p) : nullptr;
    if (key == nullptr) {
      return Status::InvalidArg(fmt::format(
          "{}: line {}: a list element without a merge key (name, containerPort, mountPath) in a "
          "strategic-merge patch of a list of mappings",
          where, YamlLine(p)));
    }
    std::string value = YamlScalar(YamlChild(p, key));
    std::size_t found = target.size();
    for (std::size_t i = 0; i < target.size(); ++i) {
      if (YamlScalar(YamlChild(target[i], key)) == value) {
        found = i;
        break;
      }
    }
    bool del = YamlScalar(YamlChild(p, "$patch")) == "delete";
    if (del) {
      if (found < target.size()) target.remove(found);
      continue;
    }
    if (found < target.size()) {
      TG_RETURN_IF_ERROR(StrategicMerge(target[found], p, where));
    } else {
      target.push_back(StripDirectives(p));
    }
  }
  return Status::Ok();
}

std::string Unescape(std::string_view tok) {
  std::string out;
  for (std::size_t i = 0; i < tok.size(); ++i) {
    if (tok[i] == '~' && i + 1 < tok.size() && (tok[i + 1] == '0' || tok[i + 1] == '1')) {
      out.push_back(tok[i + 1] == '0' ? '~' : '/');
      ++i;
    } else {
      out.push_back(tok[i]);
    }
  }
  return out;
}

bool Index(const std::string& tok, std::size_t limit, std::size_t* out) {
  auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), *out);
  return ec == std::errc() && p == tok.data() + tok.size() && !tok.empty() && *out <= limit;
}

// Resolves all but the last token of `path`; `*parent` is rebound (reset), never assigned.
Status Resolve(const YAML::Node& root, const std::string& path, YAML::Node* parent,
               std::string* last, const std::string& where) {
  if (path.empty() || path[0] != '/') {
    return Status::InvalidArg(
        fmt::format("{}: JSON patch path '{}' must start with '/'", where, path));
  }
  std::vector<std::string> toks;
  std::size_t pos = 1;
  while (true) {
    std::size_t slash = path.find('/', pos);
    toks.push_back(Unescape(std::string_view(path).substr(
        pos, slash == std::string::npos ? std::string::npos : slash - pos)));
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  *last = toks.back();
  toks.pop_back();
  parent->reset(root);
  for (const auto& t : toks) {
    YAML::Node next;
    std::size_t i = 0;
    if (parent->IsMap()) {
      next.reset(YamlChild(*parent, t));
    } else if (parent->IsSequence() && Index(t, parent->size() - 1, &i) && parent->size() > 0) {
      next.reset((*parent)[i]);
    }
    if (!next.IsDefined()) {
      return Status::InvalidArg(
          fmt::format("{}: JSON patch path '{}': '{}' does not exist", where, path, t));
    }
    parent->reset(next);
  }
  return Status::Ok();
}

Status AddAt(YAML::Node parent, const std::string& last, const YAML::Node& value, bool replace,
             const std::string& path, const std::string& where) {
  if (parent.IsMap()) {
    if (replace && !YamlChild(parent, last).IsDefined()) {
      return Status::InvalidArg(
          fmt::format("{}: JSON patch replace: '{}' does not exist", where, path));
    }
    parent[last] = YAML::Clone(value);
    return Status::Ok();
  }
  if (!parent.IsSequence()) {
    return Status::InvalidArg(
        fmt::format("{}: JSON patch path '{}': the parent is {}", where, path, YamlKind(parent)));
  }
  if (last == "-" && !replace) {
    parent.push_back(YAML::Clone(value));
    return Status::Ok();
  }
  std::size_t i = 0;
  if (!Index(last, parent.size() - (replace ? 1 : 0), &i) || (replace && parent.size() == 0)) {
    return Status::InvalidArg(fmt::format("{}: JSON patch path '{}': bad index", where, path));
  }
  if (replace) {
    parent[i] = YAML::Clone(value);
    return Status::Ok();
  }
  YAML::Node out(YAML::NodeType::Sequence);
  for (std::size_t j = 0; j <= parent.size(); ++j) {
    if (j == i) out.push_back(YAML::Clone(value));
    if (j < parent.size()) out.push_back(parent[j]);
  }
  parent = out;  // in-place
  return Status::Ok();
}

Result<YAML::Node> RemoveAt(YAML::Node parent, const std::string& last, const std::string& path,
                            const std::string& where) {
  YAML::Node old;
  std::size_t i = 0;
  if (parent.IsMap() && YamlChild(parent, last).IsDefined()) {
    old.reset(YAML::Clone(YamlChild(parent, last)));
    parent.remove(last);
    return old;
  }
  if (parent.IsSequence() && parent.size() > 0 && Index(last, parent.size() - 1, &i)) {
    old.reset(YAML::Clone(parent[i]));
    parent.remove(i);
    return old;
  }
  return Status::InvalidArg(fmt::format("{}: JSON patch remove: '{}' does not exist", where, path));
}

}  // namespace

Status StrategicMerge(YAML::Node target, const YAML::Node& patch, const std::string& where) {
  if (!target.IsMap() || !patch.IsMap()) {
    return Status::InvalidArg(fmt::format("{}: a strategic-merge patch must be a mapping", where));
  }
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    std::string k = YamlScalar(it->first);
    // A copy: yaml-cpp's iterator hands out a temporary pair, so a reference would dangle.
    const YAML::Node v = it->second;
    if (k == "$patch" || k.rfind("$setElementOrder/", 0) == 0) continue;
    if (!k.empty() && k[0] == '$') {
      return Status::InvalidArg(fmt::format(
          "{}: line {}: strategic-merge directive '{}' is not supported; render with `kubectl "
          "kustomize DIR | truegreen audit k8s -`",
          where, YamlLine(it->first), k));
    }
    YAML::Node tv = YamlChild(target, k);
    if (!YamlPresent(v)) {
      if (tv.IsDefined()) target.remove(k);
      continue;
    }
    std::string directive = YamlScalar(YamlChild(v, "$patch"));
    if (v.IsMap() && directive == "delete") {
      if (tv.IsDefined()) target.remove(k);
    } else if (v.IsMap() && tv.IsMap() && directive != "replace") {
      TG_RETURN_IF_ERROR(StrategicMerge(tv, v, where));
    } else if (v.IsSequence() && tv.IsSequence() && v.size() > 0 && v[0].IsMap()) {
      TG_RETURN_IF_ERROR(MergeList(tv, v, where));
    } else {
      target[k] = StripDirectives(v);
    }
  }
  return Status::Ok();
}

Status ApplyJson6902(YAML::Node& target, const YAML::Node& ops, const std::string& where) {
  if (!ops.IsSequence()) {
    return Status::InvalidArg(
        fmt::format("{}: a JSON 6902 patch must be a list of operations", where));
  }
  for (const auto& op : ops) {
    std::string name = YamlScalar(YamlChild(op, "op"));
    std::string path = YamlScalar(YamlChild(op, "path"));
    std::string here = fmt::format("{} (line {})", where, YamlLine(op));
    YAML::Node parent;
    std::string last;
    TG_RETURN_IF_ERROR(Resolve(target, path, &parent, &last, here));
    YAML::Node value = YamlChild(op, "value");
    if (name == "add" || name == "replace") {
      if (!value.IsDefined()) return Status::InvalidArg(here + ": '" + name + "' needs 'value'");
      TG_RETURN_IF_ERROR(AddAt(parent, last, value, name == "replace", path, here));
    } else if (name == "remove") {
      TG_RETURN_IF_ERROR(RemoveAt(parent, last, path, here).status());
    } else if (name == "move" || name == "copy") {
      std::string from = YamlScalar(YamlChild(op, "from"));
      YAML::Node fparent;
      std::string flast;
      TG_RETURN_IF_ERROR(Resolve(target, from, &fparent, &flast, here));
      YAML::Node moved;
      if (name == "move") {
        TG_ASSIGN_OR_RETURN(moved, RemoveAt(fparent, flast, from, here));
      } else {
        std::size_t i = 0;
        moved.reset(
            fparent.IsMap() ? YamlChild(fparent, flast)
            : (fparent.IsSequence() && fparent.size() > 0 && Index(flast, fparent.size() - 1, &i))
                ? fparent[i]
                : YAML::Node(YAML::NodeType::Undefined));
        if (!moved.IsDefined()) return Status::InvalidArg(here + ": copy: 'from' does not exist");
      }
      TG_RETURN_IF_ERROR(Resolve(target, path, &parent, &last, here));
      TG_RETURN_IF_ERROR(AddAt(parent, last, moved, false, path, here));
    } else if (name == "test") {
      YAML::Node cur = parent.IsMap() ? YamlChild(parent, last) : YAML::Node();
      if (!cur.IsDefined() || YAML::Dump(cur) != YAML::Dump(value)) {
        return Status::InvalidArg(here + ": JSON patch test failed at '" + path + "'");
      }
    } else {
      return Status::InvalidArg(
          fmt::format("{}: JSON patch op '{}' (expected add, remove, replace, move, copy or test)",
                      here, name));
    }
  }
  return Status::Ok();
}

}  // namespace tg::audit
