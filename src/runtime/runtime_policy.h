// The runtime policy: which execution providers a session must get, how placement is judged,
// and how ONNX Runtime is tuned (public API: no ONNX Runtime types).
//
// A policy comes from LoadRuntimePolicy(spec): "production" and "dev" are the built-in profiles,
// anything else is a YAML file (documented in docs/POLICY.md, examples in deploy/policy.*.yaml).
// Every unknown or ill-typed field is an INVALID_ARG naming file:line:col and the field; option
// values are validated here, before any library is loaded. RuntimePolicy is a plain value type.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace tg::runtime {

enum class Profile { kProduction, kDev };
// How GPU providers are attached: kAuto tries the classic V2 options API when the core library
// lists the provider, otherwise registers the provider library as a plugin EP.
enum class AttachMode { kAuto, kClassic, kPlugin };
// As policy files spell them: "production"/"dev", "auto"/"classic"/"plugin". Pure.
std::string_view ProfileName(Profile p);
std::string_view AttachModeName(AttachMode m);

struct PlacementPolicy {
  // Op types that must be assigned to a GPU provider (a CPU placement is a violation).
  std::vector<std::string> gpu_required_ops;
  // Largest share of graph nodes that may run on the CPU provider (shape ops live there).
  double max_cpu_node_share = 0.25;
  // Most inserted MemcpyToHost/MemcpyFromHost nodes allowed.
  int max_memcpy_nodes = 8;
  // Passes session.disable_cpu_ep_fallback=1 (session creation fails if any node is on CPU).
  bool disable_cpu_ep_fallback = false;
  // Enforce the rules above. Dev profile: the report is still produced but never fails.
  bool enforce = true;
};

// CUDA EP provider options; unset fields keep ORT's defaults.
struct CudaOptions {
  int device_id = 0;
  std::optional<std::int64_t> gpu_mem_limit;          // bytes
  std::optional<std::string> arena_extend_strategy;   // kNextPowerOfTwo | kSameAsRequested
  std::optional<std::string> cudnn_conv_algo_search;  // EXHAUSTIVE | HEURISTIC | DEFAULT
  std::optional<bool> do_copy_in_default_stream;
  std::optional<bool> use_tf32;
  std::optional<bool> enable_cuda_graph;
  std::optional<bool> prefer_nhwc;
  std::optional<bool> cudnn_conv_use_max_workspace;
  // As ORT option strings (what is passed to the provider).
  std::map<std::string, std::string> ToProviderOptions() const;
};

// Device arena (CreateArenaCfgV2 keys) and run-time shrinkage.
struct ArenaOptions {
  std::optional<std::int64_t> max_mem;
  std::optional<std::int64_t> arena_extend_strategy;  // 0 kNextPowerOfTwo, 1 kSameAsRequested
  std::optional<std::int64_t> initial_chunk_size_bytes;
  std::optional<std::int64_t> max_dead_bytes_per_chunk;
  std::optional<std::int64_t> initial_growth_chunk_size_bytes;
  std::optional<std::int64_t> max_power_of_two_extend_bytes;
  bool shrink_after_run = false;  // run option memory.enable_memory_arena_shrinkage=gpu:<id>
  bool any() const {
    return max_mem || arena_extend_strategy || initial_chunk_size_bytes ||
           max_dead_bytes_per_chunk || initial_growth_chunk_size_bytes ||
           max_power_of_two_extend_bytes;
  }
};

// Accuracy gate that INT8 engines must pass against fp16/fp32 reference outputs.
struct Int8Gate {
  double max_abs_error = 0.05;
  double max_rel_rms_error = 0.02;  // rms(diff) / rms(reference)
};

struct TensorRtOptions {
  bool fp16 = true;
  bool int8 = false;  // only honoured after the Int8Gate passed for the model
  Int8Gate int8_gate;
  std::optional<std::int64_t> max_workspace_size;
  int builder_optimization_level = 3;  // 0..5
  bool timing_cache = true;
  std::optional<std::int64_t> min_subgraph_size;
  std::optional<std::int64_t> auxiliary_streams;
  bool cuda_graph = false;
  // Engine cache / artifacts.
  std::string engine_dir;            // "" = <cache>/truegreen/engines
  bool allow_on_node_build = false;  // production refuses a missing engine artifact unless true
};

struct SessionTuning {
  int intra_op_threads = 0;  // 0 = ORT default
  int inter_op_threads = 0;
  std::string graph_optimization_level = "all";  // disable | basic | extended | layout | all
  bool io_binding = true;                        // Session::Run uses the IO binding path
  bool sequential_execution = true;
  // ORT's intra-/inter-op pool threads spin-wait for work after a run (ORT's default, true).
  // false stops them burning a core between runs, which on a host with few cores leaves the CPU
  // to other threads (the server's I/O threads writing the response); docs/POLICY.md.
  bool allow_spinning = true;
  // Rewrite unfused attention into com.microsoft.MultiHeadAttention at session open, checked
  // against the original (runtime/attention_fusion.h); `--no-fuse-attention` turns it off.
  bool fuse_attention = true;
  // The ORT session config entries (key -> value) these settings imply, as passed to
  // AddConfigEntry: session.intra_op.allow_spinning and session.inter_op.allow_spinning ("0"/"1").
  std::map<std::string, std::string> ToSessionConfigEntries() const;
};

struct RuntimePolicy {
  Profile profile = Profile::kProduction;
  std::string source = "production";  // "production", "dev" or the file path
  // GPU providers to attach in order, short names "TensorRT", "CUDA". Empty = take them from the
  // version matrix (required providers in its order).
  std::vector<std::string> providers;
  AttachMode attach = AttachMode::kAuto;
  bool allow_cpu = false;   // dev: CPU provider allowed (session marked degraded)
  std::string matrix_path;  // optional version matrix (fingerprint feeds the engine key)
  PlacementPolicy placement;
  CudaOptions cuda;
  ArenaOptions arena;
  TensorRtOptions tensorrt;
  SessionTuning session;
  // "rocm" etc. are not supported; providers are validated at load time.
};

// Built-in profiles (a fresh value per call; pure, thread-safe).
RuntimePolicy ProductionPolicy();
RuntimePolicy DevPolicy();
// The default op types that must run on a GPU provider.
const std::vector<std::string>& DefaultGpuRequiredOps();

// "production" | "dev" | path of a YAML policy file. Errors: NOT_FOUND (file), INVALID_ARG (any
// unknown or ill-typed field, named with file:line:col).
common::Result<RuntimePolicy> LoadRuntimePolicy(const std::string& spec);
// Parses YAML text (source names it in messages).
common::Result<RuntimePolicy> ParseRuntimePolicy(const std::string& yaml_text,
                                                 const std::string& source);

// Canonical provider name ("TensorrtExecutionProvider"/"CUDAExecutionProvider") for a short or
// full name; INVALID_ARG for anything else.
common::Result<std::string> CanonicalProviderName(const std::string& name);

}  // namespace tg::runtime
