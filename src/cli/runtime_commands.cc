// `truegreen run` and `truegreen engines build|verify`: the runtime layer's commands.
//
// run: opens a model through the policy-driven SessionFactory, prints the placement summary, the
// latency distribution of --runs timed runs (after --warmup untimed ones) and output checksums.
// Exit codes: 0 ok, 2 usage/config, 3 no GPU path or placement violation, 1 internal.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "common/config.h"
#include "common/file_util.h"
#include "common/log.h"
#include "runtime/engines.h"
#include "runtime/session.h"

namespace tg::cli {
namespace {

using common::Json;
using common::Status;
using runtime::Tensor;

int Fail(const GlobalOptions& g, const Status& s, const char* what) {
  const int code = s.code() == common::StatusCode::kUnavailable ? common::kExitIntegrity
                                                                : common::ExitCodeFromStatus(s);
  if (g.json) {
    std::cout << Json{{"ok", false},
                      {"command", what},
                      {"error", s.message()},
                      {"code", std::string(common::StatusCodeName(s.code()))},
                      {"exit_code", code}}
                     .dump(2)
              << "\n";
  }
  std::fprintf(stderr, "truegreen %s: %s\n", what, s.message().c_str());
  return code;
}

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;  // name=file.npy | name=random
  int runs = 10;
  int warmup = 1;
  std::string mode = "default";  // default | plain | bound
  bool placement_from_log = false;
  std::string save_outputs;  // directory for output .npy files
};

common::Result<std::vector<runtime::NamedTensor>> BuildInputs(const runtime::Session& s,
                                                              const RunArgs& a) {
  std::map<std::string, std::string> given;
  for (const auto& spec : a.inputs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArg("--input '" + spec + "' is not of the form name=file.npy|random");
    }
    given[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  std::vector<runtime::NamedTensor> out;
  std::uint64_t seed = 1;
  for (const auto& info : s.inputs()) {
    auto it = given.find(info.name);
    std::string src = it == given.end() ? "random" : it->second;
    if (it != given.end()) given.erase(it);
    if (src == "random") {
      std::vector<std::int64_t> shape = info.shape;
      for (auto& d : shape) d = d < 0 ? 1 : d;  // dynamic dims: 1
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
      out.push_back({info.name, std::move(t).value()});
    }
  }
  if (!given.empty()) {
    return Status::InvalidArg("--input names '" + given.begin()->first +
                              "', which is not an input of " + a.model);
  }
  return out;
}

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  std::size_t idx = static_cast<std::size_t>(p / 100.0 * static_cast<double>(sorted.size()) + 0.5);
  idx = std::min(sorted.size() - 1, idx == 0 ? 0 : idx - 1);
  return sorted[idx];
}

int RunCommand(const GlobalOptions& g, const RunArgs& a) {
  auto policy = runtime::LoadRuntimePolicy(g.policy);
  if (!policy.ok()) return Fail(g, policy.status(), "run");
  if (a.runs < 1 || a.warmup < 0) {
    return Fail(g, Status::InvalidArg("--runs must be >= 1 and --warmup >= 0"), "run");
  }
  auto factory = runtime::SessionFactory::Create(*policy, g.Loader());
  if (!factory.ok()) return Fail(g, factory.status(), "run");
  runtime::OpenOptions oo;
  oo.placement_from_log = a.placement_from_log;
  Status violation;
  auto session = factory->OpenForDiagnosis(a.model, oo, &violation);
  if (!session.ok()) return Fail(g, session.status(), "run");
  const runtime::SessionReport& rep = session->report();
  if (!violation.ok()) {
    if (g.json) {
      Json j = {{"ok", false},
                {"command", "run"},
                {"error", violation.message()},
                {"exit_code", common::kExitIntegrity},
                {"session", runtime::SessionReportToJson(rep)}};
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << runtime::FormatSessionReport(rep);
    }
    std::fprintf(stderr, "truegreen run: %s\n", violation.message().c_str());
    return common::kExitIntegrity;
  }

  auto inputs = BuildInputs(*session, a);
  if (!inputs.ok()) return Fail(g, inputs.status(), "run");
  const runtime::RunMode mode = a.mode == "plain"   ? runtime::RunMode::kPlain
                                : a.mode == "bound" ? runtime::RunMode::kIoBinding
                                                    : runtime::RunMode::kDefault;
  std::vector<Tensor> outputs;
  for (int i = 0; i < a.warmup; ++i) {
    Status st = session->Run(*inputs, {}, &outputs, mode);
    if (!st.ok()) return Fail(g, st, "run");
  }
  const runtime::IoStats before = session->io_stats();
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(a.runs));
  for (int i = 0; i < a.runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    Status st = session->Run(*inputs, {}, &outputs, mode);
    const auto t1 = std::chrono::steady_clock::now();
    if (!st.ok()) return Fail(g, st, "run");
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  const runtime::IoStats after = session->io_stats();
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double v : ms) mean += v;
  mean /= static_cast<double>(ms.size());

