#include "runtime/session.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>

#include <onnxruntime_session_options_config_keys.h>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/log.h"
#include "policy/matrix.h"
#include "runtime/engines.h"
#include "runtime/onnx_graph.h"
#include "runtime/ort_env.h"
#include "runtime/session_io.h"

namespace tg::runtime {

using common::Result;
using common::Status;

std::string_view AttachPathName(AttachPath p) {
  switch (p) {
    case AttachPath::kClassic:
      return "classic";
    case AttachPath::kPlugin:
      return "plugin";
    case AttachPath::kCpu:
      return "cpu";
    case AttachPath::kNone:
      break;
  }
  return "none";
}

struct SessionFactory::Impl {
  RuntimePolicy policy;
  common::LibraryLoader loader;
  internal::OrtEnvironment* env = nullptr;
  std::vector<std::string> required;  // canonical GPU providers, in attach order
  std::vector<internal::PreparedProvider> prepared;
  std::vector<ProviderAttachment> attachments;  // prepared + failed (dev)
  std::string matrix_fingerprint;
  bool degraded = false;
  std::string degraded_reason;
  std::mutex gpu_mu;
  std::optional<Result<GpuIdentity>> gpu;  // queried lazily (TensorRT engine keys)
};

namespace {

GraphOptimizationLevel OptLevel(const std::string& s) {
  if (s == "disable") return ORT_DISABLE_ALL;
  if (s == "basic") return ORT_ENABLE_BASIC;
  if (s == "extended") return ORT_ENABLE_EXTENDED;
  if (s == "layout") return ORT_ENABLE_LAYOUT;
  return ORT_ENABLE_ALL;
}

std::map<std::string, std::string> TrtProviderOptions(const TensorRtOptions& t, int device_id,
                                                      const std::string& precision,
                                                      const std::string& cache_dir,
                                                      const OpenOptions& open) {
  std::map<std::string, std::string> o;
  o["device_id"] = std::to_string(device_id);
  o["trt_fp16_enable"] = precision == "fp16" || precision == "int8" ? "1" : "0";
  o["trt_int8_enable"] = precision == "int8" ? "1" : "0";
  if (t.max_workspace_size) o["trt_max_workspace_size"] = std::to_string(*t.max_workspace_size);
  o["trt_builder_optimization_level"] = std::to_string(t.builder_optimization_level);
  o["trt_engine_cache_enable"] = "1";
  o["trt_engine_cache_path"] = cache_dir;
  o["trt_timing_cache_enable"] = t.timing_cache ? "1" : "0";
  if (t.timing_cache) o["trt_timing_cache_path"] = cache_dir;
  if (t.min_subgraph_size) o["trt_min_subgraph_size"] = std::to_string(*t.min_subgraph_size);
  if (t.auxiliary_streams) o["trt_auxiliary_streams"] = std::to_string(*t.auxiliary_streams);
  if (t.cuda_graph) o["trt_cuda_graph_enable"] = "1";
  if (!open.profile_min.empty()) {
    o["trt_profile_min_shapes"] = FormatShapeList(open.profile_min);
    o["trt_profile_opt_shapes"] = FormatShapeList(open.profile_opt);
    o["trt_profile_max_shapes"] = FormatShapeList(open.profile_max);
  }
  return o;
}

std::vector<NodePlacement> PlacementFromApi(const Ort::Session& session) {
  std::vector<NodePlacement> nodes;
  for (const auto& sub : session.GetEpGraphAssignmentInfo()) {
    const std::string ep = sub.GetEpName();
    for (const auto& n : sub.GetNodes()) {
      nodes.push_back({n.GetName(), n.GetOperatorType(), ep});
    }
  }
  return nodes;
}

std::vector<std::string> ProvidersFromMatrix(const policy::Matrix& m) {
  std::vector<std::string> out;
  for (const auto& p : m.onnxruntime.providers) {
    auto c = CanonicalProviderName(p);
    if (c.ok()) out.push_back(*c);  // the CPU provider is never "required"
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// SessionFactory

Result<SessionFactory> SessionFactory::Create(const RuntimePolicy& policy, OrtRuntime& runtime) {
  auto impl = std::make_shared<Impl>();
  impl->policy = policy;
  impl->loader = runtime.loader();
  const common::LibraryLoader& loader = impl->loader;
  const bool production = policy.profile == Profile::kProduction;

  // The version matrix: its fingerprint keys engine artifacts; its provider list is the default
  // attach order.
  Result<policy::Matrix> matrix =
      policy.matrix_path.empty()
          ? Result<policy::Matrix>(production ? policy::ProductionMatrix() : policy::DevMatrix())
          : policy::LoadMatrix(policy.matrix_path);
  if (!matrix.ok()) return matrix.status().WithPrefix("runtime policy " + policy.source);
  impl->matrix_fingerprint = matrix->Fingerprint();
  impl->required = policy.providers;
  if (impl->required.empty()) impl->required = ProvidersFromMatrix(*matrix);
  if (impl->required.empty()) {
    impl->required = {"TensorrtExecutionProvider", "CUDAExecutionProvider"};
  }
  for (auto& p : impl->required) {
    auto c = CanonicalProviderName(p);
    if (!c.ok()) return c.status().WithPrefix("runtime policy " + policy.source);
    p = *c;
  }

  impl->env = &runtime.env();

  std::vector<std::string> failures;
  for (const auto& provider : impl->required) {
    auto prepared =
        impl->env->PrepareProvider(provider, policy.attach, policy.cuda.device_id, loader);
    if (prepared.ok()) {
      impl->attachments.push_back(prepared->info);
      impl->prepared.push_back(std::move(prepared).value());
      continue;
    }
    failures.push_back(prepared.status().message());
    ProviderAttachment failed;
    failed.name = provider;
    failed.path = AttachPath::kNone;
    failed.error = prepared.status().message();
    impl->attachments.push_back(failed);
  }
  if (production && !failures.empty()) {
    std::string names;
    for (const auto& p : impl->required) {
      if (!names.empty()) names += " -> ";
      names += p;
    }
    std::string causes;
    for (const auto& f : failures) causes += "\n  - " + f;
    return Status::Unavailable("production policy requires " + names + "; " +
                               std::to_string(failures.size()) +
                               " provider(s) cannot be attached:" + causes +
                               "\nThe CPU provider is never a production fallback (use --policy "
                               "dev for a degraded CPU session).");
  }
  // Degraded means: work that production requires on the GPU runs on the CPU. A dev factory with
  // no GPU provider is degraded from the start; one with a GPU provider is judged per session
  // from its placement (MarkDegraded).
  if (!production && impl->prepared.empty()) {
    impl->degraded = true;
    impl->degraded_reason = "dev profile: no GPU provider attached, running on the CPU";
    if (!failures.empty()) impl->degraded_reason += " (" + failures.front() + ")";
    spdlog::warn("runtime: DEGRADED session factory: {}", impl->degraded_reason);
  }
  SessionFactory f;
  f.impl_ = std::move(impl);
  return f;
}

const RuntimePolicy& SessionFactory::policy() const { return impl_->policy; }
const std::vector<ProviderAttachment>& SessionFactory::prepared_providers() const {
  return impl_->attachments;
}
std::string SessionFactory::ort_version() const { return impl_->env->load().version; }
bool SessionFactory::degraded() const { return impl_->degraded; }

Result<Session> SessionFactory::Open(const std::string& model_path,
                                     const OpenOptions& options) const {
  Status violation;
  auto s = OpenForDiagnosis(model_path, options, &violation);
  if (!s.ok()) return s.status();
  if (!violation.ok()) return violation;
  return s;
}

namespace {

// Step 1 of Open: session options from the policy (threads, spinning, graph level, placement
// recording).
Status ApplySessionOptions(const RuntimePolicy& pol, const OpenOptions& options,
                           const std::string& logid, Ort::SessionOptions* so) {
  try {
    if (pol.session.intra_op_threads > 0) so->SetIntraOpNumThreads(pol.session.intra_op_threads);
    if (pol.session.inter_op_threads > 0) so->SetInterOpNumThreads(pol.session.inter_op_threads);
    so->SetGraphOptimizationLevel(OptLevel(pol.session.graph_optimization_level));
    so->SetExecutionMode(pol.session.sequential_execution ? ORT_SEQUENTIAL : ORT_PARALLEL);
    so->SetLogId(logid.c_str());
    for (const auto& [key, value] : pol.session.ToSessionConfigEntries()) {
      so->AddConfigEntry(key.c_str(), value.c_str());
    }
    if (options.placement_proof) {
      so->AddConfigEntry(kOrtSessionOptionsRecordEpGraphAssignmentInfo, "1");
    }
    if (options.placement_from_log) so->SetLogSeverityLevel(ORT_LOGGING_LEVEL_VERBOSE);
    if (pol.placement.disable_cpu_ep_fallback) {
      so->AddConfigEntry(kOrtSessionOptionsDisableCPUEPFallback, "1");
    }
  } catch (const Ort::Exception& ex) {
    return FromOrtException(ex, "session options");
  }
  return Status::Ok();
}

// The CUDA provider's options for one attach path. On the plugin path the EP device already
// names the GPU, and ORT writes its ep.cuda.device_id from it: passing device_id again made ORT
// log "Config with key [ep.cuda.device_id] already exists ... overwritten" on every session.
// The policy's arena: keys reach the allocator only through the classic options (an OrtArenaCfg);
// ORT 1.29's plugin path has no per-session arena config, so there they are refused, never
// silently dropped.
Result<std::map<std::string, std::string>> CudaOptionsFor(const RuntimePolicy& pol,
                                                          AttachPath path) {
  std::map<std::string, std::string> opts = pol.cuda.ToProviderOptions();
  if (path != AttachPath::kPlugin) return opts;
  opts.erase("device_id");
  if (pol.arena.any()) {
    return Status::InvalidArg(
        "runtime policy " + pol.source +
        ": arena: options (max_mem, initial_chunk_size_bytes, ...) cannot take effect on the "
        "plugin CUDA provider path of ONNX Runtime 1.29; remove them and size the arena with "
        "cuda.gpu_mem_limit / cuda.arena_extend_strategy, or use attach: classic with a GPU "
        "build of the core");
  }
  return opts;
}

// TensorRT's options for this model: precision (INT8 only behind its gate), engine key and
// directory; refuses a missing engine artifact in production unless on-node builds are allowed.
Result<std::map<std::string, std::string>> TrtOptionsFor(SessionFactory::Impl& f,
                                                         const std::string& model_path,
                                                         const OpenOptions& options,
                                                         SessionReport* rep) {
  const RuntimePolicy& pol = f.policy;
  std::string precision = pol.tensorrt.fp16 ? "fp16" : "fp32";
  if (pol.tensorrt.int8) {
    if (options.int8_gate_passed) {
      precision = "int8";
    } else {
      rep->notes.push_back(
          "tensorrt.int8 requested but the INT8 accuracy gate has not passed for this model: "
          "running " +
          precision);
    }
  }
  GpuIdentity gpu;
  {
    std::lock_guard<std::mutex> lock(f.gpu_mu);
    if (!f.gpu) f.gpu = QueryGpuIdentity(f.loader, pol.cuda.device_id);
    if (!f.gpu->ok()) return Status::Unavailable(f.gpu->status().message());
    gpu = f.gpu->value();
  }
  auto sha = common::Sha256File(model_path);
  if (!sha.ok()) return sha.status();
  rep->model_sha256 = *sha;
  const EngineKeyInputs key =
      MakeEngineKeyInputs(f.matrix_fingerprint, gpu, *sha, precision, options.profile_min,
                          options.profile_opt, options.profile_max);
  rep->engine_key = EngineKey(key);
  rep->precision = precision;
  const std::string root = ResolveEngineDir(pol.tensorrt.engine_dir);
  rep->engine_dir = root + "/" + rep->engine_key;
  if (!EngineArtifactPresent(root, rep->engine_key) && !options.build_engines) {
    if (pol.profile == Profile::kProduction && !pol.tensorrt.allow_on_node_build) {
      return Status::Unavailable(
          "TensorRT engine artifact missing for " + model_path + ": no " + rep->engine_dir +
          "/manifest.json for key " + rep->engine_key +
          " (an on-node build would hide drift and inflate cold start); run `truegreen "
          "engines build` for this matrix, GPU, model, precision and shapes, or set "
          "tensorrt.allow_on_node_build: true");
    }
    rep->notes.push_back("TensorRT engine artifact missing: building on node into " +
                         rep->engine_dir);
  }
  std::error_code ec;
  std::filesystem::create_directories(rep->engine_dir, ec);
  return TrtProviderOptions(pol.tensorrt, pol.cuda.device_id, precision, rep->engine_dir, options);
}

// Step 2 of Open: attach the GPU providers in policy order (TensorRT before CUDA, so what
// TensorRT cannot take goes to CUDA, not to the CPU), then list what did not attach (dev) and the
// CPU provider when the policy allows it.
Status AttachProviders(SessionFactory::Impl& f, const std::string& model_path,
                       const OpenOptions& options, Ort::SessionOptions* so, Session::Impl* impl) {
  const RuntimePolicy& pol = f.policy;
  SessionReport& rep = impl->report;
  for (const auto& p : f.prepared) {
    if (options.cpu_reference) break;
    ProviderAttachment att = p.info;
    auto opts = p.info.name == "TensorrtExecutionProvider"
                    ? TrtOptionsFor(f, model_path, options, &rep)
                    : CudaOptionsFor(pol, p.info.path);
    if (!opts.ok()) return opts.status();
    att.options = *opts;
    try {
      if (p.info.path == AttachPath::kPlugin) {
        std::vector<Ort::ConstEpDevice> devs;
        for (const OrtEpDevice* d : p.ep_devices) devs.emplace_back(d);
        std::unordered_map<std::string, std::string> o(opts->begin(), opts->end());
        so->AppendExecutionProvider_V2(f.env->env(), devs, o);
      } else {
        Status st = internal::AppendClassicProvider(*so, p.info.name, *opts, &pol.arena);
        if (!st.ok()) return Status::Unavailable(st.message());
      }
    } catch (const Ort::Exception& ex) {
      return Status::Unavailable(p.info.name + ": appending provider failed: " + ex.what());
    }
    rep.providers.push_back(att);
    if (p.info.path == AttachPath::kPlugin && !impl->device_memory) {
      impl->device_memory = p.device_memory;
      impl->pinned_memory = p.pinned_memory;
    }
    impl->gpu_path = p.info.path;
    impl->device_id = pol.cuda.device_id;
  }
  for (const auto& a : f.attachments) {
    if (!a.attached) rep.providers.push_back(a);  // dev: what could not attach, and why
  }
  if (pol.allow_cpu || options.cpu_reference) {
    ProviderAttachment cpu;
    cpu.name = "CPUExecutionProvider";
    cpu.path = AttachPath::kCpu;
    cpu.attached = true;
    rep.providers.push_back(cpu);
  }
  return Status::Ok();
}

// The nodes and their providers, from the assignment API or, failing that (older ORT, or asked
// for), from the verbose "Node placements" log block; `source` says which.
std::vector<NodePlacement> ReadPlacement(const Ort::Session& session, const OpenOptions& options,
                                         const std::optional<OnnxGraphSummary>& graph,
                                         const std::vector<std::string>& logs,
                                         std::string* source) {
  std::vector<NodePlacement> nodes;
  *source = "unavailable";
  if (!options.placement_from_log) {
    try {
      nodes = PlacementFromApi(session);
      *source = "ep_graph_assignment_info";
      return nodes;
    } catch (const Ort::Exception& ex) {
      spdlog::warn("runtime: placement API unavailable ({}); using the verbose log", ex.what());
    }
  }
  nodes = ParseNodePlacementLog(logs);
  if (!nodes.empty()) *source = "verbose_log";
  // "All nodes placed on [X]" carries a count but no node list: every node of the model is on X,
  // so take names and op types from the model itself.
  const bool anonymous = std::any_of(nodes.begin(), nodes.end(),
                                     [](const NodePlacement& n) { return n.op_type.empty(); });
  const bool one_provider =
      !nodes.empty() && std::all_of(nodes.begin(), nodes.end(), [&](const NodePlacement& n) {
        return n.provider == nodes.front().provider;
      });
  if (anonymous && one_provider && graph) {
    const std::string provider = nodes.front().provider;
    nodes.clear();
    for (const auto& n : graph->nodes) nodes.push_back({n.name, n.op_type, provider});
  }
  return nodes;
}

// Step 3 of Open: the placement proof, judged against the policy. Fills rep->placement and
// rep->gpu_active.
void ProvePlacement(const RuntimePolicy& pol, const std::vector<NodePlacement>& nodes,
                    const std::string& source, const std::vector<std::string>& logs,
                    SessionReport* rep) {
  PlacementReport& pl = rep->placement;
  pl = EvaluatePlacement(nodes, pol.placement, pol.placement.enforce);
  pl.source = source;
  pl.memcpy_nodes = std::max(pl.memcpy_nodes, CountMemcpyFromLog(logs));
  if (pl.memcpy_nodes > pol.placement.max_memcpy_nodes &&
      std::none_of(pl.violations.begin(), pl.violations.end(),
                   [](const std::string& v) { return v.find("Memcpy") != std::string::npos; })) {
    pl.violations.push_back(std::to_string(pl.memcpy_nodes) +
                            " Memcpy nodes were inserted between providers; the policy allows " +
                            std::to_string(pol.placement.max_memcpy_nodes));
  }
  if (source == "unavailable") {
    pl.violations.push_back("ONNX Runtime reported no node placement: placement cannot be proven");
  }
  for (const auto& [prov, count] : pl.nodes_per_provider) {
    if (prov != "CPUExecutionProvider" && count > 0) rep->gpu_active = true;
  }
  if (pol.profile == Profile::kProduction && !rep->gpu_active &&
      pl.total_nodes > pl.cpu_shape_nodes) {
    pl.violations.push_back("no node was assigned to a GPU provider");
  }
  pl.ok = !pol.placement.enforce || pl.violations.empty();
}

// The one definition of degraded (see SessionReport::degraded): work that production requires on
// the GPU ran on the CPU. Judged with the production placement rules whatever the profile, so a dev
// session entirely on the GPU is not degraded, and one whose Conv fell back to the CPU is.
void MarkDegraded(bool placement_known, const std::vector<NodePlacement>& nodes,
                  SessionReport* rep) {
  if (rep->degraded || rep->profile == "production" || !placement_known) return;
  const PlacementReport prod =
      EvaluatePlacement(nodes, ProductionPolicy().placement, /*enforce=*/true);
  if (!rep->gpu_active) {
    rep->degraded = true;
    rep->degraded_reason = "dev profile: no node ran on a GPU provider";
  } else if (!prod.cpu_compute_ops.empty()) {
    rep->degraded = true;
    rep->degraded_reason = "dev profile: " + std::to_string(prod.cpu_compute_ops.size()) +
                           " node(s) that production requires on the GPU ran on the CPU (first: " +
                           prod.cpu_compute_ops.front() + ")";
  }
}

// The model's graph: its external-data references are checked before ORT reads them (ORT
// turns an offset or length near 2^63 into an integer-overflow exception, or tries to read it);
// it is kept when a check needs it (attention analysis, placement from the log), and then a
// graph that cannot be read is an error; otherwise ORT's own load reports a malformed file.
Status ReadGraphForChecks(const std::string& model_path, const std::string* bytes,
                          const OpenOptions& options, std::optional<OnnxGraphSummary>* graph,
                          SessionReport* rep) {
  auto g = bytes == nullptr ? ReadOnnxGraph(model_path)
                            : ParseOnnxGraph(reinterpret_cast<const std::uint8_t*>(bytes->data()),
                                             bytes->size(), model_path + " (attention rewritten)");
  if (g.ok()) TG_RETURN_IF_ERROR(CheckExternalData(*g, model_path));
  if (options.attention_check || options.placement_from_log) {
    if (!g.ok()) return g.status();
    *graph = std::move(g).value();
    if (options.attention_check) rep->attention = AnalyzeAttention(**graph);
  }
  return Status::Ok();
}

// Creates the ORT session into impl->session while capturing what ORT logs for `logid` (the
// placement log) into *logs; maps ORT's refusals to our codes.
Status CreateOrtSession(internal::OrtEnvironment& env, const std::string& model_path,
                        const std::string* bytes, Ort::SessionOptions& so, const std::string& logid,
                        Session::Impl* impl, std::vector<std::string>* logs) {
  env.BeginCapture(logid);
  try {
    if (bytes == nullptr) {
      impl->session = std::make_unique<Ort::Session>(env.env(), model_path.c_str(), so);
    } else {
      // A rewritten model in memory: its external data stays beside the original file.
      const std::string folder = std::filesystem::path(model_path).parent_path().string();
      so.AddConfigEntry(kOrtSessionOptionsModelExternalInitializersFileFolderPath,
                        folder.empty() ? "." : folder.c_str());
      impl->session = std::make_unique<Ort::Session>(env.env(), bytes->data(), bytes->size(), so);
    }
  } catch (const Ort::Exception& ex) {
    env.EndCapture(logid);
    const std::string msg = ex.what();
    if (msg.find("fallback to CPU EP has been explicitly disabled") != std::string::npos) {
      return Status::Unavailable("placement: " + model_path + ": " + msg);
    }
    // ORT reports a model it refuses to load (unsupported IR version, cyclic graph, external
    // data outside the model folder or of an impossible length such as 2^63-1, which its
    // SafeInt checks turn into a runtime exception) as ORT_FAIL or ORT_RUNTIME_EXCEPTION; that
    // is bad input (exit 2), not our bug.
    const bool load_error = msg.rfind("Load model from", 0) == 0 ||
                            msg.find("External data") != std::string::npos ||
                            msg.find("external data") != std::string::npos ||
                            msg.find("invalid model") != std::string::npos;
    if ((ex.GetOrtErrorCode() == ORT_FAIL && load_error) ||
        ex.GetOrtErrorCode() == ORT_RUNTIME_EXCEPTION) {
      return Status::InvalidArg(model_path + ": ONNX Runtime cannot load this model: " + msg);
    }
    return FromOrtException(ex, "creating session for " + model_path);
  } catch (const std::exception& ex) {
    // Anything else thrown through the C++ API (std::bad_alloc for a tensor the file claims to
    // hold, std::length_error) is converted here, at the library's boundary.
    env.EndCapture(logid);
    return Status::InvalidArg(model_path + ": ONNX Runtime cannot load this model: " + ex.what());
  }
  *logs = env.EndCapture(logid);
  return Status::Ok();
}

// The UNAVAILABLE status for a violated placement policy, one violation per line.
Status PlacementViolation(const PlacementReport& pl, const std::string& model_path) {
  std::string v;
  for (const auto& x : pl.violations) v += "\n  - " + x;
  return Status::Unavailable("placement policy violated for " + model_path + ":" + v);
}

}  // namespace

Result<Session> SessionFactory::OpenModel(const std::string& model_path, const OpenOptions& options,
                                          const std::string* bytes, Status* violation) const {
  const auto t0 = std::chrono::steady_clock::now();
  const RuntimePolicy& pol = impl_->policy;
  *violation = Status::Ok();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(model_path, ec)) {
    return Status::NotFound("model file " + model_path + " does not exist or is not a file");
  }

  auto impl = std::make_unique<Session::Impl>();
  impl->env = impl_->env;
  SessionReport& rep = impl->report;
  rep.model_path = model_path;
  rep.profile = std::string(ProfileName(pol.profile));
  rep.degraded = impl_->degraded;
  rep.degraded_reason = impl_->degraded_reason;
  rep.ort_version = impl_->env->load().version;

  std::optional<OnnxGraphSummary> graph;
  TG_RETURN_IF_ERROR(ReadGraphForChecks(model_path, bytes, options, &graph, &rep));

  Ort::SessionOptions so;
  const std::string logid = impl_->env->NewLogId();
  TG_RETURN_IF_ERROR(ApplySessionOptions(pol, options, logid, &so));
  TG_RETURN_IF_ERROR(AttachProviders(*impl_, model_path, options, &so, impl.get()));

  std::vector<std::string> logs;
  TG_RETURN_IF_ERROR(
      CreateOrtSession(*impl_->env, model_path, bytes, so, logid, impl.get(), &logs));

  std::vector<NodePlacement> nodes;
  std::string source = "unavailable";
  if (options.placement_proof) {
    nodes = ReadPlacement(*impl->session, options, graph, logs, &source);
    ProvePlacement(pol, nodes, source, logs, &rep);
  } else {
    rep.gpu_active = !impl_->prepared.empty() && !options.cpu_reference;
  }
  MarkDegraded(source != "unavailable", nodes, &rep);

  TG_RETURN_IF_ERROR(ReadModelIo(*impl->session, &rep.inputs, &rep.outputs));
  impl->io_binding = pol.session.io_binding;
  rep.io_mode = !pol.session.io_binding ? "plain" : (rep.gpu_active ? "device" : "host");
  impl->use_device = rep.gpu_active && !impl_->prepared.empty();
  impl->shrink_arena = pol.arena.shrink_after_run;
  TG_RETURN_IF_ERROR(impl->Init());
  rep.create_ms = common::MsSince(t0);

  if (rep.degraded) {
    spdlog::warn("runtime: DEGRADED session for {}: {}", model_path, rep.degraded_reason);
  }
  if (!rep.placement.ok) *violation = PlacementViolation(rep.placement, model_path);
  Session s;
  s.impl_ = std::move(impl);
  return s;
}

// ---------------------------------------------------------------------------------------------
// Session

Session::Session() = default;
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const std::vector<TensorInfo>& Session::inputs() const { return impl_->report.inputs; }
const std::vector<TensorInfo>& Session::outputs() const { return impl_->report.outputs; }
const SessionReport& Session::report() const { return impl_->report; }

IoStats Session::io_stats() const {
  IoStats s;
  s.runs = impl_->runs.load(std::memory_order_relaxed);
  s.h2d_bytes = impl_->h2d.load(std::memory_order_relaxed);
  s.d2h_bytes = impl_->d2h.load(std::memory_order_relaxed);
  return s;
}

Status Session::Run(const std::vector<NamedTensor>& inputs,
                    const std::vector<std::string>& output_names, std::vector<Tensor>* out,
                    RunMode mode) const {
  if (!impl_ || !impl_->session) return Status::Internal("Run on an empty Session");
  return impl_->Run(inputs, output_names, out, mode);
}

}  // namespace tg::runtime
