// YAML helpers shared by the Kubernetes audit and the kustomize reader: read-only accessors over
// yaml-cpp nodes (a const operator[] on a scalar throws, so fields are only read through these),
// and the bound that keeps a manifest's work proportional to its size.
//
// Why a bound: yaml-cpp resolves an alias to the anchored node itself, so `&a [*a]` is a cycle and
// ten levels of `[*a,*a,...]` are billions of nodes to a walker, from a few hundred bytes.
// CheckYamlBounds walks the tree once, the way every later reader would (an alias counts each time
// it is reached), and stops at the first of: a cycle, a depth limit, a node budget.
//
// Failure behaviour: CheckYamlBounds returns INVALID_ARG naming the file, the line, and which limit
// was hit. Thread safety: pure functions over their arguments.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tg::audit {

// Child of a mapping by key; an Undefined node when `n` is not a mapping or lacks the key.
YAML::Node YamlChild(const YAML::Node& n, std::string_view key);
// Defined and not null.
bool YamlPresent(const YAML::Node& n);
// The scalar's text, "" for anything else.
std::string YamlScalar(const YAML::Node& n);
// 1-based line of the node, 0 when it has no mark.
int YamlLine(const YAML::Node& n);
// What a node is, never its content (messages must not echo files that failed to parse):
// "a mapping", "a sequence", "a scalar", "null".
std::string YamlKind(const YAML::Node& n);

// Limits for one input file.
struct YamlBounds {
  std::size_t max_nodes = 0;    // node visits, aliases counted each time they are reached
  int max_depth = 64;           // nesting of mappings and sequences
  std::size_t input_bytes = 0;  // the size the budget was derived from (for messages)
};

// The budget for a text of `bytes` bytes: without aliases a YAML text has fewer nodes than bytes,
// so `bytes + 1024` visits is generous for real manifests and refuses alias bombs.
YamlBounds BoundsForText(std::size_t bytes);

// Walks `root`. `*visited` accumulates across the documents of one file (pass the same counter).
common::Status CheckYamlBounds(const YAML::Node& root, const std::string& source,
                               const YamlBounds& bounds, std::size_t* visited);

}  // namespace tg::audit
