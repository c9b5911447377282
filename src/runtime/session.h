// Policy-driven ONNX Runtime sessions (public API of runtime/: no ONNX Runtime types here).
//
// SessionFactory::Create(policy, runtime) works in the process's ONNX Runtime (ort_runtime.h): for
// every GPU provider the policy requires, it preloads the provider's GPU dependencies through the
// runtime's loader (so --lib-path substitutes them) and registers it (plugin path) or checks it is
// compiled in (classic path). Any failure in production is UNAVAILABLE carrying the loader's or
// ORT's exact text ("libcuda.so.1: cannot open shared object file ..."); the CPU provider is never
// a fallback. In the dev profile a provider that cannot attach is recorded and the session is
// created on CPU and marked degraded.
//
// SessionFactory::Open(model) creates a Session, attaches the providers in policy order, reads
// ORT's per-node provider assignment (placement proof), evaluates it against the placement policy
// (violation -> UNAVAILABLE, exit code 3) and runs the static attention check.
//
// Thread safety: SessionFactory is copyable (shared state) and Open() may be called concurrently.
// A Session is move-only; Run() may be called concurrently from several threads (ORT sessions are
// thread-safe for Run), report() is immutable after Open, io_stats() is atomic.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/dynlib.h"
#include "common/status.h"
#include "runtime/ort_runtime.h"
#include "runtime/runtime_policy.h"
#include "runtime/tensor.h"

namespace tg::runtime {

class OnnxModel;  // onnx_model.h

enum class AttachPath { kNone, kClassic, kPlugin, kCpu };
std::string_view AttachPathName(AttachPath p);  // "none" "classic" "plugin" "cpu"

struct ProviderAttachment {
  std::string name;  // "CUDAExecutionProvider"
  AttachPath path = AttachPath::kNone;
  bool attached = false;
  std::string library;  // resolved provider library (plugin path)
  std::string device;   // e.g. "GPU vendor=NVIDIA device_id=0" from the EP device
  std::string error;    // why it did not attach (dev profile only; production fails instead)
  std::map<std::string, std::string> options;  // options passed to the provider
};

struct PlacementReport {
  // "ep_graph_assignment_info" (ORT >= 1.29), "verbose_log" (older ORT) or "unavailable".
  std::string source = "unavailable";
  int total_nodes = 0;
  std::map<std::string, int> nodes_per_provider;  // provider -> node count
  int cpu_nodes = 0;
  double cpu_share = 0.0;   // CPU nodes that are not shape ops / total nodes
  int cpu_shape_nodes = 0;  // CPU nodes that only compute shapes (expected there)
  int memcpy_nodes = 0;
  std::vector<std::string> cpu_compute_ops;  // "name (OpType)" of gpu-required ops on CPU
  std::vector<std::string> violations;       // human-readable rule failures
  bool ok = true;                            // no violations (or not enforced)
};

struct AttentionReport {
  int fused_ops = 0;       // com.microsoft Attention / MultiHeadAttention / GQA ...
  int unfused_chains = 0;  // MatMul -> [Mul/Div/Add]* -> Softmax -> MatMul
  std::vector<std::string> fused_op_types;
  std::string verdict = "none";  // "fused", "unfused", "mixed" or "none"
  // Chains truegreen rewrote into com.microsoft.MultiHeadAttention at open (attention_fusion.h);
  // they count in fused_ops. `fusion` says what happened: "off" (policy or flag), "" (nothing to
  // fuse), "fused by truegreen: ..." with the check, or "kept the original: <why>".
  int fused_by_truegreen = 0;
  std::string fusion;
};

struct IoStats {
  std::uint64_t runs = 0;
  std::uint64_t h2d_bytes = 0;  // host -> device bytes copied by truegreen (IO binding)
  std::uint64_t d2h_bytes = 0;
};

struct SessionReport {
  std::string model_path;
  std::string model_sha256;
  std::string profile;  // "production" | "dev"
  // Degraded iff work that production requires on the GPU ran on the CPU (judged with the
  // production placement rules): always false in production (which fails instead), true for a
  // dev session without a GPU provider or with GPU-required ops on the CPU, false for a dev
  // session entirely on the GPU.
  bool degraded = false;
  std::string degraded_reason;  // why (no GPU provider, which op ran on the CPU ...)
  std::string ort_version;
  std::vector<ProviderAttachment> providers;  // in attach order (CPU last when used)
  bool gpu_active = false;                    // a GPU provider got at least one node
  PlacementReport placement;
  AttentionReport attention;
  std::string io_mode;             // "device" (GPU binding), "host" (CPU binding) or "plain"
  std::string engine_key;          // TensorRT engine artifact key ("" when TensorRT not attached)
  std::string engine_dir;          // <engine dir>/<engine_key> when TensorRT is attached
  std::string precision;           // TensorRT precision: "fp32" | "fp16" | "int8"
  std::vector<std::string> notes;  // options not applied on this attach path, etc.
  double create_ms = 0.0;          // session creation incl. placement proof and checks
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
};

// How Run() executes: the policy's choice, plain Ort::Session::Run, or the IO binding path.
enum class RunMode { kDefault, kPlain, kIoBinding };

// Per-Open options (TensorRT optimisation profile shapes, placement proof on/off).
struct OpenOptions {
  // input name -> shape for TensorRT profiles; all three together or none.
  std::map<std::string, std::vector<std::int64_t>> profile_min, profile_opt, profile_max;
  bool placement_proof = true;  // off only for benchmarks measuring its cost
  bool attention_check = true;
  // Rewrite unfused attention chains into MultiHeadAttention (checked, cached; attention_fusion.h)
  // when the policy's session.fuse_attention allows it too. Off for reference sessions.
  bool fuse_attention = true;
  // Tests only: alters the rewritten model before its check, to prove the fallback to the
  // original. When set, nothing is read from or written to the cache.
  std::function<void(OnnxModel&)> after_rewrite;
  // Read placement from the verbose "Node placements" log instead of the assignment API (the
  // path older ORT needs; selectable to test it against the API on the same session).
  bool placement_from_log = false;
  // `engines build`: allow the on-node TensorRT build that fills the artifact directory.
  bool build_engines = false;
  // The INT8 accuracy gate passed for this model (CheckInt8Gate); only then is trt_int8 enabled.
  bool int8_gate_passed = false;
  // A CPU reference session (the op canary's baseline): no GPU provider is attached, whatever the
  // policy; use with placement_proof = false.
  bool cpu_reference = false;
};

class Session {
 public:
  Session();  // empty: Run() is INTERNAL; real sessions come from SessionFactory::Open
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  // Immutable after Open; the references stay valid while the Session lives. io_stats() is a copy.
  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  const SessionReport& report() const;
  IoStats io_stats() const;

