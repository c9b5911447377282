// JSON and YAML helpers whose every error names the file, the line and the field.
//
// YamlMap reads typed fields out of one YAML mapping, remembers which keys were read and, on
// Finish(), rejects unknown keys (a typo in a matrix or policy file must never be silently
// ignored). Objects are cheap views over yaml-cpp nodes; not thread-safe (use one per thread).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_util.h"
#include "common/status.h"

namespace tg::common {

using Json = nlohmann::json;

// Parses JSON; on error INVALID_ARG "<source>:<line>:<col>: invalid JSON: <reason>" (never the
// file's content). Duplicate keys in an object and nesting deeper than kMaxJsonDepth are errors.
Result<Json> ParseJson(const std::string& text, const std::string& source);
// Reads `path` with ReadFileLimited (its NOT_FOUND and INVALID_ARG cases, `max_bytes` the cap)
// and parses it as ParseJson does.
Result<Json> LoadJsonFile(const std::string& path, std::uint64_t max_bytes = kMaxConfigBytes);

// Limits every YAML input is held to (checked on the parser's events before a node tree exists;
// the error names the limit that was hit, with line and column).
inline constexpr int kMaxYamlDepth = 64;                     // nesting, through aliases
inline constexpr std::uint64_t kMaxYamlAliasNodes = 100000;  // nodes added by expanding aliases
// JSON: nesting depth limit (the parser is iterative, but printing and walking are not).
inline constexpr int kMaxJsonDepth = 128;

// Parses one YAML document; errors name source, line and column. Rejected (INVALID_ARG): a second
// document, a duplicate key in a mapping, an alias to a node that contains it (a cycle), nesting
// deeper than kMaxYamlDepth, aliases expanding to more than kMaxYamlAliasNodes nodes.
Result<YAML::Node> ParseYaml(const std::string& text, const std::string& source);
// Parses every document of a multi-document YAML stream (Kubernetes manifests); the same checks
// as ParseYaml except the document count.
Result<std::vector<YAML::Node>> ParseYamlDocuments(const std::string& text,
                                                   const std::string& source);
// Reads a YAML file as LoadJsonFile reads JSON (the same codes), then parses it as ParseYaml.
Result<YAML::Node> LoadYamlFile(const std::string& path, std::uint64_t max_bytes = kMaxConfigBytes);

// "<source>:<line>:<col>" of a node (1-based), or "<source>" when the node has no mark.
std::string YamlWhere(const YAML::Node& node, const std::string& source);
// Short description of what a node is, for "found ..." messages: "a sequence", "'abc'", "null".
std::string YamlDescribe(const YAML::Node& node);
// Converts a YAML tree to JSON (scalars stay strings unless they parse as bool/int/float).
Json YamlToJson(const YAML::Node& node);

class YamlMap {
 public:
  // `node` must be a mapping (else INVALID_ARG naming `path`). `path` is the dotted field path of
  // this mapping ("" for the document root); `source` is the file name used in messages.
  static Result<YamlMap> From(const YAML::Node& node, std::string source, std::string path);

  // Whether the mapping has `key` (does not mark it read).
  bool Has(std::string_view key) const;
  // The wrapped node and the file name of messages; valid while this YamlMap lives.
  const YAML::Node& node() const { return node_; }
  const std::string& source() const { return source_; }
  // Dotted path of a child field: "cuda.runtime".
  std::string FieldPath(std::string_view key) const;

  // Typed getters. If the key is absent: required -> INVALID_ARG "missing required field";
  // optional -> *out untouched, OK. A present key of the wrong type -> INVALID_ARG naming the
  // field, what was expected and what was found, with line and column.
  Status Get(std::string_view key, std::string* out, bool required = false);
  Status Get(std::string_view key, std::int64_t* out, bool required = false);
  Status Get(std::string_view key, int* out, bool required = false);
  Status Get(std::string_view key, double* out, bool required = false);
  Status Get(std::string_view key, bool* out, bool required = false);
  Status Get(std::string_view key, std::vector<std::string>* out, bool required = false);
  Status Get(std::string_view key, std::optional<std::string>* out);
  Status Get(std::string_view key, std::optional<std::int64_t>* out);
  Status Get(std::string_view key, std::optional<double>* out);
  Status Get(std::string_view key, std::optional<bool>* out);
  // String-to-string mapping (provider options and the like); values must be scalars.
  Status Get(std::string_view key, std::map<std::string, std::string>* out, bool required = false);
  // Child mapping. Absent and optional -> empty optional.
  Result<std::optional<YamlMap>> GetMap(std::string_view key, bool required = false);
  // Child sequence node (validated to be a sequence); absent and optional -> Null node.
  Result<YAML::Node> GetSequence(std::string_view key, bool required = false);

  // Error for a field whose value is well-typed but not acceptable.
  Status FieldError(std::string_view key, std::string_view expected) const;
  // INVALID_ARG listing the first unknown key, where it is and which keys are allowed.
  Status Finish() const;

 private:
  YamlMap(YAML::Node node, std::string source, std::string path)
      : node_(std::move(node)), source_(std::move(source)), path_(std::move(path)) {}
  Result<YAML::Node> Lookup(std::string_view key, bool required, bool* present);
  Status TypeError(const YAML::Node& value, std::string_view key, std::string_view expected) const;

  YAML::Node node_;
  std::string source_;
  std::string path_;
  std::set<std::string, std::less<>> seen_;
};

}  // namespace tg::common
