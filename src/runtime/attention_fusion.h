// The attention rewrite at session open (attention_rewrite.h), its check and its cache.
//
// SessionFactory::Open (session.h) calls PlanAttentionFusion for a model whose attention check
// finds unfused chains, when both the policy (session.fuse_attention) and OpenOptions allow it:
//   - cache: <cache dir>/fused-attention-<key>.json holds the verdict of an earlier check (pass
//     or fail, with the reason and the counts) and, after a pass, fused-attention-<key>.onnx the
//     rewritten model. The key is the sha256 of the model file, the size of each external-data
//     file it names, the ONNX Runtime version and the rewrite's own version, so a new model,
//     new weights files or another runtime never reuse a verdict. Files are written atomically;
//     a cache that cannot be written only costs the check at the next start.
//   - otherwise the model is rewritten in memory (its external data stays where it is: the
//     rewritten model is handed to ONNX Runtime as bytes, with the original folder as its
//     external-data folder) and must pass the check before it is used: the original and the
//     rewritten model run on the same inputs (the warm-up's rule: random values, dynamic dims 1;
//     8 when the original cannot run at 1) and every output agrees within FusionTolerance.
// A model that cannot be rewritten, or whose check fails, is opened as it is, and the session's
// attention report says why (AttentionReport::fusion).
// Stateless functions; the cache tolerates concurrent writers (atomic renames). Thread-safe.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/attention_rewrite.h"
#include "runtime/tensor.h"

namespace tg::runtime {

inline constexpr const char* kAttentionRewriteVersion = "truegreen-attention-rewrite/1";

struct FusionPlan {
  std::string key;           // cache key (lowercase hex sha256)
  std::string verdict_file;  // "" when there is no cache
  std::string model_file;    // cached rewritten model ("" when there is no cache)
  std::string bytes;         // the rewritten model ("" when kept original)
  bool checked = false;      // a cached pass: the check ran before for this key
  std::string kept_reason;   // non-empty: open the original (cached fail, nothing to rewrite)
  int chains = 0;
  int rewritten = 0;
  std::vector<std::string> skipped;
};

// The cache key for `model_path` (see file comment). Errors: the file's read errors.
common::Result<std::string> FusionCacheKey(const std::string& model_path,
                                           const std::string& runtime_version);

// Looks the model up in `cache_dir` ("" = no cache) or rewrites it (then `after_rewrite`, when
// set, edits the result: tests break it on purpose). Never fails: a model that cannot be read or
// rewritten comes back with kept_reason set.
FusionPlan PlanAttentionFusion(const std::string& model_path, const std::string& runtime_version,
                               const std::string& cache_dir,
                               const std::function<void(OnnxModel&)>& after_rewrite = {});

// Records the check's verdict (and, on a pass, the rewritten model) in the cache. `detail` says
// what was compared or why it failed. Best effort: errors are logged, not returned.
void RecordFusionVerdict(const FusionPlan& plan, bool passed, const std::string& detail);

// The tolerance of the check: |fused - original| <= tol * max(1, max |original|) element-wise,
// tol 1e-3 for float32/float64 outputs and 2e-2 for float16/bfloat16; other outputs equal.
double FusionTolerance(DataType dtype);
// OK, or UNSUPPORTED (the rewrite cannot serve this model) naming the output, the element, both
// values and the bound.
common::Status CompareFusedOutputs(const std::vector<std::string>& names,
                                   const std::vector<Tensor>& original,
                                   const std::vector<Tensor>& fused, double* max_error);

}  // namespace tg::runtime
