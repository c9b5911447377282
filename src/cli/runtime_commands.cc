// `truegreen run` and `truegreen engines build|verify`: the runtime layer's commands.
//
// run: opens a model through the policy-driven SessionFactory, prints the placement summary, the
// latency distribution and throughput (runs/s, items/s for the leading batch dimension) of timed
// runs after --warmup untimed ones, and output checksums. Timing goes on until both --runs (default
// 100) runs and --min-time (default 2 s) have passed, so the percentiles rest on enough samples.
// Random inputs take their dynamic dimensions from --shape; one left unset is 1, with a warning.
// Exit codes: 0 ok, 2 usage/config, 3 no GPU path or placement violation, 1 internal.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/integrity_canary.h"
#include "cli/output.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/file_util.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/outcome.h"
#include "common/percentile.h"
#include "runtime/engines.h"
#include "runtime/onnx_graph.h"
#include "runtime/session.h"
#include "runtime/startup.h"

namespace tg::cli {
namespace {

using common::Json;
using common::Status;
using runtime::Tensor;

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;  // name=file.npy | name=random
  std::vector<std::string> shapes;  // name:1x4x64x64 (dynamic dimensions of random inputs)
  int runs = 100;                   // at least this many timed runs ...
  double min_time_s = 2.0;          // ... and at least this long, whichever ends later
  int warmup = 1;
  std::string mode = "default";  // default | plain | bound
  bool placement_from_log = false;
  bool no_fuse_attention = false;
  std::string save_outputs;  // directory for output .npy files
  double max_p99_ms = 0;     // performance gate: p99 latency above this is exit 5 (0: no gate)
};

// The latency record is bounded whatever --min-time asks for (8 MB of samples).
constexpr int kMaxTimedRuns = 1000000;
constexpr double kMaxMinTimeS = 3600.0;

// Every --shape flag (each "name:1x4x64x64", or several joined by ','), merged.
common::Result<std::map<std::string, std::vector<std::int64_t>>> ParseShapeFlags(
    const std::vector<std::string>& specs) {
  std::map<std::string, std::vector<std::int64_t>> out;
  for (const auto& spec : specs) {
    auto parsed = runtime::ParseShapeList(spec);
    if (!parsed.ok() || parsed->empty()) {
      return Status::InvalidArg(
          "--shape '" + spec +
          "': " + (parsed.ok() ? "empty; name:1x4x64x64 is required" : parsed.status().message()));
    }
    for (auto& [name, dims] : *parsed) {
      if (!out.emplace(name, dims).second) {
        return Status::InvalidArg("--shape names input '" + name + "' twice");
      }
    }
  }
  return out;
}

// The shape a random input is fed with: the --shape given for it (which must keep the model's
// rank and fixed dimensions), else the model's with every dynamic dimension set to 1, which is
// reported in `warnings` (a batch-1, length-1 run rarely measures the shape that matters).
common::Result<std::vector<std::int64_t>> InputShape(
    const runtime::TensorInfo& info, const std::map<std::string, std::vector<std::int64_t>>& given,
    std::vector<std::string>* warnings) {
  const auto it = given.find(info.name);
  if (it == given.end()) {
    std::vector<std::int64_t> shape = info.shape;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] >= 0) continue;
      shape[d] = 1;
      const std::string sym = d < info.dim_names.size() && !info.dim_names[d].empty()
                                  ? " ('" + info.dim_names[d] + "')"
                                  : "";
      warnings->push_back("input '" + info.name + "' dimension " + std::to_string(d) + sym +
                          " is dynamic and defaults to 1; give --shape " + info.name + ":" +
                          runtime::ShapeToString(info.shape) + " with real sizes to measure them");
    }
    return shape;
  }
  const std::vector<std::int64_t>& want = it->second;
  std::string why;
  if (want.size() != info.shape.size()) {
    why = "rank " + std::to_string(want.size()) + " but the model's input has rank " +
          std::to_string(info.shape.size());
  }
  for (std::size_t d = 0; why.empty() && d < want.size(); ++d) {
    if (want[d] < 1) why = "dimension " + std::to_string(d) + " is 0; sizes must be >= 1";
    if (info.shape[d] >= 0 && want[d] != info.shape[d]) {
      why = "dimension " + std::to_string(d) + " is " + std::to_string(want[d]) +
            " but the model fixes it at " + std::to_string(info.shape[d]);
    }
  }
  if (!why.empty()) {
    return Status::InvalidArg("--shape " + info.name + ":" + runtime::ShapeToString(want) + ": " +
                              why + " (model input " + runtime::ShapeToString(info.shape) +
                              ", -1 = dynamic)");
  }
  return want;
}

