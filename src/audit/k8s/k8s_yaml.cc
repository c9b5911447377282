// The walk is recursive but never deeper than YamlBounds::max_depth (64 by default), so its stack
// use is bounded; the ancestor list makes the cycle check exact (yaml-cpp's Node::is compares
// identity) at a cost of depth comparisons per container node.
#include "audit/k8s/k8s_yaml.h"

#include <fmt/format.h>

#include <vector>

namespace tg::audit {
namespace {

using common::Status;

Status Walk(const YAML::Node& n, const std::string& source, const YamlBounds& b,
            std::size_t* visited, std::vector<YAML::Node>* ancestors) {
  if (++*visited > b.max_nodes) {
    return Status::InvalidArg(fmt::format(
        "{}:{}: expansion limit hit: YAML aliases expand this {}-byte input to more than {} "
        "nodes (the limit is one node per input byte plus 1024; write the objects out instead "
        "of repeating them through aliases)",
        source, YamlLine(n), b.input_bytes, b.max_nodes));
  }
  if (!n.IsMap() && !n.IsSequence()) return Status::Ok();
  for (const YAML::Node& a : *ancestors) {
    if (a.is(n)) {
      return Status::InvalidArg(fmt::format(
          "{}:{}: cycle: this node contains itself through a YAML alias (line {} is inside the "
          "anchored node it refers to)",
          source, YamlLine(n), YamlLine(ancestors->back())));
    }
  }
  if (static_cast<int>(ancestors->size()) >= b.max_depth) {
    return Status::InvalidArg(
        fmt::format("{}:{}: depth limit hit: mappings and sequences nested "
                    "more than {} levels deep",
                    source, YamlLine(n), b.max_depth));
  }
  ancestors->push_back(n);
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (n.IsMap()) {
      TG_RETURN_IF_ERROR(Walk(it->first, source, b, visited, ancestors));
      TG_RETURN_IF_ERROR(Walk(it->second, source, b, visited, ancestors));
    } else {
      TG_RETURN_IF_ERROR(Walk(*it, source, b, visited, ancestors));
    }
  }
  ancestors->pop_back();
  return Status::Ok();
}

}  // namespace

YAML::Node YamlChild(const YAML::Node& n, std::string_view key) {
  if (n.IsDefined() && n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == key) return it->second;
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

bool YamlPresent(const YAML::Node& n) { return n.IsDefined() && !n.IsNull(); }

std::string YamlScalar(const YAML::Node& n) {
  return n.IsDefined() && n.IsScalar() ? n.Scalar() : "";
}

int YamlLine(const YAML::Node& n) {
  if (!n.IsDefined()) return 0;
  YAML::Mark m = n.Mark();
  return m.is_null() ? 0 : m.line + 1;
}

std::string YamlKind(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "null";
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a sequence";
  return "a scalar";
}

YamlBounds BoundsForText(std::size_t bytes) {
  YamlBounds b;
  b.max_nodes = bytes + 1024;
  b.input_bytes = bytes;
  return b;
}

Status CheckYamlBounds(const YAML::Node& root, const std::string& source, const YamlBounds& bounds,
                       std::size_t* visited) {
  std::vector<YAML::Node> ancestors;
  try {
    return Walk(root, source, bounds, visited, &ancestors);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArg(fmt::format("{}:{}: {}", source, e.mark.line + 1, e.msg));
  }
}

}  // namespace tg::audit
