// Rendering with a real kustomize. The command is run without a shell (argv split on spaces),
// with a time limit and an output cap, and its YAML is bounded like any manifest before a rule
// walks it.
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include <unistd.h>

#include "audit/k8s/k8s_yaml.h"
#include "audit/k8s/kustomize.h"
#include "common/config.h"
#include "common/file_util.h"
#include "common/process.h"
#include "common/strings.h"

namespace tg::audit {
namespace {

namespace fs = std::filesystem;
using common::Status;

}  // namespace

std::string FindOnPath(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    std::error_code ec;
    return fs::is_regular_file(program, ec) && access(program.c_str(), X_OK) == 0 ? program : "";
  }
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  for (const std::string& dir : common::Split(path, ':', common::SplitMode::kSkipEmpty)) {
    fs::path p = fs::path(dir) / program;
    std::error_code ec;
    if (fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

std::string FindKustomizeCommand() {
  if (!FindOnPath("kubectl").empty()) return "kubectl kustomize";
  if (!FindOnPath("kustomize").empty()) return "kustomize build";
  return "";
}

Status RenderWithKustomize(const std::string& command, const std::string& dir,
                           std::vector<KustomizeObject>* out) {
  std::vector<std::string> argv = common::SplitWords(command);
  if (argv.empty()) return Status::InvalidArg("--kustomize: empty command");
  std::string exe = FindOnPath(argv[0]);
  if (exe.empty()) {
    return Status::InvalidArg(fmt::format(
        "--kustomize '{}': '{}' is not an executable on PATH; give the command (e.g. 'kubectl "
        "kustomize' or 'kustomize build') or --kustomize builtin",
        command, argv[0]));
  }
  argv[0] = exe;
  argv.push_back(dir);
  common::ProcessOptions po;
  po.timeout = std::chrono::milliseconds(120000);
  po.max_output_bytes = common::kMaxConfigBytes;
  common::ProcessResult r = common::RunProcess(argv, po);
  if (!r.started) {
    return Status::InvalidArg(fmt::format("{} {}: could not start: {}", command, dir, r.error));
  }
  if (r.timed_out) {
    return Status::InvalidArg(fmt::format("{} {}: no answer in 120 s", command, dir));
  }
  if (r.exit_code != 0) {
    std::string err = r.err.substr(0, 2000);
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    return Status::InvalidArg(
        fmt::format("{} {} failed (exit {}): {}", command, dir, r.exit_code, err));
  }
  if (r.truncated) {
    return Status::InvalidArg(
        fmt::format("{} {}: output over {} bytes", command, dir, common::kMaxConfigBytes));
  }
  std::string source = fmt::format("{} ({})", dir, command);
  TG_ASSIGN_OR_RETURN(std::vector<YAML::Node> docs, common::ParseYamlDocuments(r.out, source));
  std::size_t visited = 0;
  YamlBounds bounds = BoundsForText(r.out.size());
  int index = 0;
  for (const YAML::Node& d : docs) {
    ++index;
    TG_RETURN_IF_ERROR(CheckYamlBounds(d, source, bounds, &visited));
    if (!d.IsDefined() || d.IsNull()) continue;
    out->push_back({d, source, index});
  }
  return Status::Ok();
}

}  // namespace tg::audit