// The inputs `run` reads (--model, --input files, --shape syntax), checked before the startup
// chain so a missing or unreadable file is a usage error (exit 2) whatever the node.
Status CheckRunInputs(const RunArgs& a) {
  TG_RETURN_IF_ERROR(common::CheckInputPath(a.model, "--model"));
  // The declared input shapes, read from the file: ONNX Runtime would take a negative size as a
  // symbolic one and run. A file this reader cannot parse is left to ONNX Runtime to judge.
  if (auto graph = runtime::ReadOnnxGraph(a.model); graph.ok()) {
    TG_RETURN_IF_ERROR(runtime::CheckDeclaredInputDims(*graph, a.model).WithPrefix("--model"));
  }
  std::set<std::string> names;
  for (const auto& spec : a.inputs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArg("--input '" + spec + "' is not of the form name=file.npy|random");
    }
    if (!names.insert(spec.substr(0, eq)).second) {
      return Status::InvalidArg("--input names input '" + spec.substr(0, eq) +
                                "' twice (one --input per model input)");
    }
    const std::string src = spec.substr(eq + 1);
    if (src != "random") {
      TG_RETURN_IF_ERROR(common::CheckInputPath(src, "--input " + spec.substr(0, eq)));
    }
  }
  return ParseShapeFlags(a.shapes).status();
}

common::Result<std::vector<runtime::NamedTensor>> BuildInputs(const runtime::Session& s,
                                                              const RunArgs& a,
                                                              std::vector<std::string>* warnings) {
  std::map<std::string, std::string> given;
  for (const auto& spec : a.inputs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArg("--input '" + spec + "' is not of the form name=file.npy|random");
    }
    given[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  TG_ASSIGN_OR_RETURN(auto shapes, ParseShapeFlags(a.shapes));
  std::vector<runtime::NamedTensor> out;
  std::uint64_t seed = 1;
  for (const auto& info : s.inputs()) {
    auto it = given.find(info.name);
    std::string src = it == given.end() ? "random" : it->second;
    if (it != given.end()) given.erase(it);
    if (src == "random") {
      TG_ASSIGN_OR_RETURN(std::vector<std::int64_t> shape, InputShape(info, shapes, warnings));
      auto t = runtime::RandomTensor(info.dtype, shape, seed++);
      if (!t.ok()) return t.status().WithPrefix("input '" + info.name + "'");
      out.push_back({info.name, std::move(t).value()});
    } else {
      // A fully static input shape bounds what the file may hold: read no more than that.
      std::uint64_t expected = runtime::DataTypeSize(info.dtype);
      for (std::int64_t d : info.shape) {
        if (d < 0 || __builtin_mul_overflow(expected, static_cast<std::uint64_t>(d), &expected)) {
          expected = 0;  // dynamic or absurd: LoadNpy's own cap applies
          break;
        }
      }
      auto t = runtime::LoadNpy(src, expected);
      if (!t.ok()) return t.status().WithPrefix("--input " + info.name);
      const auto sh = shapes.find(info.name);
      if (sh != shapes.end() && sh->second != t->shape()) {
        return Status::InvalidArg("--shape " + info.name + ":" +
                                  runtime::ShapeToString(sh->second) + " disagrees with " + src +
                                  ", whose shape is " + runtime::ShapeToString(t->shape()));
      }
      out.push_back({info.name, std::move(t).value()});
    }
    shapes.erase(info.name);
  }
  if (!given.empty()) {
    return Status::InvalidArg("--input names '" + given.begin()->first +
                              "', which is not an input of " + a.model);
  }
  if (!shapes.empty()) {
    return Status::InvalidArg("--shape names '" + shapes.begin()->first +
                              "', which is not an input of " + a.model);
  }
  return out;
}

struct Measurement {
  std::vector<double> ms;  // one latency per timed run
  double wall_s = 0.0;     // the whole timed loop, for throughput
  runtime::IoStats before, after;
};

// Timed runs until both --runs and --min-time are reached (or kMaxTimedRuns): percentiles need
// samples (p99 of 10 runs is the maximum), and a short run on a GPU still warming its clocks
// would report the warm-up.
common::Result<Measurement> Measure(runtime::Session& session,
                                    const std::vector<runtime::NamedTensor>& inputs,
                                    runtime::RunMode mode, const RunArgs& a,
                                    std::vector<Tensor>* outputs) {
  for (int i = 0; i < a.warmup; ++i) {
    TG_RETURN_IF_ERROR(session.Run(inputs, {}, outputs, mode));
  }
  Measurement m;
  m.ms.reserve(static_cast<std::size_t>(std::min(a.runs, kMaxTimedRuns)));
  m.before = session.io_stats();
  const auto start = std::chrono::steady_clock::now();
  const auto min_time = std::chrono::duration<double>(a.min_time_s);
  auto now = start;
  while (m.ms.size() < static_cast<std::size_t>(kMaxTimedRuns) &&
         (m.ms.size() < static_cast<std::size_t>(a.runs) || now - start < min_time)) {
    const auto t0 = std::chrono::steady_clock::now();
    Status st = session.Run(inputs, {}, outputs, mode);
    now = std::chrono::steady_clock::now();
    if (!st.ok()) return st;
    m.ms.push_back(std::chrono::duration<double, std::milli>(now - t0).count());
  }
  m.wall_s = std::chrono::duration<double>(now - start).count();
  m.after = session.io_stats();
  return m;
}

// Items per run: the leading (batch) dimension of the first input that has one.
std::int64_t BatchOf(const std::vector<runtime::NamedTensor>& inputs) {
  for (const auto& in : inputs) {
    if (!in.tensor.shape().empty()) return in.tensor.shape()[0];
  }
  return 1;
}

Json LatencyJson(const RunArgs& a, const Measurement& m) {
  std::vector<double> sorted = m.ms;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double v : m.ms) mean += v;
  mean /= static_cast<double>(m.ms.size());
  return {{"runs", m.ms.size()},
          {"min_runs", a.runs},
          {"min_time_s", a.min_time_s},
          {"warmup", a.warmup},
          {"mean_ms", mean},
          {"min_ms", sorted.front()},
          {"p50_ms", common::PercentileOfSorted(sorted, 50)},
          {"p90_ms", common::PercentileOfSorted(sorted, 90)},
          {"p99_ms", common::PercentileOfSorted(sorted, 99)},
          {"max_ms", sorted.back()}};
}

