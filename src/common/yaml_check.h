// Checking YAML on the parser's events, before any node tree exists: the checks behind ParseYaml,
// ParseYamlDocuments and ForEachYamlDocument, and for readers that take the parser's events
// themselves.
#pragma once

#include <yaml-cpp/mark.h>

#include <string>
#include <vector>

#include "common/status.h"

namespace tg::common {

// Runs the checks ParseYaml runs before it builds a tree (one document, depth, alias cycles and
// expansion, duplicate keys, the node cap, syntax) and builds nothing. Returns INVALID_ARG
// "<source>:<line>:<col>: invalid YAML: ..." exactly as ParseYaml would. Thread safety:
// reentrant.
Status CheckYamlDocument(const std::string& text, const std::string& source);

// The same checks on a multi-document stream (at most 10 000 documents; the node cap holds for
// each document), as ParseYamlDocuments and ForEachYamlDocument run them. `starts`, when given,
// receives each document's start mark. Thread safety: reentrant.
Status CheckYamlDocuments(const std::string& text, const std::string& source,
                          std::vector<YAML::Mark>* starts = nullptr);

// INVALID_ARG "<source>:<line>:<col>: invalid YAML: <what>" for a fault at `mark` (0-based).
Status YamlError(const std::string& source, const YAML::Mark& mark, const std::string& what);

}  // namespace tg::common
