// SessionFactory::OpenForDiagnosis: the attention rewrite's place in Open (attention_fusion.h):
// the plan (cache or rewrite), the check against the original, then the session itself.
#include <spdlog/spdlog.h>

#include <cstring>

#include "runtime/attention_fusion.h"
#include "runtime/canary.h"
#include "runtime/session.h"
#include "runtime/session_io.h"

namespace tg::runtime {

using common::Result;
using common::Status;

namespace {

bool IsFloat(DataType d) {
  return d == DataType::kFloat32 || d == DataType::kFloat16 || d == DataType::kFloat64 ||
         d == DataType::kBFloat16;
}

// The check's inputs, by the warm-up's rule: dynamic dims as `dynamic`, floating-point inputs
// random in [-1, 1), others zero (valid token ids and timesteps).
Result<std::vector<NamedTensor>> CheckInputs(const Session& s, std::int64_t dynamic) {
  std::vector<NamedTensor> in;
  std::uint64_t seed = 1;
  for (const auto& info : s.inputs()) {
    std::vector<std::int64_t> shape = info.shape;
    for (auto& d : shape) d = d < 0 ? dynamic : d;
    auto t = IsFloat(info.dtype) ? RandomTensor(info.dtype, shape, seed++)
                                 : Tensor::Create(info.dtype, shape);
    if (!t.ok()) return t.status().WithPrefix("check input " + info.name + ": ");
    if (!IsFloat(info.dtype)) std::memset(t->raw_data(), 0, t->byte_size());
    in.push_back({info.name, std::move(t).value()});
  }
  return in;
}

std::string Shapes(const std::vector<NamedTensor>& in) {
  std::string s;
  for (const auto& t : in)
    s += (s.empty() ? "" : ", ") + t.name + " " + ShapeToString(t.tensor.shape());
  return s;
}

}  // namespace

Status SessionFactory::CheckFusion(const std::string& model_path, const OpenOptions& options,
                                   const std::string& bytes, std::string* detail) const {
  OpenOptions o = options;
  o.after_rewrite = nullptr;
  o.placement_proof = false;
  o.placement_from_log = false;
  o.attention_check = false;
  o.fuse_attention = false;
  Status violation;
  std::vector<NamedTensor> in;
  std::vector<Tensor> reference;
  std::vector<std::string> names;
  {
    // The original first, released before the rewritten one opens: one copy of the weights.
    auto original = OpenModel(model_path, o, nullptr, &violation);
    if (!original.ok()) return original.status().WithPrefix("the original cannot be opened: ");
    Status run = Status::Unsupported("no check input");
    for (std::int64_t dynamic : {1, 8}) {
      auto i = CheckInputs(*original, dynamic);
      if (!i.ok()) return Status::Unsupported(i.status().message());
      reference.clear();
      run = original->Run(*i, {}, &reference);
      if (run.ok()) {
        in = std::move(i).value();
        break;
      }
    }
    if (!run.ok()) {
      return Status::Unsupported("the check could not run the original: " + run.message());
    }
    for (const auto& t : original->outputs()) names.push_back(t.name);
  }
  auto fused = OpenModel(model_path, o, &bytes, &violation);
  if (!fused.ok()) {
    return Status::Unsupported("ONNX Runtime cannot open the rewritten model: " +
                               fused.status().message());
  }
  std::vector<Tensor> got;
  const Status run = fused->Run(in, {}, &got);
  if (!run.ok()) return Status::Unsupported("the rewritten model failed to run: " + run.message());
  double max_error = 0.0;
  TG_RETURN_IF_ERROR(CompareFusedOutputs(names, reference, got, &max_error));
  char err[32];
  std::snprintf(err, sizeof err, "%.3g", max_error);
  *detail = "checked on " + Shapes(in) + ": max |rewritten - original| " + err +
            " (allowed 1e-3 x max(1, max |original|), 2e-2 for float16)";
  return Status::Ok();
}

Result<Session> SessionFactory::OpenForDiagnosis(const std::string& model_path,
                                                 const OpenOptions& options,
                                                 Status* violation) const {
  const bool wanted = options.fuse_attention && policy().session.fuse_attention;
  if (!wanted || !options.attention_check) {
    auto s = OpenModel(model_path, options, nullptr, violation);
    if (s.ok() && !wanted) s->impl_->report.attention.fusion = "off";
    return s;
  }
  auto chains = CheckAttention(model_path);
  if (!chains.ok() || chains->unfused_chains == 0) {
    return OpenModel(model_path, options, nullptr, violation);
  }
  const std::string cache = options.after_rewrite ? "" : DefaultCacheDir();
  FusionPlan plan = PlanAttentionFusion(model_path, ort_version(), cache, options.after_rewrite);
  std::string note = plan.checked ? "checked before (" + plan.verdict_file + ")" : "";
  if (plan.kept_reason.empty() && !plan.checked) {
    const Status check = CheckFusion(model_path, options, plan.bytes, &note);
    RecordFusionVerdict(plan, check.ok(), check.ok() ? note : check.message());
    if (!check.ok())
      plan.kept_reason = "kept the original: the rewrite failed its check: " + check.message();
  }
  if (plan.kept_reason.empty()) {
    auto s = OpenModel(model_path, options, &plan.bytes, violation);
    if (s.ok()) {
      AttentionReport& a = s->impl_->report.attention;
      a.fused_by_truegreen = plan.rewritten;
      a.fusion = "fused by truegreen: " + std::to_string(plan.rewritten) + " of " +
                 std::to_string(plan.chains) + " chains; " + note;
      return s;
    }
    plan.kept_reason =
        "kept the original: the rewritten model cannot be opened: " + s.status().message();
  }
  spdlog::warn("attention rewrite: {}: {}", model_path, plan.kept_reason);
  auto s = OpenModel(model_path, options, nullptr, violation);
  if (s.ok()) s->impl_->report.attention.fusion = plan.kept_reason;
  return s;
}

}  // namespace tg::runtime