Json ThroughputJson(const Measurement& m, std::int64_t batch) {
  const double runs_per_s = m.wall_s > 0 ? static_cast<double>(m.ms.size()) / m.wall_s : 0.0;
  return {{"wall_s", m.wall_s},
          {"runs_per_s", runs_per_s},
          {"batch", batch},
          {"items_per_s", runs_per_s * static_cast<double>(batch)}};
}

// Output checksums (and .npy files with --save-outputs); the combined checksum in *checksum.
common::Result<Json> OutputsJson(const runtime::Session& session,
                                 const std::vector<Tensor>& outputs, const RunArgs& a,
                                 std::string* checksum) {
  std::string combined;
  Json outs = Json::array();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = session.outputs()[i].name;
    const std::string sum = outputs[i].Checksum();
    combined += sum;
    outs.push_back({{"name", name},
                    {"dtype", runtime::DataTypeName(outputs[i].dtype())},
                    {"shape", outputs[i].shape()},
                    {"sha256", sum}});
    if (!a.save_outputs.empty()) {
      // The file name comes from the model: never let it leave the --save-outputs folder.
      if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
        return Status::InvalidArg("--save-outputs: output name '" + name +
                                  "' of the model is not usable as a file name");
      }
      TG_RETURN_IF_ERROR(common::WriteFileAtomic(a.save_outputs + "/" + name + ".npy",
                                                 runtime::EncodeNpy(outputs[i])));
    }
  }
  *checksum = common::Sha256Hex(combined.data(), combined.size());
  return outs;
}

