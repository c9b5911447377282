#include "bench/bench_file.h"

#include <fmt/format.h>

#include "bench/slo.h"
#include "common/config.h"
#include "common/file_util.h"
#include "common/json_writer.h"

namespace tg::bench {

using common::Result;
using common::Status;

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
  if (body)
    f.body = common::WriteJson(common::YamlToJson(body->node()), -1, common::JsonNotice::kNone);
  TG_RETURN_IF_ERROR(map.Finish());
  return f;
}

Result<BenchFile> LoadBenchFile(const std::string& path) {
  TG_ASSIGN_OR_RETURN(std::string text, common::ReadFileLimited(path, common::kMaxConfigBytes));
  return ParseBenchFile(text, path);
}

}  // namespace tg::bench