  std::string combined;
  Json outs = Json::array();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = session->outputs()[i].name;
    const std::string sum = outputs[i].Checksum();
    combined += sum;
    outs.push_back({{"name", name},
                    {"dtype", runtime::DataTypeName(outputs[i].dtype())},
                    {"shape", outputs[i].shape()},
                    {"sha256", sum}});
    if (!a.save_outputs.empty()) {
      // The file name comes from the model: never let it leave the --save-outputs folder.
      if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
        return Fail(g,
                    Status::InvalidArg("--save-outputs: output name '" + name +
                                       "' of the model is not usable as a file name"),
                    "run");
      }
      Status st = common::WriteFileAtomic(a.save_outputs + "/" + name + ".npy",
                                          runtime::EncodeNpy(outputs[i]));
      if (!st.ok()) return Fail(g, st, "run");
    }
  }
  const std::string checksum = common::Sha256Hex(combined.data(), combined.size());
  const double runs = static_cast<double>(a.runs);
  Json latency = {{"runs", a.runs},
                  {"warmup", a.warmup},
                  {"mean_ms", mean},
                  {"min_ms", sorted.front()},
                  {"p50_ms", Percentile(sorted, 50)},
                  {"p90_ms", Percentile(sorted, 90)},
                  {"p99_ms", Percentile(sorted, 99)},
                  {"max_ms", sorted.back()}};
  Json io = {{"h2d_bytes_per_run", static_cast<double>(after.h2d_bytes - before.h2d_bytes) / runs},
             {"d2h_bytes_per_run", static_cast<double>(after.d2h_bytes - before.d2h_bytes) / runs}};
  if (g.json) {
    Json j = {{"ok", true},
              {"command", "run"},
              {"degraded", rep.degraded},
              {"session", runtime::SessionReportToJson(rep)},
              {"latency", latency},
              {"io", io},
              {"outputs", outs},
              {"checksum", checksum}};
    std::cout << j.dump(2) << "\n";
    return common::kExitOk;
  }
  std::cout << runtime::FormatSessionReport(rep);
  char line[256];
  std::snprintf(line, sizeof(line),
                "latency:    %d runs (warm-up %d excluded): mean %.3f ms, p50 %.3f, p90 %.3f, "
                "p99 %.3f, min %.3f, max %.3f\n",
                a.runs, a.warmup, mean, Percentile(sorted, 50), Percentile(sorted, 90),
                Percentile(sorted, 99), sorted.front(), sorted.back());
  std::cout << line;
  std::snprintf(line, sizeof(line),
                "copies:     %.0f B host->device, %.0f B device->host per run\n",
                io["h2d_bytes_per_run"].get<double>(), io["d2h_bytes_per_run"].get<double>());
  std::cout << line;
  for (const auto& o : outs) {
    std::cout << "output:     " << o["name"].get<std::string>() << " "
              << o["dtype"].get<std::string>() << o["shape"].dump() << " sha256 "
              << o["sha256"].get<std::string>() << "\n";
  }
  std::cout << "checksum:   " << checksum << (rep.degraded ? "  (DEGRADED)" : "") << "\n";
  return common::kExitOk;
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
  auto parse = [](const std::string& text, std::map<std::string, std::vector<std::int64_t>>* out) {
    auto r = runtime::ParseShapeList(text);
    if (!r.ok()) return r.status();
    *out = *r;
    return Status::Ok();
  };
  if (!a.shapes.empty()) {
    TG_RETURN_IF_ERROR(parse(a.shapes, &oo->profile_min));
    oo->profile_opt = oo->profile_max = oo->profile_min;
  }
  if (!a.min_shapes.empty() || !a.opt_shapes.empty() || !a.max_shapes.empty()) {
    if (a.min_shapes.empty() || a.opt_shapes.empty() || a.max_shapes.empty()) {
      return Status::InvalidArg("--min-shapes, --opt-shapes and --max-shapes go together");
    }
    TG_RETURN_IF_ERROR(parse(a.min_shapes, &oo->profile_min));
    TG_RETURN_IF_ERROR(parse(a.opt_shapes, &oo->profile_opt));
    TG_RETURN_IF_ERROR(parse(a.max_shapes, &oo->profile_max));
  }
  return Status::Ok();
}