void PrintRunText(const Json& latency, const Json& tput, const Json& io, const Json& outs,
                  const std::string& checksum, bool degraded) {
  char line[320];
  std::snprintf(line, sizeof(line),
                "latency:    %d runs in %.2f s (warm-up %d excluded): mean %.3f ms, p50 %.3f, "
                "p90 %.3f, p99 %.3f, min %.3f, max %.3f\n",
                latency["runs"].get<int>(), tput["wall_s"].get<double>(),
                latency["warmup"].get<int>(), latency["mean_ms"].get<double>(),
                latency["p50_ms"].get<double>(), latency["p90_ms"].get<double>(),
                latency["p99_ms"].get<double>(), latency["min_ms"].get<double>(),
                latency["max_ms"].get<double>());
  std::cout << line;
  std::snprintf(line, sizeof(line), "throughput: %.2f runs/s, %.2f items/s (batch %lld)\n",
                tput["runs_per_s"].get<double>(), tput["items_per_s"].get<double>(),
                static_cast<long long>(tput["batch"].get<std::int64_t>()));
  std::cout << line;
  std::snprintf(line, sizeof(line),
                "copies:     %.0f B host->device, %.0f B device->host per run\n",
                io["h2d_bytes_per_run"].get<double>(), io["d2h_bytes_per_run"].get<double>());
  std::cout << line;
  for (const auto& o : outs) {
    std::cout << "output:     " << o["name"].get<std::string>() << " "
              << o["dtype"].get<std::string>()
              << common::WriteJson(o["shape"], -1, common::JsonNotice::kNone) << " sha256 "
              << o["sha256"].get<std::string>() << "\n";
  }
  std::cout << "checksum:   " << checksum << (degraded ? "  (DEGRADED)" : "") << "\n";
}

// The timed part of `run` on an open session: inputs, measurement, report.
int MeasureAndReport(const GlobalOptions& g, const RunArgs& a, runtime::Session& session,
                     const runtime::StartupReport& startup) {
  const runtime::SessionReport& rep = session.report();
  std::vector<std::string> warnings;
  auto inputs = BuildInputs(session, a, &warnings);
  if (!inputs.ok()) return ReportError(inputs.status());
  for (const auto& w : warnings) spdlog::warn("run: {}", w);
  const runtime::RunMode mode = a.mode == "plain"   ? runtime::RunMode::kPlain
                                : a.mode == "bound" ? runtime::RunMode::kIoBinding
                                                    : runtime::RunMode::kDefault;
  std::vector<Tensor> outputs;
  auto m = Measure(session, *inputs, mode, a, &outputs);
  if (!m.ok()) return ReportError(m.status());
  std::string checksum;
  auto outs = OutputsJson(session, outputs, a, &checksum);
  if (!outs.ok()) return ReportError(outs.status());
  const double runs = static_cast<double>(m->ms.size());
  const Json latency = LatencyJson(a, *m);
  const Json tput = ThroughputJson(*m, BatchOf(*inputs));
  const Json io = {
      {"h2d_bytes_per_run", static_cast<double>(m->after.h2d_bytes - m->before.h2d_bytes) / runs},
      {"d2h_bytes_per_run", static_cast<double>(m->after.d2h_bytes - m->before.d2h_bytes) / runs}};
  // The performance gate (README exit 5): judged after the results are printed, never instead.
  const double p99 = latency["p99_ms"].get<double>();
  const bool gate_failed = a.max_p99_ms > 0 && p99 > a.max_p99_ms;
  const int rc = common::ExitCodeFromOutcome(gate_failed ? common::Outcome::kPerformanceFailed
                                                         : common::Outcome::kOk);
  if (g.json) {
    Json j = {{"ok", !gate_failed},         {"command", "run"},
              {"degraded", rep.degraded},   {"session", runtime::SessionReportToJson(rep)},
              {"warnings", warnings},       {"latency", latency},
              {"throughput", tput},         {"io", io},
              {"outputs", *outs},           {"checksum", checksum},
              {"startup", startup.ToJson()}};
    if (a.max_p99_ms > 0) j["gate"] = {{"max_p99_ms", a.max_p99_ms}, {"passed", !gate_failed}};
    std::cout << common::WriteJson(j, 2) << "\n";
    return rc;
  }
  std::cout << runtime::FormatSessionReport(rep) << startup.Format();
  PrintRunText(latency, tput, io, *outs, checksum, rep.degraded);
  if (a.max_p99_ms > 0) {
    char line[256];
    std::snprintf(line, sizeof(line), "gate:       p99 %.3f ms %s --max-p99-ms %.3f: %s\n", p99,
                  gate_failed ? ">" : "<=", a.max_p99_ms,
                  gate_failed ? "FAILED (exit 5)" : "passed");
    std::cout << line;
  }
  return rc;
}

