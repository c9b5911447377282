// SessionReport rendering (JSON for machines, lines for people). Kept apart from session.cc so
// the CLI, the server and the SD pipeline share one wording, including the DEGRADED label.
#include <cstdio>

#include "runtime/session.h"

namespace tg::runtime {
namespace {

common::Json TensorInfosToJson(const std::vector<TensorInfo>& infos) {
  common::Json a = common::Json::array();
  for (const auto& i : infos) {
    a.push_back({{"name", i.name}, {"dtype", DataTypeName(i.dtype)}, {"shape", i.shape}});
  }
  return a;
}

}  // namespace

common::Json SessionReportToJson(const SessionReport& r) {
  common::Json providers = common::Json::array();
  for (const auto& p : r.providers) {
    common::Json j = {
        {"name", p.name}, {"attach_path", AttachPathName(p.path)}, {"attached", p.attached}};
    if (!p.library.empty()) j["library"] = p.library;
    if (!p.device.empty()) j["device"] = p.device;
    if (!p.error.empty()) j["error"] = p.error;
    if (!p.options.empty()) j["options"] = p.options;
    providers.push_back(j);
  }
  const PlacementReport& pl = r.placement;
  common::Json placement = {{"source", pl.source},
                            {"total_nodes", pl.total_nodes},
                            {"nodes_per_provider", pl.nodes_per_provider},
                            {"cpu_nodes", pl.cpu_nodes},
                            {"cpu_shape_nodes", pl.cpu_shape_nodes},
                            {"cpu_share", pl.cpu_share},
                            {"memcpy_nodes", pl.memcpy_nodes},
                            {"cpu_compute_ops", pl.cpu_compute_ops},
                            {"violations", pl.violations},
                            {"ok", pl.ok}};
  common::Json attention = {{"verdict", r.attention.verdict},
                            {"fused_ops", r.attention.fused_ops},
                            {"fused_op_types", r.attention.fused_op_types},
                            {"unfused_chains", r.attention.unfused_chains},
                            {"fused_by_truegreen", r.attention.fused_by_truegreen},
                            {"fusion", r.attention.fusion}};
  common::Json j = {{"model", r.model_path},
                    {"profile", r.profile},
                    {"degraded", r.degraded},
                    {"ort_version", r.ort_version},
                    {"providers", providers},
                    {"gpu_active", r.gpu_active},
                    {"placement", placement},
                    {"attention", attention},
                    {"io_mode", r.io_mode},
                    {"create_ms", r.create_ms},
                    {"inputs", TensorInfosToJson(r.inputs)},
                    {"outputs", TensorInfosToJson(r.outputs)},
                    {"notes", r.notes}};
  if (r.degraded) j["degraded_reason"] = r.degraded_reason;
  if (!r.model_sha256.empty()) j["model_sha256"] = r.model_sha256;
  if (!r.engine_key.empty()) {
    j["tensorrt"] = {
        {"engine_key", r.engine_key}, {"engine_dir", r.engine_dir}, {"precision", r.precision}};
  }
  return j;
}

std::string FormatSessionReport(const SessionReport& r) {
  std::string s;
  if (r.degraded) s += "DEGRADED: " + r.degraded_reason + "\n";
  s += "model:      " + r.model_path + "\n";
  s += "profile:    " + r.profile + (r.degraded ? " (degraded)" : "") + "\n";
  s += "onnxruntime " + r.ort_version + "\n";
  for (const auto& p : r.providers) {
    s += "provider:   " + p.name + " [" + std::string(AttachPathName(p.path)) + "] " +
         (p.attached ? "attached" : "NOT attached");
    if (!p.device.empty()) s += " " + p.device;
    if (!p.error.empty()) s += ": " + p.error;
    s += "\n";
  }
  const PlacementReport& pl = r.placement;
  char share[32];
  std::snprintf(share, sizeof(share), "%.1f%%", pl.cpu_share * 100.0);
  s += "placement:  " + std::to_string(pl.total_nodes) + " nodes (source " + pl.source + ")";
  for (const auto& [p, n] : pl.nodes_per_provider) s += ", " + p + "=" + std::to_string(n);
  s += "\n            cpu share " + std::string(share) + " (shape ops excluded; " +
       std::to_string(pl.cpu_shape_nodes) + " shape nodes on CPU), memcpy nodes " +
       std::to_string(pl.memcpy_nodes) + "\n";
  if (!pl.cpu_compute_ops.empty()) {
    s += "            compute ops on CPU:";
    for (const auto& op : pl.cpu_compute_ops) s += " " + op;
    s += "\n";
  }
  // Violations are fatal only when enforced (production); dev reports them as advisories.
  for (const auto& v : pl.violations) s += (pl.ok ? "advisory:   " : "VIOLATION:  ") + v + "\n";
  s += "attention:  " + r.attention.verdict + " (fused ops " +
       std::to_string(r.attention.fused_ops) + ", unfused MatMul-Softmax-MatMul chains " +
       std::to_string(r.attention.unfused_chains) +
       (r.attention.fused_by_truegreen > 0
            ? "; fused by truegreen " + std::to_string(r.attention.fused_by_truegreen)
            : std::string()) +
       ")\n";
  if (!r.attention.fusion.empty()) s += "            " + r.attention.fusion + "\n";
  s += "io:         " + r.io_mode + "\n";
  if (!r.engine_key.empty()) {
    s += "tensorrt:   engine key " + r.engine_key + " (" + r.precision + ") in " + r.engine_dir +
         "\n";
  }
  for (const auto& n : r.notes) s += "note:       " + n + "\n";
  return s;
}

}  // namespace tg::runtime