int EnginesBuild(const GlobalOptions& g, const EngineArgs& a) {
  auto policy = runtime::LoadRuntimePolicy(g.policy);
  if (!policy.ok()) return Fail(g, policy.status(), "engines build");
  if (!a.matrix.empty()) policy->matrix_path = a.matrix;
  runtime::OpenOptions oo;
  oo.build_engines = true;
  Status st = ResolveProfiles(a, &oo);
  if (!st.ok()) return Fail(g, st, "engines build");
  auto factory = runtime::SessionFactory::Create(*policy, g.Loader());
  if (!factory.ok()) return Fail(g, factory.status(), "engines build");
  bool trt = false;
  for (const auto& p : factory->prepared_providers()) {
    trt = trt || (p.name == "TensorrtExecutionProvider" && p.attached);
  }
  if (!trt) {
    return Fail(g,
                Status::Unavailable("the TensorRT provider is not attached under policy " +
                                    policy->source + ": engines cannot be built on this node"),
                "engines build");
  }
  auto session = factory->Open(a.model, oo);
  if (!session.ok()) return Fail(g, session.status(), "engines build");
  // TensorRT builds dynamic-shape engines at the first run: run once at the opt shapes.
  std::vector<runtime::NamedTensor> inputs;
  std::uint64_t seed = 1;
  for (const auto& info : session->inputs()) {
    std::vector<std::int64_t> shape = info.shape;
    auto it = oo.profile_opt.find(info.name);
    if (it != oo.profile_opt.end()) shape = it->second;
    for (auto& d : shape) d = d < 0 ? 1 : d;
    auto t = runtime::RandomTensor(info.dtype, shape, seed++);
    if (!t.ok()) return Fail(g, t.status(), "engines build");
    inputs.push_back({info.name, std::move(t).value()});
  }
  std::vector<Tensor> out;
  st = session->Run(inputs, {}, &out);
  if (!st.ok()) return Fail(g, st, "engines build");
  const auto& rep = session->report();
  auto fp = runtime::PolicyMatrixFingerprint(policy->matrix_path,
                                             policy->profile == runtime::Profile::kProduction);
  if (!fp.ok()) return Fail(g, fp.status(), "engines build");
  auto gpu = runtime::QueryGpuIdentity(g.Loader(), policy->cuda.device_id);
  if (!gpu.ok()) return Fail(g, gpu.status(), "engines build");
  const auto key = runtime::MakeEngineKeyInputs(*fp, *gpu, rep.model_sha256, rep.precision,
                                                oo.profile_min, oo.profile_opt, oo.profile_max);
  const std::string root = runtime::ResolveEngineDir(policy->tensorrt.engine_dir);
  st = runtime::WriteEngineManifest(root, rep.engine_key, key);
  if (!st.ok()) return Fail(g, st, "engines build");
  Json j = {{"ok", true},
            {"command", "engines build"},
            {"key", rep.engine_key},
            {"dir", rep.engine_dir},
            {"inputs", key.ToJson()}};
  if (g.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "built " << rep.engine_dir << " (key " << rep.engine_key << ")\n";
  }
  return common::kExitOk;
}