int RunCommand(const GlobalOptions& g, const RunArgs& a) {
  auto policy = runtime::LoadRuntimePolicy(g.policy);
  if (!policy.ok()) return ReportError(policy.status());
  if (a.runs < 1 || a.runs > kMaxTimedRuns || a.warmup < 0 || !(a.min_time_s >= 0.0) ||
      a.min_time_s > kMaxMinTimeS) {
    return ReportError(Status::InvalidArg("--runs must be in 1.." + std::to_string(kMaxTimedRuns) +
                                          ", --warmup >= 0 and --min-time in 0..3600 seconds"));
  }
  if (Status st = CheckRunInputs(a); !st.ok()) return ReportError(st);
  // The startup chain: snapshot -> admit (production refuses drift, exit 4) -> factory; then
  // this command's own open (for diagnosis: a violation still shows the report) -> canary.
  runtime::StartupReport startup;
  runtime::StartupOptions so;
  auto chain = StartCommandChain(g, *policy, &so, &startup);
  if (!chain.ok()) return ReportChainError(g, chain.status(), startup);
  const runtime::SessionFactory* factory = &chain->factory();
  runtime::OpenOptions oo;
  oo.placement_from_log = a.placement_from_log;
  oo.fuse_attention = !a.no_fuse_attention;
  Status violation;
  const auto open0 = std::chrono::steady_clock::now();
  auto session = factory->OpenForDiagnosis(a.model, oo, &violation);
  runtime::StartupChain::RecordStep(&startup, "open", common::MsSince(open0),
                                    session.ok() ? violation : session.status(), true, a.model);
  if (!session.ok()) return ReportChainError(g, session.status(), startup);
  const runtime::SessionReport& rep = session->report();
  if (!violation.ok()) {
    // The placement evidence goes with the error: in the error object, or as text before it.
    if (!g.json) std::cout << runtime::FormatSessionReport(rep) << std::flush;
    if (!g.json) StderrLines("info", startup.Format());
    return ReportError(violation, Json{{"session", runtime::SessionReportToJson(rep)},
                                       {"startup", startup.ToJson()}});
  }
  // Warm-up stays this command's own --warmup (its runs are excluded from the latency figures).
  if (Status st = chain->Finish({a.model}, so, &startup); !st.ok()) {
    return ReportChainError(g, st, startup);
  }
  return MeasureAndReport(g, a, *session, startup);
}

// --- engines ---------------------------------------------------------------------------------

struct EngineArgs {
  std::string matrix;
  std::string model;
  std::string shapes, min_shapes, opt_shapes, max_shapes;
  std::string config;
  std::string gpu_name, compute_capability;
  std::string precision;
};

common::Status ResolveProfiles(const EngineArgs& a, runtime::OpenOptions* oo) {
  // Each refusal names the flag it came from.
  auto parse = [](const char* flag, const std::string& text,
                  std::map<std::string, std::vector<std::int64_t>>* out) {
    auto r = runtime::ParseShapeList(text);
    if (!r.ok()) return Status::InvalidArg(std::string(flag) + ": " + r.status().message());
    *out = *r;
    return Status::Ok();
  };
  if (!a.shapes.empty()) {
    TG_RETURN_IF_ERROR(parse("--shapes", a.shapes, &oo->profile_min));
    oo->profile_opt = oo->profile_max = oo->profile_min;
  }
  if (!a.min_shapes.empty() || !a.opt_shapes.empty() || !a.max_shapes.empty()) {
    if (a.min_shapes.empty() || a.opt_shapes.empty() || a.max_shapes.empty()) {
      return Status::InvalidArg("--min-shapes, --opt-shapes and --max-shapes go together");
    }
    TG_RETURN_IF_ERROR(parse("--min-shapes", a.min_shapes, &oo->profile_min));
    TG_RETURN_IF_ERROR(parse("--opt-shapes", a.opt_shapes, &oo->profile_opt));
    TG_RETURN_IF_ERROR(parse("--max-shapes", a.max_shapes, &oo->profile_max));
  }
  return Status::Ok();
}

