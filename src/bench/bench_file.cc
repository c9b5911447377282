#include "bench/bench_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "bench/slo.h"
#include "common/config.h"
#include "common/file_util.h"
#include "common/json_writer.h"
#include "common/strings.h"

namespace tg::bench {

using common::Result;
using common::Status;

namespace {

// A plain scalar that YAML or strtod reads as a number JSON cannot hold: YAML's .nan / .inf, and
// anything strtod takes to NaN, infinity or past the double range (1e999).
bool NonFiniteNumber(const std::string& s) {
  const std::string lower = common::Lower(s);
  const std::string_view v = lower.starts_with('+') || lower.starts_with('-')
                                 ? std::string_view(lower).substr(1)
                                 : std::string_view(lower);
  if (v == ".nan" || v == ".inf") return true;
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return false;  // not a number at all: a string
  return !std::isfinite(d) || (errno == ERANGE && std::fabs(d) == HUGE_VAL);
}

// Every number of the body is finite, before any request is built: JSON has no NaN or infinity,
// and the run would otherwise start and fail on the server (or send null).
Status CheckBodyNumbers(const YAML::Node& node, const std::string& path, const std::string& field) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      TG_RETURN_IF_ERROR(CheckBodyNumbers(kv.second, path, field + "." + kv.first.Scalar()));
    }
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      TG_RETURN_IF_ERROR(CheckBodyNumbers(node[i], path, fmt::format("{}[{}]", field, i)));
    }
  } else if (node.IsScalar() && node.Tag() != "!" && NonFiniteNumber(node.Scalar())) {
    return Status::InvalidArg(fmt::format(
        "{}: field {}: found {}; required a finite number (a JSON request body has no NaN or "
        "infinity; quote it to send a string)",
        common::YamlWhere(node, path), field, node.Scalar()));
  }
  return Status::Ok();
}

}  // namespace

Result<BenchFile> ParseBenchFile(const std::string& text, const std::string& path) {
  TG_ASSIGN_OR_RETURN(YAML::Node root, common::ParseYaml(text, path));
  BenchFile f;
  if (root.IsNull()) return f;  // an empty file: nothing set
  TG_ASSIGN_OR_RETURN(common::YamlMap map, common::YamlMap::From(root, path, ""));
  TG_ASSIGN_OR_RETURN(YAML::Node slo, map.GetSequence("slo"));
  for (std::size_t i = 0; slo.IsSequence() && i < slo.size(); ++i) {
    if (!slo[i].IsScalar()) {
      return Status::InvalidArg(
          fmt::format("{}: field slo[{}]: expected a string like \"p95<8s\", "
                      "found {}",
                      common::YamlWhere(slo[i], path), i, common::YamlDescribe(slo[i])));
    }
    f.slos.push_back(slo[i].as<std::string>());
  }
  if (auto parsed = ParseThresholds(f.slos); !parsed.ok()) {
    return Status::InvalidArg(
        fmt::format("{}: field slo: {}", common::YamlWhere(slo, path), parsed.status().message()));
  }
  TG_RETURN_IF_ERROR(map.Get("api", &f.api));
  if (f.api && *f.api != "openai" && *f.api != "kserve" && *f.api != "get") {
    return map.FieldError("api", "openai, kserve or get");
  }
  TG_RETURN_IF_ERROR(map.Get("model", &f.model));
  if (f.model && f.model->empty()) return map.FieldError("model", "a model name");
  TG_ASSIGN_OR_RETURN(std::optional<common::YamlMap> body, map.GetMap("body"));
  if (body) {
    TG_RETURN_IF_ERROR(CheckBodyNumbers(body->node(), path, "body"));
    f.body = common::WriteJson(common::YamlToJson(body->node()), -1, common::JsonNotice::kNone);
  }
  TG_RETURN_IF_ERROR(map.Finish());
  return f;
}

Result<BenchFile> LoadBenchFile(const std::string& path) {
  TG_ASSIGN_OR_RETURN(std::string text, common::ReadFileLimited(path, common::kMaxConfigBytes));
  return ParseBenchFile(text, path);
}

}  // namespace tg::bench
