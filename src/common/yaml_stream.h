// Reading a multi-document YAML stream (a Kubernetes manifest file) without holding every
// document's node tree at once.
//
// yaml-cpp's LoadAll builds the trees of all documents together, at a few hundred bytes per node:
// a few MB of manifests cost tens of times their size. ForEachYamlDocument parses the stream in
// batches of whole documents instead, so only one batch's trees are alive at a time, while every
// node keeps the line and column it has in the whole text.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <functional>
#include <string>

#include "common/status.h"

namespace tg::common {

// Called once per document of the stream, in order, with its 1-based index (empty documents
// included; such a document is a Null or Undefined node). A non-OK status stops the walk.
using YamlDocumentVisitor = std::function<Status(const YAML::Node& document, int index)>;

// Runs the checks of ParseYamlDocuments on `text` (the same errors, with the same file, line and
// column, before any node is built), then calls `visit` for every document in order. Node marks
// are positions in `text`, exactly as ParseYamlDocuments gives them. A batch holds whole documents
// of about `batch_bytes` (0: a sixteenth of the text, at least 256 KiB); a node passed to `visit`
// stays valid after the call (yaml-cpp nodes share ownership of their batch). Returns the first
// failure: INVALID_ARG from the checks or the parser, or whatever `visit` returned. Thread safety:
// reentrant; `text` must not change during the call.
Status ForEachYamlDocument(const std::string& text, const std::string& source,
                           const YamlDocumentVisitor& visit, std::size_t batch_bytes = 0);

}  // namespace tg::common