int EnginesBuild(const GlobalOptions& g, const EngineArgs& a) {
  auto policy = runtime::LoadRuntimePolicy(g.policy);
  if (!policy.ok()) return ReportError(policy.status());
  if (!a.matrix.empty()) policy->matrix_path = a.matrix;
  runtime::OpenOptions oo;
  oo.build_engines = true;
  Status st = ResolveProfiles(a, &oo);
  // The model is checked before ONNX Runtime and the providers: a missing one is exit 2 on
  // every node, not the refusal of a node without TensorRT.
  if (st.ok()) st = common::CheckInputPath(a.model, "--model");
  if (!st.ok()) return ReportError(st);
  auto ort = runtime::OrtRuntime::Open(g.Loader());
  if (!ort.ok()) return ReportError(Status::Unavailable(ort.status().message()));
  auto factory = runtime::SessionFactory::Create(*policy, **ort);
  if (!factory.ok()) return ReportError(factory.status());
  bool trt = false;
  for (const auto& p : factory->prepared_providers()) {
    trt = trt || (p.name == "TensorrtExecutionProvider" && p.attached);
  }
  if (!trt) {
    return ReportError(Status::Unavailable("the TensorRT provider is not attached under policy " +
                                           policy->source +
                                           ": engines cannot be built on this node"));
  }
  auto session = factory->Open(a.model, oo);
  if (!session.ok()) return ReportError(session.status());
  // TensorRT builds dynamic-shape engines at the first run: run once at the opt shapes.
  std::vector<runtime::NamedTensor> inputs;
  std::uint64_t seed = 1;
  for (const auto& info : session->inputs()) {
    std::vector<std::int64_t> shape = info.shape;
    auto it = oo.profile_opt.find(info.name);
    if (it != oo.profile_opt.end()) shape = it->second;
    for (auto& d : shape) d = d < 0 ? 1 : d;
    auto t = runtime::RandomTensor(info.dtype, shape, seed++);
    if (!t.ok()) return ReportError(t.status());
    inputs.push_back({info.name, std::move(t).value()});
  }
  std::vector<Tensor> out;
  st = session->Run(inputs, {}, &out);
  if (!st.ok()) return ReportError(st);
  const auto& rep = session->report();
  auto fp = runtime::PolicyMatrixFingerprint(policy->matrix_path,
                                             policy->profile == runtime::Profile::kProduction);
  if (!fp.ok()) return ReportError(fp.status());
  auto gpu = runtime::QueryGpuIdentity(g.Loader(), policy->cuda.device_id);
  if (!gpu.ok()) return ReportError(gpu.status());
  const auto key = runtime::MakeEngineKeyInputs(*fp, *gpu, rep.model_sha256, rep.precision,
                                                oo.profile_min, oo.profile_opt, oo.profile_max);
  const std::string root = runtime::ResolveEngineDir(policy->tensorrt.engine_dir);
  st = runtime::WriteEngineManifest(root, rep.engine_key, key);
  if (!st.ok()) return ReportError(st);
  Json j = {{"ok", true},
            {"command", "engines build"},
            {"key", rep.engine_key},
            {"dir", rep.engine_dir},
            {"inputs", key.ToJson()}};
  if (g.json) {
    std::cout << common::WriteJson(j, 2) << "\n";
  } else {
    std::cout << "built " << rep.engine_dir << " (key " << rep.engine_key << ")\n";
  }
  return common::kExitOk;
}

// What `engines verify --config` asks for: the engine directory, the precision and the models.
struct VerifyConfig {
  std::string engine_dir;
  std::string precision;
  YAML::Node models;
};

Status ReadVerifyConfig(const EngineArgs& a, const runtime::RuntimePolicy& policy,
                        VerifyConfig* cfg) {
  TG_ASSIGN_OR_RETURN(YAML::Node doc, common::LoadYamlFile(a.config));
  TG_ASSIGN_OR_RETURN(common::YamlMap root, common::YamlMap::From(doc, a.config, ""));
  cfg->engine_dir = policy.tensorrt.engine_dir;
  cfg->precision = a.precision.empty() ? (policy.tensorrt.fp16 ? "fp16" : "fp32") : a.precision;
  TG_RETURN_IF_ERROR(root.Get("engine_dir", &cfg->engine_dir));
  TG_RETURN_IF_ERROR(root.Get("precision", &cfg->precision));
  if (cfg->precision != "fp32" && cfg->precision != "fp16" && cfg->precision != "int8") {
    return root.FieldError("precision", "fp32 | fp16 | int8");
  }
  TG_ASSIGN_OR_RETURN(cfg->models, root.GetSequence("models", true));
  return root.Finish();
}

// The GPU the engine keys are for: the flags when given (both or neither), else the device's own.
common::Result<runtime::GpuIdentity> EngineGpuIdentity(const GlobalOptions& g, const EngineArgs& a,
                                                       const runtime::RuntimePolicy& policy) {
  runtime::GpuIdentity gpu{a.gpu_name, a.compute_capability};
  if (gpu.name.empty() != gpu.compute_capability.empty()) {
    return Status::InvalidArg("--gpu-name and --compute-capability go together");
  }
  if (gpu.name.empty()) {
    auto q = runtime::QueryGpuIdentity(g.Loader(), policy.cuda.device_id);
    if (!q.ok()) {
      return q.status().WithPrefix(
          "cannot compute engine keys without the GPU identity "
          "(pass --gpu-name and --compute-capability)");
    }
    gpu = *q;
  }
  return gpu;
}