int EnginesVerify(const GlobalOptions& g, const EngineArgs& a) {
  auto policy = runtime::LoadRuntimePolicy(g.policy);
  if (!policy.ok()) return Fail(g, policy.status(), "engines verify");
  if (!a.matrix.empty()) policy->matrix_path = a.matrix;
  auto doc = common::LoadYamlFile(a.config);
  if (!doc.ok()) return Fail(g, doc.status(), "engines verify");
  auto root = common::YamlMap::From(*doc, a.config, "");
  if (!root.ok()) return Fail(g, root.status(), "engines verify");
  std::string engine_dir = policy->tensorrt.engine_dir;
  std::string precision =
      a.precision.empty() ? (policy->tensorrt.fp16 ? "fp16" : "fp32") : a.precision;
  Status st = root->Get("engine_dir", &engine_dir);
  if (st.ok()) st = root->Get("precision", &precision);
  if (!st.ok()) return Fail(g, st, "engines verify");
  if (precision != "fp32" && precision != "fp16" && precision != "int8") {
    return Fail(g, root->FieldError("precision", "fp32 | fp16 | int8"), "engines verify");
  }
  auto models = root->GetSequence("models", true);
  if (!models.ok()) return Fail(g, models.status(), "engines verify");
  st = root->Finish();
  if (!st.ok()) return Fail(g, st, "engines verify");

  auto fp = runtime::PolicyMatrixFingerprint(policy->matrix_path,
                                             policy->profile == runtime::Profile::kProduction);
  if (!fp.ok()) return Fail(g, fp.status(), "engines verify");
  runtime::GpuIdentity gpu{a.gpu_name, a.compute_capability};
  if (gpu.name.empty() != gpu.compute_capability.empty()) {
    return Fail(g, Status::InvalidArg("--gpu-name and --compute-capability go together"),
                "engines verify");
  }
  if (gpu.name.empty()) {
    auto q = runtime::QueryGpuIdentity(g.Loader(), policy->cuda.device_id);
    if (!q.ok()) {
      return Fail(g,
                  q.status().WithPrefix("cannot compute engine keys without the GPU identity "
                                        "(pass --gpu-name and --compute-capability)"),
                  "engines verify");
    }
    gpu = *q;
  }
  const std::string dir = runtime::ResolveEngineDir(engine_dir);
  Json results = Json::array();
  int missing = 0;
  for (std::size_t i = 0; i < models->size(); ++i) {
    auto m = common::YamlMap::From((*models)[i], a.config, "models[" + std::to_string(i) + "]");
    if (!m.ok()) return Fail(g, m.status(), "engines verify");
    std::string model;
    std::vector<std::string> shape_sets;
    st = m->Get("model", &model, true);
    if (st.ok()) st = m->Get("shapes", &shape_sets);
    if (st.ok()) st = m->Finish();
    if (!st.ok()) return Fail(g, st, "engines verify");
    if (!model.empty() && model[0] != '/') {
      // Relative model paths are relative to the config file.
      const auto slash = a.config.rfind('/');
      if (slash != std::string::npos) model = a.config.substr(0, slash + 1) + model;
    }
    auto sha = common::Sha256File(model);
    if (!sha.ok()) return Fail(g, sha.status(), "engines verify");
    if (shape_sets.empty()) shape_sets.push_back("");
    for (const auto& set : shape_sets) {
      auto shapes = runtime::ParseShapeList(set);
      if (!shapes.ok()) {
        return Fail(g, m->FieldError("shapes", shapes.status().message()), "engines verify");
      }
      const auto key_in =
          runtime::MakeEngineKeyInputs(*fp, gpu, *sha, precision, *shapes, *shapes, *shapes);
      const std::string key = runtime::EngineKey(key_in);
      const bool present = runtime::EngineArtifactPresent(dir, key);
      if (!present) ++missing;
      results.push_back({{"model", model}, {"shapes", set}, {"key", key}, {"present", present}});
      if (!g.json) {
        std::cout << (present ? "ok       " : "MISSING  ") << model << " [" << set << "] key "
                  << key << "\n";
      }
    }
  }
  if (g.json) {
    std::cout << Json{{"ok", missing == 0},
                      {"command", "engines verify"},
                      {"engine_dir", dir},
                      {"gpu_name", gpu.name},
                      {"compute_capability", gpu.compute_capability},
                      {"precision", precision},
                      {"missing", missing},
                      {"artifacts", results}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << (missing ? std::to_string(missing) + " artifact(s) missing in " + dir
                          : "all artifacts present in " + dir)
              << "\n";
  }
  return missing ? common::kExitIntegrity : common::kExitOk;
}

}  // namespace

void RegisterRuntimeCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r) {
  auto ra = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand(
      "run",
      "Run a model through the policy-driven session factory (placement, latency, checksum)");
  run->add_option("--model", ra->model, "ONNX model file")->required();
  run->add_option("--input", ra->inputs, "name=file.npy or name=random (default: random)");
  run->add_option("--runs", ra->runs, "Timed runs (default 10)");
  run->add_option("--warmup", ra->warmup, "Untimed warm-up runs (default 1)");
  run->add_option("--mode", ra->mode, "default | plain | bound (IO binding)")
      ->check(CLI::IsMember({"default", "plain", "bound"}));
  run->add_flag("--placement-from-log", ra->placement_from_log,
                "Read placement from the verbose 'Node placements' log (older ORT path)");
  run->add_option("--save-outputs", ra->save_outputs, "Directory to write outputs as .npy");
  r.Add(run, [&g, ra] { return RunCommand(g, *ra); });

  CLI::App* engines = app.add_subcommand("engines", "TensorRT engines as artifacts");
  engines->require_subcommand(1);
  auto ea = std::make_shared<EngineArgs>();
  CLI::App* build = engines->add_subcommand("build", "Pre-build TensorRT engines for a model");
  build->add_option("--matrix", ea->matrix, "Version matrix file (fingerprint in the key)");
  build->add_option("--model", ea->model, "ONNX model file")->required();
  build->add_option("--shapes", ea->shapes, "Static profile: name:1x4x64x64,name2:1x77");
  build->add_option("--min-shapes", ea->min_shapes, "Profile minimum shapes");
  build->add_option("--opt-shapes", ea->opt_shapes, "Profile optimum shapes");
  build->add_option("--max-shapes", ea->max_shapes, "Profile maximum shapes");
  r.Add(build, [&g, ea] { return EnginesBuild(g, *ea); });

  auto va = std::make_shared<EngineArgs>();
  CLI::App* verify = engines->add_subcommand(
      "verify", "Check every model x shape in a config has an engine artifact for this node");
  verify->add_option("--matrix", va->matrix, "Version matrix file (fingerprint in the key)");
  verify->add_option("--config", va->config, "YAML: engine_dir, precision, models[{model, shapes}]")
      ->required();
  verify->add_option("--gpu-name", va->gpu_name, "Target GPU name (default: query CUDA device)");
  verify->add_option("--compute-capability", va->compute_capability, "Target compute capability");
  verify->add_option("--precision", va->precision, "fp32 | fp16 | int8 (default from policy)");
  r.Add(verify, [&g, va] { return EnginesVerify(g, *va); });
}

}  // namespace tg::cli
