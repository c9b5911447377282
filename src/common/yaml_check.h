// Checking a one-document YAML text without building its node tree, for readers that take the
// parser's events themselves.
#pragma once

#include <string>

#include "common/status.h"

namespace tg::common {

// Runs the checks ParseYaml runs before it builds a tree (one document, depth, alias cycles and
// expansion, duplicate keys, the node cap, syntax) and builds nothing. Returns INVALID_ARG
// "<source>:<line>:<col>: invalid YAML: ..." exactly as ParseYaml would. Thread safety:
// reentrant.
Status CheckYamlDocument(const std::string& text, const std::string& source);

}  // namespace tg::common