// What every engine key of one verification shares.
struct VerifyKeyContext {
  std::string fingerprint;
  runtime::GpuIdentity gpu;
  std::string precision;
  std::string dir;
};

// One entry of the config's models: the model file, its sha256 and its parsed shape sets.
struct VerifyModel {
  std::string model;
  std::string sha;
  std::vector<std::string> sets;  // as written ("" when none)
  std::vector<std::map<std::string, std::vector<std::int64_t>>> shapes;
};

// Reads and checks models[index] (fields, shape sets, the model file), before anything that
// depends on the machine: a bad entry is a usage error whatever the node.
common::Result<VerifyModel> ReadVerifyModel(const EngineArgs& a, const YAML::Node& node,
                                            std::size_t index) {
  TG_ASSIGN_OR_RETURN(
      common::YamlMap m,
      common::YamlMap::From(node, a.config, "models[" + std::to_string(index) + "]"));
  VerifyModel v;
  TG_RETURN_IF_ERROR(m.Get("model", &v.model, true));
  TG_RETURN_IF_ERROR(m.Get("shapes", &v.sets));
  TG_RETURN_IF_ERROR(m.Finish());
  if (v.sets.empty()) v.sets.push_back("");
  for (const auto& set : v.sets) {
    auto shapes = runtime::ParseShapeList(set);
    if (!shapes.ok()) return m.FieldError("shapes", shapes.status().message());
    v.shapes.push_back(std::move(shapes).value());
  }
  if (!v.model.empty() && v.model[0] != '/') {
    // Relative model paths are relative to the config file.
    const auto slash = a.config.rfind('/');
    if (slash != std::string::npos) v.model = a.config.substr(0, slash + 1) + v.model;
  }
  TG_ASSIGN_OR_RETURN(v.sha, common::Sha256File(v.model));
  return v;
}

// Checks the engine artifacts of one model (one per shape set): appends one result each and
// counts the missing ones; in text mode prints each line as it is checked.
void VerifyModelEngines(const GlobalOptions& g, const VerifyModel& v, const VerifyKeyContext& ctx,
                        Json* results, int* missing) {
  for (std::size_t i = 0; i < v.sets.size(); ++i) {
    const auto key_in = runtime::MakeEngineKeyInputs(ctx.fingerprint, ctx.gpu, v.sha, ctx.precision,
                                                     v.shapes[i], v.shapes[i], v.shapes[i]);
    const std::string key = runtime::EngineKey(key_in);
    const bool present = runtime::EngineArtifactPresent(ctx.dir, key);
    if (!present) ++*missing;
    results->push_back(
        {{"model", v.model}, {"shapes", v.sets[i]}, {"key", key}, {"present", present}});
    if (!g.json) {
      std::cout << (present ? "ok       " : "MISSING  ") << v.model << " [" << v.sets[i] << "] key "
                << key << "\n";
    }
  }
}

int EnginesVerify(const GlobalOptions& g, const EngineArgs& a) {
  auto policy = runtime::LoadRuntimePolicy(g.policy);
  if (!policy.ok()) return ReportError(policy.status());
  if (!a.matrix.empty()) policy->matrix_path = a.matrix;
  VerifyConfig cfg;
  Status st = ReadVerifyConfig(a, *policy, &cfg);
  if (!st.ok()) return ReportError(st);
  std::vector<VerifyModel> models;
  for (std::size_t i = 0; i < cfg.models.size(); ++i) {
    auto v = ReadVerifyModel(a, cfg.models[i], i);
    if (!v.ok()) return ReportError(v.status());
    models.push_back(std::move(v).value());
  }

  auto fp = runtime::PolicyMatrixFingerprint(policy->matrix_path,
                                             policy->profile == runtime::Profile::kProduction);
  if (!fp.ok()) return ReportError(fp.status());
  auto gpu = EngineGpuIdentity(g, a, *policy);
  if (!gpu.ok()) return ReportError(gpu.status());
  const VerifyKeyContext ctx{*fp, *gpu, cfg.precision, runtime::ResolveEngineDir(cfg.engine_dir)};
  Json results = Json::array();
  int missing = 0;
  for (const VerifyModel& v : models) VerifyModelEngines(g, v, ctx, &results, &missing);
  if (g.json) {
    std::cout << common::WriteJson(Json{{"ok", missing == 0},
                                        {"command", "engines verify"},
                                        {"engine_dir", ctx.dir},
                                        {"gpu_name", ctx.gpu.name},
                                        {"compute_capability", ctx.gpu.compute_capability},
                                        {"precision", ctx.precision},
                                        {"missing", missing},
                                        {"artifacts", results}},
                                   2)
              << "\n";
  } else {
    std::cout << (missing ? std::to_string(missing) + " artifact(s) missing in " + ctx.dir
                          : "all artifacts present in " + ctx.dir)
              << "\n";
  }
  // A verified engine missing from the cache: the node would build it at startup, not serve.
  return common::ExitCodeFromOutcome(missing ? common::Outcome::kNotAccelerated
                                             : common::Outcome::kOk);
}

}  // namespace

void RegisterRuntimeCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r) {
  auto ra = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand(
      "run",
      "Run a model through the policy-driven session factory (placement, latency, checksum)");
  run->add_option("--model", ra->model, "ONNX model file")->required()->type_name("FILE");
  run->add_option("--input", ra->inputs, "name=file.npy or name=random (default: random)")
      ->type_name("NAME=FILE|NAME=random");
  run->add_option("--shape", ra->shapes,
                  "NAME:1x4x64x64 shape of a random input with dynamic dimensions (repeatable; "
                  "unset dynamic dimensions are 1, with a warning)")
      ->type_name("NAME:DIMS");
  run->add_option("--runs", ra->runs, "At least this many timed runs (default 100); see --min-time")
      ->type_name("N");
  run->add_option("--min-time", ra->min_time_s,
                  "And time runs for at least SECONDS (default 2; 0 = --runs alone)")
      ->type_name("SECONDS");
  run->add_option("--warmup", ra->warmup, "Untimed warm-up runs (default 1)")->type_name("N");
  run->add_option("--mode", ra->mode, "default | plain | bound (IO binding)")
      ->check(CLI::IsMember({"default", "plain", "bound"}));
  run->add_flag("--no-fuse-attention", ra->no_fuse_attention,
                "Run attention as exported: no rewrite into com.microsoft.MultiHeadAttention at "
                "load (the policy's session.fuse_attention: false)");
  run->add_flag("--placement-from-log", ra->placement_from_log,
                "Read placement from the verbose 'Node placements' log (older ORT path)");
  run->add_option("--max-p99-ms", ra->max_p99_ms,
                  "Performance gate: exit 5 when the p99 latency exceeds this many ms")
      ->type_name("MS")
      ->check(CLI::PositiveNumber);
  run->add_option("--save-outputs", ra->save_outputs, "Directory to write outputs as .npy")
      ->type_name("DIR");
  r.Add(run, [&g, ra] { return RunCommand(g, *ra); });

  CLI::App* engines = app.add_subcommand("engines", "TensorRT engines as artifacts");
  engines->require_subcommand(1);
  auto ea = std::make_shared<EngineArgs>();
  CLI::App* build = engines->add_subcommand("build", "Pre-build TensorRT engines for a model");
  build->add_option("--matrix", ea->matrix, "Version matrix file (fingerprint in the key)")
      ->type_name("FILE");
  build->add_option("--model", ea->model, "ONNX model file")->required()->type_name("FILE");
  build->add_option("--shapes", ea->shapes, "Static profile: name:1x4x64x64,name2:1x77");
  build->add_option("--min-shapes", ea->min_shapes, "Profile minimum shapes");
  build->add_option("--opt-shapes", ea->opt_shapes, "Profile optimum shapes");
  build->add_option("--max-shapes", ea->max_shapes, "Profile maximum shapes");
  r.Add(build, [&g, ea] { return EnginesBuild(g, *ea); });

  auto va = std::make_shared<EngineArgs>();
  CLI::App* verify = engines->add_subcommand(
      "verify", "Check every model x shape in a config has an engine artifact for this node");
  verify->add_option("--matrix", va->matrix, "Version matrix file (fingerprint in the key)")
      ->type_name("FILE");
  verify
      ->add_option("--config", va->config,
                   "YAML file: engine_dir, precision, models[{model, shapes}]")
      ->required()
      ->type_name("FILE");
  verify->add_option("--gpu-name", va->gpu_name, "Target GPU name (default: query CUDA device)");
  verify->add_option("--compute-capability", va->compute_capability, "Target compute capability");
  verify->add_option("--precision", va->precision, "fp32 | fp16 | int8 (default from policy)");
  r.Add(verify, [&g, va] { return EnginesVerify(g, *va); });
}

}  // namespace tg::cli