  // Runs the model. `out` receives one Tensor per name in `output_names` (all outputs when
  // empty, in model order). Errors: INVALID_ARG for unknown names or dtype/shape mismatches, ORT's
  // failures as FromOrtCode maps them (a library failure is UNAVAILABLE); INTERNAL on an empty one.
  common::Status Run(const std::vector<NamedTensor>& inputs,
                     const std::vector<std::string>& output_names, std::vector<Tensor>* out,
                     RunMode mode = RunMode::kDefault) const;

  struct Impl;

 private:
  friend class SessionFactory;
  std::unique_ptr<Impl> impl_;
};

class SessionFactory {
 public:
  // Prepares the providers in `runtime` (see file comment); `runtime` is not owned and outlives
  // the factory (OrtRuntime lives until exit). Errors: UNAVAILABLE (production: provider/driver/
  // device missing, with the exact cause), INVALID_ARG (policy), NOT_FOUND (matrix file).
  static common::Result<SessionFactory> Create(const RuntimePolicy& policy, OrtRuntime& runtime);

  // Opens `model_path`. Errors: NOT_FOUND/INVALID_ARG for the model; UNAVAILABLE for a provider
  // attach failure, a placement violation (report in the message) or an ORT failure (FromOrtCode).
  common::Result<Session> Open(const std::string& model_path,
                               const OpenOptions& options = {}) const;
  // Like Open, but returns the session's report even when placement is violated (for `run
  // --json` diagnostics); `violation` receives the UNAVAILABLE status in that case.
  common::Result<Session> OpenForDiagnosis(const std::string& model_path,
                                           const OpenOptions& options,
                                           common::Status* violation) const;
  // The policy given to Create (immutable; valid while the factory or a copy of it lives).
  const RuntimePolicy& policy() const;
  // Providers prepared at Create (attach path, library, device, dev-profile errors).
  const std::vector<ProviderAttachment>& prepared_providers() const;
  std::string ort_version() const;  // the loaded core's version, e.g. "1.29.0"
  // True when sessions from this factory will be degraded (dev profile without a GPU provider).
  bool degraded() const;

  struct Impl;

 private:
  // OpenForDiagnosis without the attention rewrite; `model_bytes` (when not null) is a rewritten
  // model ONNX Runtime loads instead of the file, its external data resolved beside model_path.
  common::Result<Session> OpenModel(const std::string& model_path, const OpenOptions& options,
                                    const std::string* model_bytes,
                                    common::Status* violation) const;
  // Runs the original and the rewritten model on the same inputs (attention_fusion.h's check).
  common::Status CheckFusion(const std::string& model_path, const OpenOptions& options,
                             const std::string& bytes, std::string* detail) const;
  std::shared_ptr<Impl> impl_;
};

// The report as JSON (every field; "degraded" always present) and as human-readable lines
// (placement summary; a DEGRADED banner first when degraded).
common::Json SessionReportToJson(const SessionReport& report);
std::string FormatSessionReport(const SessionReport& report);

// Pure placement evaluation (exposed for tests): node (name, op type, provider) triples against a
// policy. `enforce` false still fills the report but leaves ok = true.
struct NodePlacement {
  std::string name;
  std::string op_type;
  std::string provider;
};
PlacementReport EvaluatePlacement(const std::vector<NodePlacement>& nodes,
                                  const PlacementPolicy& policy, bool enforce);
// Op types ORT deliberately keeps on CPU because they compute shapes; they do not count towards
// max_cpu_node_share.
bool IsShapeOp(const std::string& op_type);
// Parses ORT's verbose "Node placements" log block (older ORT without the assignment API). Lines
// may be whole log messages containing newlines.
std::vector<NodePlacement> ParseNodePlacementLog(const std::vector<std::string>& messages);
// Sum of "N Memcpy nodes are added to the graph ..." warnings in `messages`.
int CountMemcpyFromLog(const std::vector<std::string>& messages);

// Static attention check over an ONNX model file; errors are ReadOnnxGraph's (onnx_graph.h).
common::Result<AttentionReport> CheckAttention(const std::string& model_path);

// INT8 accuracy gate: compares candidate outputs with reference outputs (same order, same shapes;
// fp16/fp32/fp64 accepted). OK when every output passes; UNSUPPORTED naming the first
// output and the error that exceeded the tolerance; INVALID_ARG for mismatched shapes/counts.
common::Status CheckInt8Gate(const std::vector<Tensor>& reference,
                             const std::vector<Tensor>& candidate, const Int8Gate& gate);

}  // namespace tg::runtime
