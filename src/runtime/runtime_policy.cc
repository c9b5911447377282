#include "runtime/runtime_policy.h"

#include <algorithm>
#include <filesystem>

#include <set>

#include "common/config.h"
#include "common/strings.h"

namespace tg::runtime {
namespace {

using common::Status;
using common::YamlMap;

// Collects every problem in a policy file so one run names all of them (a deploy pipeline should
// not need N round trips to fix N typos).
class Errors {
 public:
  void Add(const Status& s) {
    if (!s.ok()) messages_.push_back(s.message());
  }
  bool empty() const { return messages_.empty(); }
  Status ToStatus() const {
    std::string all;
    for (const auto& m : messages_) {
      if (!all.empty()) all += "\n";
      all += m;
    }
    return Status::InvalidArg(all);
  }

 private:
  std::vector<std::string> messages_;
};

// Every key of `m` not in `allowed` is an error naming where it is and what is allowed.
void CheckKeys(const YamlMap& m, const std::vector<std::string_view>& allowed, Errors* errors) {
  for (const auto& kv : m.node()) {
    const std::string k = kv.first.Scalar();
    bool ok = false;
    for (auto a : allowed) ok = ok || a == k;
    if (ok) continue;
    std::string list;
    for (auto a : allowed) {
      if (!list.empty()) list += ", ";
      list += std::string(a);
    }
    errors->Add(Status::InvalidArg(common::YamlWhere(kv.first, m.source()) + ": unknown option '" +
                                   m.FieldPath(k) + "' (allowed here: " + list + ")"));
  }
}

Status OneOf(YamlMap& m, std::string_view key, const std::string& value,
             const std::vector<std::string_view>& allowed) {
  for (auto a : allowed) {
    if (a == value) return Status::Ok();
  }
  std::string list;
  for (auto a : allowed) {
    if (!list.empty()) list += " | ";
    list += std::string(a);
  }
  return m.FieldError(key, "one of " + list);
}

Status NonNegative(YamlMap& m, std::string_view key, const std::optional<std::int64_t>& v) {
  if (v && *v < 0) return m.FieldError(key, "a non-negative integer");
  return Status::Ok();
}

void ParsePlacement(YamlMap& m, PlacementPolicy* p, Errors* e) {
  CheckKeys(m,
            {"gpu_required_ops", "max_cpu_node_share", "max_memcpy_nodes",
             "disable_cpu_ep_fallback", "enforce"},
            e);
  e->Add(m.Get("gpu_required_ops", &p->gpu_required_ops));
  Status s = m.Get("max_cpu_node_share", &p->max_cpu_node_share);
  e->Add(s);
  if (s.ok() && (p->max_cpu_node_share < 0.0 || p->max_cpu_node_share > 1.0)) {
    e->Add(m.FieldError("max_cpu_node_share", "a number between 0 and 1"));
  }
  s = m.Get("max_memcpy_nodes", &p->max_memcpy_nodes);
  e->Add(s);
  if (s.ok() && p->max_memcpy_nodes < 0) {
    e->Add(m.FieldError("max_memcpy_nodes", "a non-negative integer"));
  }
  e->Add(m.Get("disable_cpu_ep_fallback", &p->disable_cpu_ep_fallback));
  e->Add(m.Get("enforce", &p->enforce));
}

void ParseCuda(YamlMap& m, CudaOptions* c, Errors* e) {
  CheckKeys(m,
            {"device_id", "gpu_mem_limit", "arena_extend_strategy", "cudnn_conv_algo_search",
             "do_copy_in_default_stream", "use_tf32", "enable_cuda_graph", "prefer_nhwc",
             "cudnn_conv_use_max_workspace"},
            e);
  Status s = m.Get("device_id", &c->device_id);
  e->Add(s);
  if (s.ok() && c->device_id < 0) e->Add(m.FieldError("device_id", "a non-negative integer"));
  s = m.Get("gpu_mem_limit", &c->gpu_mem_limit);
  e->Add(s);
  if (s.ok()) e->Add(NonNegative(m, "gpu_mem_limit", c->gpu_mem_limit));
  s = m.Get("arena_extend_strategy", &c->arena_extend_strategy);
  e->Add(s);
  if (s.ok() && c->arena_extend_strategy) {
    e->Add(OneOf(m, "arena_extend_strategy", *c->arena_extend_strategy,
                 {"kNextPowerOfTwo", "kSameAsRequested"}));
  }
  s = m.Get("cudnn_conv_algo_search", &c->cudnn_conv_algo_search);
  e->Add(s);
  if (s.ok() && c->cudnn_conv_algo_search) {
    e->Add(OneOf(m, "cudnn_conv_algo_search", *c->cudnn_conv_algo_search,
                 {"EXHAUSTIVE", "HEURISTIC", "DEFAULT"}));
  }
  e->Add(m.Get("do_copy_in_default_stream", &c->do_copy_in_default_stream));
  e->Add(m.Get("use_tf32", &c->use_tf32));
  e->Add(m.Get("enable_cuda_graph", &c->enable_cuda_graph));
  e->Add(m.Get("prefer_nhwc", &c->prefer_nhwc));
  e->Add(m.Get("cudnn_conv_use_max_workspace", &c->cudnn_conv_use_max_workspace));
}

void ParseArena(YamlMap& m, ArenaOptions* a, Errors* e) {
  CheckKeys(
      m,
      {"max_mem", "arena_extend_strategy", "initial_chunk_size_bytes", "max_dead_bytes_per_chunk",
       "initial_growth_chunk_size_bytes", "max_power_of_two_extend_bytes", "shrink_after_run"},
      e);
  struct Field {
    const char* key;
    std::optional<std::int64_t>* out;
  };
  for (Field f : {Field{"max_mem", &a->max_mem},
                  Field{"initial_chunk_size_bytes", &a->initial_chunk_size_bytes},
                  Field{"max_dead_bytes_per_chunk", &a->max_dead_bytes_per_chunk},
                  Field{"initial_growth_chunk_size_bytes", &a->initial_growth_chunk_size_bytes},
                  Field{"max_power_of_two_extend_bytes", &a->max_power_of_two_extend_bytes}}) {
    Status s = m.Get(f.key, f.out);
    e->Add(s);
    if (s.ok()) e->Add(NonNegative(m, f.key, *f.out));
  }
  std::optional<std::string> strategy;
  Status s = m.Get("arena_extend_strategy", &strategy);
  e->Add(s);
  if (s.ok() && strategy) {
    Status one =
        OneOf(m, "arena_extend_strategy", *strategy, {"kNextPowerOfTwo", "kSameAsRequested"});
    e->Add(one);
    if (one.ok()) a->arena_extend_strategy = *strategy == "kNextPowerOfTwo" ? 0 : 1;
  }
  e->Add(m.Get("shrink_after_run", &a->shrink_after_run));
}

void ParseTensorRt(YamlMap& m, TensorRtOptions* t, Errors* e) {
  CheckKeys(m,
            {"fp16", "int8", "int8_gate", "max_workspace_size", "builder_optimization_level",
             "timing_cache", "min_subgraph_size", "auxiliary_streams", "cuda_graph", "engine_dir",
             "allow_on_node_build"},
            e);
  e->Add(m.Get("fp16", &t->fp16));
  e->Add(m.Get("int8", &t->int8));
  auto gate = m.GetMap("int8_gate");
  if (!gate.ok()) {
    e->Add(gate.status());
  } else if (gate->has_value()) {
    YamlMap& g = **gate;
    CheckKeys(g, {"max_abs_error", "max_rel_rms_error"}, e);
    for (auto [key, out] :
         {std::pair<const char*, double*>{"max_abs_error", &t->int8_gate.max_abs_error},
          {"max_rel_rms_error", &t->int8_gate.max_rel_rms_error}}) {
      Status s = g.Get(key, out);
      e->Add(s);
      if (s.ok() && *out < 0) e->Add(g.FieldError(key, "a non-negative number"));
    }
  }
  Status s = m.Get("max_workspace_size", &t->max_workspace_size);
  e->Add(s);
  if (s.ok()) e->Add(NonNegative(m, "max_workspace_size", t->max_workspace_size));
  s = m.Get("builder_optimization_level", &t->builder_optimization_level);
  e->Add(s);
  if (s.ok() && (t->builder_optimization_level < 0 || t->builder_optimization_level > 5)) {
    e->Add(m.FieldError("builder_optimization_level", "an integer from 0 to 5"));
  }
  e->Add(m.Get("timing_cache", &t->timing_cache));
  s = m.Get("min_subgraph_size", &t->min_subgraph_size);
  e->Add(s);
  if (s.ok()) e->Add(NonNegative(m, "min_subgraph_size", t->min_subgraph_size));
  s = m.Get("auxiliary_streams", &t->auxiliary_streams);
  e->Add(s);
  if (s.ok() && t->auxiliary_streams && *t->auxiliary_streams < -1) {
    e->Add(m.FieldError("auxiliary_streams", "an integer >= -1"));
  }
  e->Add(m.Get("cuda_graph", &t->cuda_graph));
  e->Add(m.Get("engine_dir", &t->engine_dir));
  e->Add(m.Get("allow_on_node_build", &t->allow_on_node_build));
}

void ParseSession(YamlMap& m, SessionTuning* t, Errors* e) {
  CheckKeys(m,
            {"intra_op_threads", "inter_op_threads", "graph_optimization_level", "io_binding",
             "sequential_execution", "allow_spinning", "fuse_attention"},
            e);
  for (auto [key, out] : {std::pair<const char*, int*>{"intra_op_threads", &t->intra_op_threads},
                          {"inter_op_threads", &t->inter_op_threads}}) {
    Status s = m.Get(key, out);
    e->Add(s);
    if (s.ok() && (*out < 0 || *out > 1024)) {
      e->Add(m.FieldError(key, "an integer from 0 (ORT default) to 1024"));
    }
  }
  Status s = m.Get("graph_optimization_level", &t->graph_optimization_level);
  e->Add(s);
  if (s.ok()) {
    e->Add(OneOf(m, "graph_optimization_level", t->graph_optimization_level,
                 {"disable", "basic", "extended", "layout", "all"}));
  }
  e->Add(m.Get("io_binding", &t->io_binding));
  e->Add(m.Get("sequential_execution", &t->sequential_execution));
  e->Add(m.Get("fuse_attention", &t->fuse_attention));
  e->Add(m.Get("allow_spinning", &t->allow_spinning));
}

}  // namespace

std::map<std::string, std::string> SessionTuning::ToSessionConfigEntries() const {
  // Both pools: with sequential execution only the intra-op pool runs kernels, but a policy that
  // turns spinning off means "no pool thread of this session spins", whatever the execution mode.
  const std::string v = allow_spinning ? "1" : "0";
  return {{"session.intra_op.allow_spinning", v}, {"session.inter_op.allow_spinning", v}};
}

std::string_view ProfileName(Profile p) { return p == Profile::kDev ? "dev" : "production"; }

std::string_view AttachModeName(AttachMode m) {
  switch (m) {
    case AttachMode::kClassic:
      return "classic";
    case AttachMode::kPlugin:
      return "plugin";
    case AttachMode::kAuto:
      break;
  }
  return "auto";
}

const std::vector<std::string>& DefaultGpuRequiredOps() {
  static const std::vector<std::string> kOps = {"MatMul",
                                                "Gemm",
                                                "Conv",
                                                "ConvTranspose",
                                                "Einsum",
                                                "Softmax",
                                                "Attention",
                                                "MultiHeadAttention",
                                                "GroupQueryAttention",
                                                "PackedAttention",
                                                "PackedMultiHeadAttention",
                                                "FusedMatMul",
                                                "MatMulNBits",
                                                "BatchNormalization",
                                                "LayerNormalization",
                                                "SkipLayerNormalization",
                                                "SimplifiedLayerNormalization",
                                                "SkipSimplifiedLayerNormalization",
                                                "GroupNorm",
                                                "GroupNormalization",
                                                "InstanceNormalization",
                                                "BiasGelu",
                                                "FastGelu",
                                                "NhwcConv",
                                                "QuickGelu",
                                                "RotaryEmbedding"};
  return kOps;
}

std::map<std::string, std::string> CudaOptions::ToProviderOptions() const {
  std::map<std::string, std::string> o;
  o["device_id"] = std::to_string(device_id);
  auto b = [](bool v) { return std::string(v ? "1" : "0"); };
  if (gpu_mem_limit) o["gpu_mem_limit"] = std::to_string(*gpu_mem_limit);
  if (arena_extend_strategy) o["arena_extend_strategy"] = *arena_extend_strategy;
  if (cudnn_conv_algo_search) o["cudnn_conv_algo_search"] = *cudnn_conv_algo_search;
  if (do_copy_in_default_stream) o["do_copy_in_default_stream"] = b(*do_copy_in_default_stream);
  if (use_tf32) o["use_tf32"] = b(*use_tf32);
  if (enable_cuda_graph) o["enable_cuda_graph"] = b(*enable_cuda_graph);
  if (prefer_nhwc) o["prefer_nhwc"] = b(*prefer_nhwc);
  if (cudnn_conv_use_max_workspace) {
    o["cudnn_conv_use_max_workspace"] = b(*cudnn_conv_use_max_workspace);
  }
  return o;
}

RuntimePolicy ProductionPolicy() {
  RuntimePolicy p;
  p.profile = Profile::kProduction;
  p.source = "production";
  p.allow_cpu = false;
  p.placement.gpu_required_ops = DefaultGpuRequiredOps();
  p.placement.enforce = true;
  return p;
}

RuntimePolicy DevPolicy() {
  RuntimePolicy p = ProductionPolicy();
  p.profile = Profile::kDev;
  p.source = "dev";
  p.allow_cpu = true;
  p.placement.enforce = false;  // reported, never fatal: dev sessions are degraded anyway
  return p;
}

common::Result<std::string> CanonicalProviderName(const std::string& name) {
  const std::string n = common::Lower(name);
  if (n == "tensorrt" || n == "trt" || n == "tensorrtexecutionprovider" ||
      n == "nvtensorrtrtxexecutionprovider") {
    return std::string("TensorrtExecutionProvider");
  }
  if (n == "cuda" || n == "cudaexecutionprovider") return std::string("CUDAExecutionProvider");
  return Status::InvalidArg("unknown execution provider '" + name +
                            "' (supported: TensorRT, CUDA; the CPU provider is never listed: "
                            "it is allowed only by the dev profile)");
}

namespace {

// providers: each a known GPU provider, each listed once ([CUDA, CUDAExecutionProvider] names one
// provider twice: the order would be a lie). Errors name the list element.
void ReadProviders(YamlMap& root, const std::string& source, RuntimePolicy* p, Errors* e) {
  std::vector<std::string> providers;
  Status s = root.Get("providers", &providers);
  e->Add(s);
  if (!s.ok()) return;
  // An empty list given on purpose would silently mean "the profile's default order".
  if (providers.empty() && root.node()["providers"].IsSequence()) {
    e->Add(Status::InvalidArg(common::YamlWhere(root.node()["providers"], source) +
                              ": field 'providers': an empty list names no provider (leave the "
                              "field out for the profile's order)"));
    return;
  }
  for (std::size_t i = 0; i < providers.size(); ++i) {
    const std::string where = common::YamlWhere(root.node()["providers"][i], source) +
                              ": field 'providers[" + std::to_string(i) + "]': ";
    auto c = CanonicalProviderName(providers[i]);
    if (!c.ok()) {
      e->Add(Status::InvalidArg(where + c.status().message()));
    } else if (std::find(p->providers.begin(), p->providers.end(), *c) != p->providers.end()) {
      e->Add(Status::InvalidArg(where + "'" + providers[i] + "' names " + *c +
                                " a second time; each provider is listed once"));
    } else {
      p->providers.push_back(*c);
    }
  }
}

}  // namespace

common::Result<RuntimePolicy> ParseRuntimePolicy(const std::string& yaml_text,
                                                 const std::string& source) {
  auto doc = common::ParseYaml(yaml_text, source);
  if (!doc.ok()) return doc.status();
  auto root_r = YamlMap::From(*doc, source, "");
  if (!root_r.ok()) return root_r.status();
  YamlMap& root = *root_r;
  Errors e;
  CheckKeys(root,
            {"profile", "providers", "attach", "allow_cpu", "matrix", "placement", "session",
             "cuda", "arena", "tensorrt"},
            &e);

  std::string profile = "production";
  Status s = root.Get("profile", &profile);
  e.Add(s);
  RuntimePolicy p = ProductionPolicy();
  if (s.ok()) {
    Status one = OneOf(root, "profile", profile, {"production", "dev"});
    e.Add(one);
    if (one.ok() && profile == "dev") p = DevPolicy();
  }
  p.source = source;

  ReadProviders(root, source, &p, &e);
  std::string attach = "auto";
  s = root.Get("attach", &attach);
  e.Add(s);
  if (s.ok()) {
    Status one = OneOf(root, "attach", attach, {"auto", "classic", "plugin"});
    e.Add(one);
    if (one.ok()) {
      p.attach = attach == "classic"  ? AttachMode::kClassic
                 : attach == "plugin" ? AttachMode::kPlugin
                                      : AttachMode::kAuto;
    }
  }
  s = root.Get("allow_cpu", &p.allow_cpu);
  e.Add(s);
  if (s.ok() && p.allow_cpu && p.profile == Profile::kProduction) {
    e.Add(root.FieldError("allow_cpu",
                          "false in the production profile (the CPU provider is never a "
                          "production fallback; use profile: dev)"));
  }
  e.Add(root.Get("matrix", &p.matrix_path));

  auto section = [&](const char* key, auto parse) {
    auto m = root.GetMap(key);
    if (!m.ok()) {
      e.Add(m.status());
    } else if (m->has_value()) {
      parse(**m);
    }
  };
  section("placement", [&](YamlMap& m) { ParsePlacement(m, &p.placement, &e); });
  section("session", [&](YamlMap& m) { ParseSession(m, &p.session, &e); });
  section("cuda", [&](YamlMap& m) { ParseCuda(m, &p.cuda, &e); });
  section("arena", [&](YamlMap& m) { ParseArena(m, &p.arena, &e); });
  section("tensorrt", [&](YamlMap& m) { ParseTensorRt(m, &p.tensorrt, &e); });

  if (!e.empty()) return e.ToStatus();
  return p;
}

namespace {

// A policy's `matrix:` names a file in the policy file's own folder (or below it), resolved
// against that folder, never the current directory: a policy must not make the tool read (and
// echo parse errors about) files elsewhere, such as ../../etc/passwd.
common::Result<std::string> ResolveBesidePolicy(const std::string& policy_path,
                                                const std::string& matrix) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::path(policy_path).parent_path().empty()
                              ? fs::path(".")
                              : fs::path(policy_path).parent_path();
  const fs::path rel(matrix);
  auto refuse = [&](const std::string& why) {
    return common::Status::InvalidArg(policy_path + ": field 'matrix': '" + matrix.substr(0, 200) +
                                      "' " + why +
                                      "; the matrix must lie in the policy file's folder (or "
                                      "pass --matrix)");
  };
  if (rel.is_absolute()) return refuse("is an absolute path");
  for (const auto& part : rel.lexically_normal()) {
    if (part == "..") return refuse("leaves the policy file's folder");
  }
  const fs::path joined = folder / rel;
  std::error_code ec1, ec2;
  const fs::path real_folder = fs::weakly_canonical(folder, ec1);
  const fs::path real = fs::weakly_canonical(joined, ec2);
  if (!ec1 && !ec2) {
    // Symbolic links may still point out of the folder: compare the resolved paths.
    auto [f_end, r_it] =
        std::mismatch(real_folder.begin(), real_folder.end(), real.begin(), real.end());
    if (f_end != real_folder.end()) return refuse("leads out of the policy file's folder");
  }
  return joined.string();
}

}  // namespace

common::Result<RuntimePolicy> LoadRuntimePolicy(const std::string& spec) {
  if (spec.empty() || spec == "production") return ProductionPolicy();
  if (spec == "dev") return DevPolicy();
  auto text = common::ReadFileLimited(spec, common::kMaxConfigBytes);
  if (!text.ok()) return text.status().WithPrefix("policy file");
  TG_ASSIGN_OR_RETURN(RuntimePolicy p, ParseRuntimePolicy(*text, spec));
  if (!p.matrix_path.empty()) {
    TG_ASSIGN_OR_RETURN(p.matrix_path, ResolveBesidePolicy(spec, p.matrix_path));
  }
  return p;
}

}  // namespace tg::runtime
