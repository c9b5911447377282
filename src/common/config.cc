#include "common/config.h"
#include "common/json_limits.h"
#include "common/yaml_check.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <iterator>
#include <set>
#include <sstream>

namespace tg::common {
namespace {

std::string Quote(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 80)) out.push_back(c);
  if (s.size() > 80) out += "...";
  out += "'";
  return out;
}

bool ParseInt(const std::string& s, std::int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool ParseDouble(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  *out = v;
  return true;
}

bool ParseBool(const std::string& s, bool* out) {
  if (s == "true" || s == "True" || s == "TRUE" || s == "yes" || s == "on") {
    *out = true;
    return true;
  }
  if (s == "false" || s == "False" || s == "FALSE" || s == "no" || s == "off") {
    *out = false;
    return true;
  }
  return false;
}

}  // namespace

Result<Json> ParseJson(const std::string& text, const std::string& source) {
  return ParseJson(text, source, JsonLimits{});
}

Result<Json> LoadJsonFile(const std::string& path, std::uint64_t max_bytes) {
  return LoadJsonFile(path, max_bytes, JsonLimits{});
}

Result<YAML::Node> ParseYaml(const std::string& text, const std::string& source) {
  TG_RETURN_IF_ERROR(CheckYamlDocument(text, source));
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArg(source + ":" + std::to_string(e.mark.line + 1) + ":" +
                              std::to_string(e.mark.column + 1) + ": invalid YAML: " + e.msg);
  }
}

Result<std::vector<YAML::Node>> ParseYamlDocuments(const std::string& text,
                                                   const std::string& source) {
  TG_RETURN_IF_ERROR(CheckYamlDocuments(text, source));
  try {
    return YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArg(source + ":" + std::to_string(e.mark.line + 1) + ":" +
                              std::to_string(e.mark.column + 1) + ": invalid YAML: " + e.msg);
  }
}

Result<YAML::Node> LoadYamlFile(const std::string& path, std::uint64_t max_bytes) {
  TG_ASSIGN_OR_RETURN(std::string text, ReadFileLimited(path, max_bytes));
  return ParseYaml(text, path);
}

std::string YamlWhere(const YAML::Node& node, const std::string& source) {
  YAML::Mark m = node.Mark();
  if (m.is_null()) return source;
  return source + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

std::string YamlDescribe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsSequence()) return "a sequence";
  if (node.IsMap()) return "a mapping";
  return Quote(node.Scalar());
}

Json YamlToJson(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return nullptr;
  if (node.IsSequence()) {
    Json arr = Json::array();
    for (const auto& n : node) arr.push_back(YamlToJson(n));
    return arr;
  }
  if (node.IsMap()) {
    Json obj = Json::object();
    for (const auto& kv : node) obj[kv.first.Scalar()] = YamlToJson(kv.second);
    return obj;
  }
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return s;  // explicitly quoted scalar stays a string
  std::int64_t i;
  double d;
  bool b;
  if (ParseInt(s, &i)) return i;
  if (ParseDouble(s, &d)) return d;
  if (ParseBool(s, &b)) return b;
  return s;
}

Result<YamlMap> YamlMap::From(const YAML::Node& node, std::string source, std::string path) {
  if (!node.IsDefined() || !node.IsMap()) {
    if (path.empty()) {
      // The document root: a file that is not the expected kind at all (say /etc/passwd) is
      // named, never quoted.
      const char* what = !node.IsDefined() || node.IsNull() ? "an empty document"
                         : node.IsSequence()                ? "a sequence"
                                                            : "plain text";
      return Status::InvalidArg(YamlWhere(node, source) +
                                ": document root: expected a mapping, found " + what);
    }
    return Status::InvalidArg(YamlWhere(node, source) + ": field '" + path +
                              "': expected a mapping, found " + YamlDescribe(node));
  }
  return YamlMap(node, std::move(source), std::move(path));
}

bool YamlMap::Has(std::string_view key) const { return node_[std::string(key)].IsDefined(); }

