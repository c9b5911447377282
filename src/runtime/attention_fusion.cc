#include "runtime/attention_fusion.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "common/config.h"
#include "common/file_util.h"
#include "common/json_writer.h"
#include "runtime/onnx_graph.h"
#include "runtime/onnx_model.h"

namespace tg::runtime {

using common::Result;
using common::Status;

Result<std::string> FusionCacheKey(const std::string& model_path,
                                   const std::string& runtime_version) {
  auto sha = common::Sha256File(model_path);
  if (!sha.ok()) return sha.status();
  std::string text = std::string(kAttentionRewriteVersion) + "\nonnxruntime " + runtime_version +
                     "\nmodel " + *sha + "\n";
  auto graph = ReadOnnxGraph(model_path);
  if (graph.ok()) {
    const auto folder = std::filesystem::path(model_path).parent_path();
    std::set<std::string> files;
    for (const auto& e : graph->external_data) {
      for (const auto& [k, v] : e.entries) {
        if (k == "location") files.insert(v);
      }
    }
    for (const auto& f : files) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(folder / f, ec);
      text += "external " + f + " " + (ec ? std::string("?") : std::to_string(size)) + "\n";
    }
  }
  return common::Sha256Hex(text.data(), text.size());
}

namespace {

// The cached verdict for `plan`'s key, when there is one: fills plan and returns true.
bool ReadCachedVerdict(FusionPlan* plan) {
  std::error_code ec;
  if (plan->verdict_file.empty() || !std::filesystem::is_regular_file(plan->verdict_file, ec)) {
    return false;
  }
  auto j = common::LoadJsonFile(plan->verdict_file, 1 << 20);
  if (!j.ok() || !j->is_object() || j->value("key", "") != plan->key) return false;
  plan->chains = j->value("chains", 0);
  plan->rewritten = j->value("rewritten", 0);
  if (!j->value("passed", false)) {
    plan->kept_reason = "kept the original (cached verdict " + plan->verdict_file +
                        "): " + j->value("detail", std::string("check failed"));
    return true;
  }
  auto bytes = common::ReadFileLimited(plan->model_file, (std::uint64_t{1} << 31) - 1);
  if (!bytes.ok()) return false;  // verdict without its model: rewrite again
  plan->bytes = std::move(bytes).value();
  plan->checked = true;
  return true;
}

}  // namespace

FusionPlan PlanAttentionFusion(const std::string& model_path, const std::string& runtime_version,
                               const std::string& cache_dir,
                               const std::function<void(OnnxModel&)>& after_rewrite) {
  FusionPlan plan;
  auto key = FusionCacheKey(model_path, runtime_version);
  if (!key.ok()) {
    plan.kept_reason = "not rewritten: " + key.status().message();
    return plan;
  }
  plan.key = *key;
  if (!cache_dir.empty()) {
    plan.verdict_file = cache_dir + "/fused-attention-" + plan.key + ".json";
    plan.model_file = cache_dir + "/fused-attention-" + plan.key + ".onnx";
    if (ReadCachedVerdict(&plan)) return plan;
  }
  auto model = OnnxModel::Load(model_path);
  if (!model.ok()) {
    plan.kept_reason = "not rewritten: " + model.status().message();
    return plan;
  }
  auto rep = RewriteAttention(&*model);
  if (!rep.ok()) {
    plan.kept_reason = "not rewritten: " + rep.status().message();
    return plan;
  }
  plan.chains = rep->chains;
  plan.rewritten = rep->rewritten;
  plan.skipped = rep->skipped;
  if (rep->rewritten == 0) {
    plan.kept_reason = "not rewritten: no chain in a handled form" +
                       (rep->skipped.empty() ? std::string() : " (" + rep->skipped.front() + ")");
    return plan;
  }
  if (after_rewrite) after_rewrite(*model);
  auto bytes = model->Serialize();
  if (!bytes.ok()) {
    plan.kept_reason = "not rewritten: " + bytes.status().message();
    return plan;
  }
  plan.bytes = std::move(bytes).value();
  return plan;
}

void RecordFusionVerdict(const FusionPlan& plan, bool passed, const std::string& detail) {
  if (plan.verdict_file.empty()) return;
  if (passed) {
    const Status m = common::WriteFileAtomic(plan.model_file, plan.bytes, true);
    if (!m.ok()) {
      spdlog::warn("attention rewrite: cannot cache {}: {}", plan.model_file, m.message());
      return;
    }
  }
  const common::Json j = {{"key", plan.key},       {"rewrite", kAttentionRewriteVersion},
                          {"passed", passed},      {"detail", detail},
                          {"chains", plan.chains}, {"rewritten", plan.rewritten}};
  const Status s = common::WriteFileAtomic(plan.verdict_file, common::WriteJson(j, 2) + "\n", true);
  if (!s.ok())
    spdlog::warn("attention rewrite: cannot cache {}: {}", plan.verdict_file, s.message());
}

double FusionTolerance(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ? 2e-2 : 1e-3;
}

Status CompareFusedOutputs(const std::vector<std::string>& names,
                           const std::vector<Tensor>& original, const std::vector<Tensor>& fused,
                           double* max_error) {
  *max_error = 0.0;
  if (original.size() != fused.size()) {
    return Status::Unsupported(std::to_string(fused.size()) + " outputs, the original has " +
                               std::to_string(original.size()));
  }
  for (std::size_t i = 0; i < original.size(); ++i) {
    const std::string name = i < names.size() ? names[i] : "output " + std::to_string(i);
    if (original[i].shape() != fused[i].shape() || original[i].dtype() != fused[i].dtype()) {
      return Status::Unsupported("output '" + name + "' is " + ShapeToString(fused[i].shape()) +
                                 ", the original's " + ShapeToString(original[i].shape()));
    }
    const std::vector<float> a = original[i].ToFloatVector();
    const std::vector<float> b = fused[i].ToFloatVector();
    double peak = 1.0;
    for (float x : a)
      peak = std::isfinite(x) ? std::max(peak, std::fabs(static_cast<double>(x))) : peak;
    const double bound = FusionTolerance(original[i].dtype()) * peak;
    for (std::size_t k = 0; k < a.size() && k < b.size(); ++k) {
      const double d = std::fabs(static_cast<double>(a[k]) - b[k]);
      const bool same_nonfinite = !std::isfinite(a[k]) && a[k] == b[k];
      if (same_nonfinite) continue;
      if (!(d <= bound)) {
        return Status::Unsupported("output '" + name + "' element " + std::to_string(k) +
                                   ": rewritten " + std::to_string(b[k]) + ", original " +
                                   std::to_string(a[k]) + " (allowed difference " +
                                   std::to_string(bound) + ")");
      }
      *max_error = std::max(*max_error, d);
    }
  }
  return Status::Ok();
}

}  // namespace tg::runtime