std::string YamlMap::FieldPath(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

Result<YAML::Node> YamlMap::Lookup(std::string_view key, bool required, bool* present) {
  seen_.insert(std::string(key));
  YAML::Node v = node_[std::string(key)];
  *present = v.IsDefined() && !v.IsNull();
  if (!*present && required) {
    return Status::InvalidArg(YamlWhere(node_, source_) + ": missing required field '" +
                              FieldPath(key) + "'");
  }
  return v;
}

Status YamlMap::TypeError(const YAML::Node& value, std::string_view key,
                          std::string_view expected) const {
  return Status::InvalidArg(YamlWhere(value, source_) + ": field '" + FieldPath(key) +
                            "': expected " + std::string(expected) + ", found " +
                            YamlDescribe(value));
}

Status YamlMap::FieldError(std::string_view key, std::string_view expected) const {
  YAML::Node v = node_[std::string(key)];
  return TypeError(v.IsDefined() ? v : node_, key, expected);
}

Status YamlMap::Get(std::string_view key, std::string* out, bool required) {
  bool present;
  TG_ASSIGN_OR_RETURN(YAML::Node v, Lookup(key, required, &present));
  if (!present) return Status::Ok();
  if (!v.IsScalar()) return TypeError(v, key, "a string");
  *out = v.Scalar();
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, std::int64_t* out, bool required) {
  bool present;
  TG_ASSIGN_OR_RETURN(YAML::Node v, Lookup(key, required, &present));
  if (!present) return Status::Ok();
  if (!v.IsScalar() || !ParseInt(v.Scalar(), out)) return TypeError(v, key, "an integer");
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, int* out, bool required) {
  std::int64_t v = *out;
  TG_RETURN_IF_ERROR(Get(key, &v, required));
  if (v < INT32_MIN || v > INT32_MAX) return FieldError(key, "an integer that fits in 32 bits");
  *out = static_cast<int>(v);
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, double* out, bool required) {
  bool present;
  TG_ASSIGN_OR_RETURN(YAML::Node v, Lookup(key, required, &present));
  if (!present) return Status::Ok();
  if (!v.IsScalar() || !ParseDouble(v.Scalar(), out)) return TypeError(v, key, "a number");
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, bool* out, bool required) {
  bool present;
  TG_ASSIGN_OR_RETURN(YAML::Node v, Lookup(key, required, &present));
  if (!present) return Status::Ok();
  if (!v.IsScalar() || !ParseBool(v.Scalar(), out)) return TypeError(v, key, "true or false");
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, std::vector<std::string>* out, bool required) {
  bool present;
  TG_ASSIGN_OR_RETURN(YAML::Node v, Lookup(key, required, &present));
  if (!present) return Status::Ok();
  if (!v.IsSequence()) return TypeError(v, key, "a list of strings");
  out->clear();
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].IsScalar()) {
      return TypeError(v[i], std::string(key) + "[" + std::to_string(i) + "]", "a string");
    }
    out->push_back(v[i].Scalar());
  }
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, std::optional<std::string>* out) {
  std::string s;
  if (!Has(key)) return Get(key, &s, false);
  TG_RETURN_IF_ERROR(Get(key, &s, false));
  if (node_[std::string(key)].IsNull()) return Status::Ok();
  *out = s;
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, std::optional<std::int64_t>* out) {
  std::int64_t v = 0;
  bool present = Has(key) && !node_[std::string(key)].IsNull();
  TG_RETURN_IF_ERROR(Get(key, &v, false));
  if (present) *out = v;
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, std::optional<double>* out) {
  double v = 0;
  bool present = Has(key) && !node_[std::string(key)].IsNull();
  TG_RETURN_IF_ERROR(Get(key, &v, false));
  if (present) *out = v;
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, std::optional<bool>* out) {
  bool v = false;
  bool present = Has(key) && !node_[std::string(key)].IsNull();
  TG_RETURN_IF_ERROR(Get(key, &v, false));
  if (present) *out = v;
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, std::map<std::string, std::string>* out, bool required) {
  bool present;
  TG_ASSIGN_OR_RETURN(YAML::Node v, Lookup(key, required, &present));
  if (!present) return Status::Ok();
  if (!v.IsMap()) return TypeError(v, key, "a mapping of names to values");
  out->clear();
  for (const auto& kv : v) {
    if (!kv.second.IsScalar()) {
      return TypeError(kv.second, std::string(key) + "." + kv.first.Scalar(), "a scalar value");
    }
    (*out)[kv.first.Scalar()] = kv.second.Scalar();
  }
  return Status::Ok();
}

Result<std::optional<YamlMap>> YamlMap::GetMap(std::string_view key, bool required) {
  bool present;
  TG_ASSIGN_OR_RETURN(YAML::Node v, Lookup(key, required, &present));
  if (!present) return std::optional<YamlMap>();
  if (!v.IsMap()) return TypeError(v, key, "a mapping");
  return std::optional<YamlMap>(YamlMap(v, source_, FieldPath(key)));
}

Result<YAML::Node> YamlMap::GetSequence(std::string_view key, bool required) {
  bool present;
  TG_ASSIGN_OR_RETURN(YAML::Node v, Lookup(key, required, &present));
  if (!present) return YAML::Node();
  if (!v.IsSequence()) return TypeError(v, key, "a list");
  return v;
}

Status YamlMap::Finish() const {
  for (const auto& kv : node_) {
    const std::string& k = kv.first.Scalar();
    if (seen_.count(k)) continue;
    std::string allowed;
    for (const auto& s : seen_) allowed += (allowed.empty() ? "" : ", ") + s;
    return Status::InvalidArg(YamlWhere(kv.first, source_) + ": unknown field '" + FieldPath(k) +
                              "'" + (allowed.empty() ? "" : " (allowed here: " + allowed + ")"));
  }
  return Status::Ok();
}

}  // namespace tg::common
