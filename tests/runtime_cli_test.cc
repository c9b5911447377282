// `truegreen run` and `truegreen engines` end to end: the real binary, real ORT, real provider
// libraries; the only stand-in is the CUDA toolkit's stub libcuda (a driver without a device).
#include <gtest/gtest.h>

#include <filesystem>

#include "common/config.h"
#include "common/dynlib.h"
#include "common/file_util.h"
#include "runtime/engines.h"
#include "runtime/tensor.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

using testing::RunTruegreen;
using testing::TempDir;

std::string Model(const std::string& name) {
  return testing::BinaryDir() + "/models/runtime/" + name;
}

common::Json ParseOut(const testing::ProcessResult& r) {
  auto j = common::ParseJson(r.out, "stdout");
  EXPECT_TRUE(j.ok()) << r.out << "\n" << r.err;
  return j.ok() ? *j : common::Json::object();
}

constexpr const char* kStubLibcuda = "/usr/local/cuda/lib64/stubs/libcuda.so";

// A --lib-path directory laid out like an official GPU package (setup's default pair):
// libonnxruntime.so with the provider libraries next to it, plus (optionally) the stub driver as
// libcuda.so.1.
void MakeOrtDir(const std::string& dir, bool with_stub) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(testing::OrtDir() + "/lib")) {
    fs::create_symlink(e.path(), dir + "/" + e.path().filename().string());
  }
  if (with_stub) fs::create_symlink(kStubLibcuda, dir + "/libcuda.so.1");
}

TEST(RuntimeCliTest, DevRunIsCpuDegradedAndDeterministic) {
  auto r = RunTruegreen({"--policy", "dev", "--json", "run", "--model", Model("unet_tiny.onnx"),
                         "--runs", "3", "--min-time", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = ParseOut(r);
  EXPECT_TRUE(j["degraded"].get<bool>());
  const auto& pl = j["session"]["placement"];
  EXPECT_EQ(pl["nodes_per_provider"]["CPUExecutionProvider"].get<int>(),
            pl["total_nodes"].get<int>());
  EXPECT_EQ(pl["nodes_per_provider"].size(), 1u);
  EXPECT_EQ(j["latency"]["runs"].get<int>(), 3);
  EXPECT_GT(j["latency"]["p50_ms"].get<double>(), 0.0);
  EXPECT_EQ(j["io"]["h2d_bytes_per_run"].get<double>(), 0.0);
  EXPECT_NE(r.err.find("DEGRADED"), std::string::npos);  // log lines say it too
  auto again = RunTruegreen({"--policy", "dev", "--json", "run", "--model", Model("unet_tiny.onnx"),
                             "--runs", "1", "--min-time", "0", "--mode", "plain"});
  ASSERT_EQ(again.exit_code, 0);
  EXPECT_EQ(ParseOut(again)["checksum"], j["checksum"]);
  auto text = RunTruegreen({"--policy", "dev", "run", "--model", Model("unet_tiny.onnx"), "--runs",
                            "2", "--min-time", "0"});
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_EQ(text.out.rfind("DEGRADED:", 0), 0u) << text.out;
  EXPECT_NE(text.out.find("checksum:"), std::string::npos);
}

TEST(RuntimeCliTest, ShapeSetsDynamicDimensionsAndDefaultsAreWarned) {
  // matmul_softmax: x is [N, 8] with N dynamic.
  auto dflt = RunTruegreen({"--policy", "dev", "--json", "run", "--model",
                            Model("matmul_softmax.onnx"), "--runs", "2", "--min-time", "0"});
  ASSERT_EQ(dflt.exit_code, 0) << dflt.err;
  auto j = ParseOut(dflt);
  EXPECT_EQ(j["outputs"][0]["shape"], (std::vector<std::int64_t>{1, 8}));
  ASSERT_EQ(j["warnings"].size(), 1u);
  const std::string w = j["warnings"][0].get<std::string>();
  EXPECT_NE(w.find("input 'x' dimension 0 ('N') is dynamic and defaults to 1"), std::string::npos)
      << w;
  EXPECT_NE(w.find("--shape x:"), std::string::npos) << w;
  EXPECT_NE(dflt.err.find("defaults to 1"), std::string::npos) << dflt.err;  // and on stderr

  auto shaped =
      RunTruegreen({"--policy", "dev", "--json", "run", "--model", Model("matmul_softmax.onnx"),
                    "--shape", "x:6x8", "--runs", "3", "--min-time", "0"});
  ASSERT_EQ(shaped.exit_code, 0) << shaped.err;
  auto s = ParseOut(shaped);
  EXPECT_EQ(s["outputs"][0]["shape"], (std::vector<std::int64_t>{6, 8}));
  EXPECT_EQ(s["warnings"].size(), 0u);
  EXPECT_EQ(shaped.err.find("defaults to 1"), std::string::npos) << shaped.err;
  // Throughput: runs/s over the timed loop, items/s for the batch (leading) dimension.
  const auto& t = s["throughput"];
  EXPECT_EQ(t["batch"], 6);
  EXPECT_GT(t["runs_per_s"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(t["items_per_s"].get<double>(), 6 * t["runs_per_s"].get<double>());
  EXPECT_EQ(s["latency"]["runs"], 3);

  // Text output says it too.
  auto text = RunTruegreen({"--policy", "dev", "run", "--model", Model("matmul_softmax.onnx"),
                            "--shape", "x:4x8", "--runs", "2", "--min-time", "0"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("items/s (batch 4)"), std::string::npos) << text.out;
}

TEST(RuntimeCliTest, BadShapesExit2NamingTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"x:6x9", "dimension 1 is 9 but the model fixes it at 8"},
      {"x:6", "rank 1 but the model's input has rank 2"},
      {"x:0x8", "has a dimension 0 (dimensions are integers 1..16777216"},
      {"nosuch:1x8", "--shape names 'nosuch'"},
      {"x6x8", "is not of the form name:1x4x64x64"},
  };
  for (const auto& [spec, needle] : cases) {
    auto r = RunTruegreen({"--policy", "dev", "run", "--model", Model("matmul_softmax.onnx"),
                           "--shape", spec, "--runs", "1", "--min-time", "0"});
    EXPECT_EQ(r.exit_code, 2) << spec << ": " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << spec << ": " << r.err;
  }
  auto twice = RunTruegreen({"--policy", "dev", "run", "--model", Model("matmul_softmax.onnx"),
                             "--shape", "x:1x8", "--shape", "x:2x8"});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("twice"), std::string::npos) << twice.err;
  auto bad_time = RunTruegreen(
      {"--policy", "dev", "run", "--model", Model("matmul_softmax.onnx"), "--min-time", "-1"});
  EXPECT_EQ(bad_time.exit_code, 2);
  EXPECT_NE(bad_time.err.find("--min-time"), std::string::npos) << bad_time.err;
}

// The one test that pays for the defaults: percentiles rest on at least 100 runs and 2 s.
TEST(RuntimeCliTest, DefaultMeasurementIsAtLeast100RunsAndTwoSeconds) {
  auto r = RunTruegreen({"--policy", "dev", "--json", "run", "--model",
                         Model("matmul_softmax.onnx"), "--shape", "x:2x8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = ParseOut(r);
  EXPECT_GE(j["latency"]["runs"].get<int>(), 100);
  EXPECT_EQ(j["latency"]["min_runs"], 100);
  EXPECT_EQ(j["latency"]["min_time_s"], 2.0);
  EXPECT_GE(j["throughput"]["wall_s"].get<double>(), 2.0);
  EXPECT_EQ(j["throughput"]["batch"], 2);
}

TEST(RuntimeCliTest, ProductionWithoutDriverExits3NamingProviderAndLoaderError) {
  if (common::LibraryLoader::WithDefaults({}).Load("libcuda.so.1").ok()) {
    GTEST_SKIP() << "a CUDA driver (libcuda.so.1) is installed on this machine";
  }
  auto r = RunTruegreen({"run", "--model", Model("unet_tiny.onnx")}, {{"TRUEGREEN_LIB_PATH", ""}});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("CUDAExecutionProvider"), std::string::npos) << r.err;
  // The production matrix requires the CUDA provider only (truegreen's image has no TensorRT).
  EXPECT_EQ(r.err.find("TensorrtExecutionProvider"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("libcuda.so.1: cannot open shared object file"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("never a production fallback"), std::string::npos);
  auto j = RunTruegreen({"--json", "run", "--model", Model("unet_tiny.onnx")});
  EXPECT_EQ(j.exit_code, 3);
  EXPECT_NE(ParseOut(j)["error"]["message"].get<std::string>().find("libcuda.so.1"),
            std::string::npos);
}

TEST(RuntimeCliTest, ProductionWithStubDriverFindsNoDeviceOnEitherAttachPath) {
  if (!std::filesystem::exists(kStubLibcuda)) GTEST_SKIP() << "no CUDA stub at " << kStubLibcuda;
  TempDir dir;
  MakeOrtDir(dir / "ort", /*with_stub=*/true);
  // Setup's core is built with CUDA, so the provider attaches through the classic API, and ORT
  // itself names the stub when it asks CUDA for the device.
  auto r = RunTruegreen({"--lib-path", dir / "ort", "--policy", "production", "run", "--model",
                         Model("unet_tiny.onnx")});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("CUDAExecutionProvider (classic V2 API)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("CUDA driver is a stub library"), std::string::npos) << r.err;
  // Only CUDA in the policy: the verdict is about CUDA alone.
  testing::WriteFile(dir / "cuda_only.yaml", "profile: production\nproviders: [CUDA]\n");
  auto c = RunTruegreen({"--lib-path", dir / "ort", "--policy", dir / "cuda_only.yaml", "--json",
                         "run", "--model", Model("matmul_softmax.onnx")});
  EXPECT_EQ(c.exit_code, 3);
  const std::string err = ParseOut(c)["error"]["message"].get<std::string>();
  EXPECT_NE(err.find("CUDA driver is a stub library"), std::string::npos) << err;
  EXPECT_EQ(err.find("Tensorrt"), std::string::npos) << err;
  // The plugin path registers the same provider library and finds no device behind it.
  testing::WriteFile(dir / "plugin.yaml",
                     "profile: production\nproviders: [CUDA]\nattach: plugin\n");
  auto p = RunTruegreen({"--lib-path", dir / "ort", "--policy", dir / "plugin.yaml", "--json",
                         "run", "--model", Model("matmul_softmax.onnx")});
  EXPECT_EQ(p.exit_code, 3);
  const std::string perr = ParseOut(p)["error"]["message"].get<std::string>();
  EXPECT_NE(perr.find("CUDAExecutionProvider: provider registered but no GPU device"),
            std::string::npos)
      << perr;
}

TEST(RuntimeCliTest, ClassicPathOnCpuBuildNamesOrtsError) {
  // The real CPU-built core (setup's test fixture), not the default GPU-flavor pair.
  TempDir dir;
  std::filesystem::create_directories(dir / "cpu");
  std::filesystem::create_symlink(testing::CpuOrtCore(), dir / "cpu/libonnxruntime.so");
  testing::WriteFile(dir / "classic.yaml", "profile: production\nattach: classic\n");
  auto r = RunTruegreen({"--lib-path", dir / "cpu", "--policy", dir / "classic.yaml", "--json",
                         "run", "--model", Model("unet_tiny.onnx")});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const std::string err = ParseOut(r)["error"]["message"].get<std::string>();
  EXPECT_NE(err.find("CUDAExecutionProvider (classic V2 API)"), std::string::npos) << err;
  EXPECT_NE(err.find("not enabled in this build"), std::string::npos) << err;
  // Dev: recorded with its path, session degraded on CPU.
  testing::WriteFile(dir / "classic_dev.yaml", "profile: dev\nattach: classic\n");
  auto d =
      RunTruegreen({"--lib-path", dir / "cpu", "--policy", dir / "classic_dev.yaml", "--json",
                    "run", "--model", Model("unet_tiny.onnx"), "--runs", "1", "--min-time", "0"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_TRUE(ParseOut(d)["degraded"].get<bool>());
}

TEST(RuntimeCliTest, SplitLayoutIsANamedErrorNotACrash) {
  if (!std::filesystem::exists(kStubLibcuda)) GTEST_SKIP() << "no CUDA stub at " << kStubLibcuda;
  // libonnxruntime.so alone in one directory, the provider libraries elsewhere: ORT cannot find
  // its provider bridge. On the plugin path (a CPU-built core) registering the provider would
  // crash in its initialisers, so truegreen checks first; a GPU-flavor core's classic path gets
  // ORT's own error naming the missing bridge.
  for (const std::string& core :
       {testing::CpuOrtCore(), testing::OrtDir() + "/lib/libonnxruntime.so"}) {
    SCOPED_TRACE(core);
    TempDir dir;
    std::filesystem::create_directories(dir / "core");
    std::filesystem::create_symlink(core, dir / "core/libonnxruntime.so");
    std::filesystem::create_directories(dir / "drv");
    std::filesystem::create_symlink(kStubLibcuda, dir / "drv/libcuda.so.1");
    testing::WriteFile(dir / "cuda_only.yaml", "profile: production\nproviders: [CUDA]\n");
    auto r = RunTruegreen({"--lib-path", dir / "core", "--lib-path", dir / "drv", "--policy",
                           dir / "cuda_only.yaml", "run", "--model", Model("matmul_softmax.onnx")});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    const bool cpu = core == testing::CpuOrtCore();
    EXPECT_NE(r.err.find(cpu ? "which has no libonnxruntime_providers_shared.so"
                             : "core/libonnxruntime_providers_shared.so: cannot open shared"),
              std::string::npos)
        << r.err;
  }
}

TEST(RuntimeCliTest, DevWithStubDriverRecordsWhyAndRunsOnCpu) {
  if (!std::filesystem::exists(kStubLibcuda)) GTEST_SKIP() << "no CUDA stub at " << kStubLibcuda;
  TempDir dir;
  MakeOrtDir(dir / "ort", true);
  auto r = RunTruegreen({"--lib-path", dir / "ort", "--policy", "dev", "--json", "run", "--model",
                         Model("matmul_softmax.onnx"), "--runs", "1", "--min-time", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = ParseOut(r);
  EXPECT_TRUE(j["degraded"].get<bool>());
  bool cuda_recorded = false;
  for (const auto& p : j["session"]["providers"]) {
    if (p["name"] == "CUDAExecutionProvider") {
      cuda_recorded =
          !p["attached"].get<bool>() &&
          p["error"].get<std::string>().find("CUDA driver is a stub library") != std::string::npos;
    }
  }
  EXPECT_TRUE(cuda_recorded) << j["session"]["providers"].dump();
}

TEST(RuntimeCliTest, PlacementViolationExits3WithReport) {
  TempDir dir;
  testing::WriteFile(dir / "strict.yaml", "profile: dev\nplacement:\n  enforce: true\n");
  auto bad = RunTruegreen(
      {"--policy", dir / "strict.yaml", "--json", "run", "--model", Model("unet_tiny.onnx")});
  EXPECT_EQ(bad.exit_code, 3) << bad.err;
  auto j = ParseOut(bad);
  EXPECT_FALSE(j["session"]["placement"]["ok"].get<bool>());
  EXPECT_NE(j["error"]["message"].get<std::string>().find("conv_in (Conv)"), std::string::npos)
      << j.dump();
  auto ok = RunTruegreen({"--policy", dir / "strict.yaml", "run", "--model",
                          Model("shape_ops.onnx"), "--runs", "1", "--min-time", "0"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  auto from_log =
      RunTruegreen({"--policy", "dev", "--json", "run", "--model", Model("unet_tiny.onnx"),
                    "--placement-from-log", "--runs", "1", "--min-time", "0"});
  ASSERT_EQ(from_log.exit_code, 0) << from_log.err;
  EXPECT_EQ(ParseOut(from_log)["session"]["placement"]["source"], "verbose_log");
}

TEST(RuntimeCliTest, ConfigAndUsageErrorsExit2) {
  TempDir dir;
  testing::WriteFile(dir / "bad.yaml", "profile: dev\ncuda:\n  use_tf32: perhaps\n  bogus: 1\n");
  auto r = RunTruegreen({"--policy", dir / "bad.yaml", "run", "--model", Model("unet_tiny.onnx")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cuda.use_tf32"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cuda.bogus"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad.yaml:3"), std::string::npos) << r.err;
  auto missing = RunTruegreen({"--policy", "dev", "run", "--model", dir / "none.onnx"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  auto bad_input = RunTruegreen(
      {"--policy", "dev", "run", "--model", Model("unet_tiny.onnx"), "--input", "nosuch=random"});
  EXPECT_EQ(bad_input.exit_code, 2);
  EXPECT_NE(bad_input.err.find("nosuch"), std::string::npos);
}

TEST(RuntimeCliTest, NpyInputsAndOutputs) {
  TempDir dir;
  auto x = runtime::RandomTensor(runtime::DataType::kFloat32, {4, 8}, 99);
  testing::WriteFile(dir / "x.npy", runtime::EncodeNpy(*x));
  std::filesystem::create_directories(dir / "out");
  auto r = RunTruegreen({"--policy", "dev", "--json", "run", "--model",
                         Model("matmul_softmax.onnx"), "--input", "x=" + (dir / "x.npy"), "--runs",
                         "1", "--min-time", "0", "--save-outputs", dir / "out"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto y = runtime::LoadNpy(dir / "out/y.npy");
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y->shape(), (std::vector<std::int64_t>{4, 8}));
  EXPECT_EQ(ParseOut(r)["outputs"][0]["sha256"].get<std::string>(), y->Checksum());
  testing::WriteFile(dir / "bad.npy", "not numpy");
  auto bad = RunTruegreen({"--policy", "dev", "run", "--model", Model("matmul_softmax.onnx"),
                           "--input", "x=" + (dir / "bad.npy")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("bad.npy"), std::string::npos);
}

TEST(RuntimeCliTest, EnginesVerifyFindsArtifactsByKey) {
  TempDir dir;
  const std::string model = dir / "m.onnx";
  std::filesystem::copy_file(Model("unet_tiny.onnx"), model);
  testing::WriteFile(dir / "engines.yaml",
                     "engine_dir: " + (dir / "engines") +
                         "\nmodels:\n  - model: m.onnx\n    shapes: [\"sample:1x4x16x16\"]\n");
  const std::vector<std::string> args = {"--json",
                                         "engines",
                                         "verify",
                                         "--config",
                                         dir / "engines.yaml",
                                         "--gpu-name",
                                         "NVIDIA H200",
                                         "--compute-capability",
                                         "9.0"};
  auto missing = RunTruegreen(args);
  EXPECT_EQ(missing.exit_code, 3) << missing.err;
  auto j = ParseOut(missing);
  ASSERT_EQ(j["artifacts"].size(), 1u);
  EXPECT_FALSE(j["artifacts"][0]["present"].get<bool>());
  const std::string key = j["artifacts"][0]["key"].get<std::string>();

  // The key verify computes is the one the runtime computes for the same inputs.
  auto sha = common::Sha256File(model);
  auto fp = runtime::PolicyMatrixFingerprint("", true);
  const std::map<std::string, std::vector<std::int64_t>> shapes = {{"sample", {1, 4, 16, 16}}};
  const auto in = runtime::MakeEngineKeyInputs(*fp, {"NVIDIA H200", "9.0"}, *sha, "fp16", shapes,
                                               shapes, shapes);
  ASSERT_EQ(runtime::EngineKey(in), key);
  ASSERT_TRUE(runtime::WriteEngineManifest(dir / "engines", key, in).ok());
  auto present = RunTruegreen(args);
  EXPECT_EQ(present.exit_code, 0) << present.out << present.err;

  // Another GPU, or a changed model, needs another artifact.
  auto other_gpu = RunTruegreen({"engines", "verify", "--config", dir / "engines.yaml",
                                 "--gpu-name", "NVIDIA L4", "--compute-capability", "8.9"});
  EXPECT_EQ(other_gpu.exit_code, 3);
  testing::WriteFile(model, testing::ReadFile(Model("matmul_softmax.onnx")));
  EXPECT_EQ(RunTruegreen(args).exit_code, 3);
  // Without a GPU and without --gpu-name the key cannot be computed: integrity error.
  auto no_gpu = RunTruegreen({"engines", "verify", "--config", dir / "engines.yaml"});
  EXPECT_EQ(no_gpu.exit_code, 3);
  EXPECT_NE(no_gpu.err.find("--gpu-name"), std::string::npos) << no_gpu.err;
}

TEST(RuntimeCliTest, EnginesBuildNeedsTensorRt) {
  auto r = RunTruegreen({"--policy", "dev", "engines", "build", "--model", Model("unet_tiny.onnx"),
                         "--shapes", "sample:1x4x16x16"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("TensorRT provider is not attached"), std::string::npos) << r.err;
  auto bad = RunTruegreen({"--policy", "dev", "engines", "build", "--model",
                           Model("unet_tiny.onnx"), "--shapes", "sample:1xx4"});
  EXPECT_EQ(bad.exit_code, 2);
}

}  // namespace
}  // namespace tg

// ---- The startup chain: snapshot -> admit -> factory, drift refused in production.
namespace tg {
namespace {

// A matrix that pins an ONNX Runtime release other than the bundled 1.29 and requires nothing
// of the GPU (require_gpu: false): on this node its only FAIL is drift.
void WriteDriftedPolicy(const testing::TempDir& dir, const std::string& profile) {
  testing::WriteFile(dir / "m.yaml",
                     "schema: 1\nname: drifted\nrequire_gpu: false\nonnxruntime:\n"
                     "  version: \"1.28\"\n  providers: [CPUExecutionProvider]\n"
                     "devices:\n  count: 0\ncontainer:\n  driver_capabilities: []\n"
                     "  device_nodes: false\n");
  // A policy's matrix lies in the policy file's folder, named relative to it.
  testing::WriteFile(dir / "p.yaml", "profile: " + profile + "\nmatrix: m.yaml\n");
}

TEST(RuntimeStartupChain, ProductionRunAndGenerateRefuseADriftedNodeWithExit4) {
  testing::TempDir dir;
  WriteDriftedPolicy(dir, "production");
  auto r = testing::RunTruegreen(
      {"--policy", dir / "p.yaml", "run", "--model", Model("matmul_softmax.onnx")});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("version drift"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[onnxruntime.library]"), std::string::npos) << r.err;
  // The chain refuses before the pipeline is read: any folder with a pipeline index will do.
  testing::WriteFile(dir / "model_index.json", "{}");
  auto gen = testing::RunTruegreen({"--policy", dir / "p.yaml", "generate", "--model", dir.path(),
                                    "--prompt", "a cat", "--steps", "2", "--size", "256x256", "-o",
                                    dir / "out.png"});
  EXPECT_EQ(gen.exit_code, 4) << gen.out << gen.err;
  EXPECT_NE(gen.err.find("version drift"), std::string::npos) << gen.err;
}

TEST(RuntimeStartupChain, DevRecordsDriftAsAdvisoryAndReportsEveryStep) {
  testing::TempDir dir;
  WriteDriftedPolicy(dir, "dev");
  auto r = testing::RunTruegreen({"--policy", dir / "p.yaml", "--json", "run", "--model",
                                  Model("matmul_softmax.onnx"), "--runs", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  common::Json j = ParseOut(r);
  const common::Json& steps = j["startup"]["steps"];
  ASSERT_EQ(steps.size(), 6u) << j["startup"].dump(2);
  const char* order[] = {"snapshot", "admit", "factory", "open", "canary", "warmup"};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(steps[i]["step"], order[i]) << i;
  EXPECT_EQ(steps[1]["outcome"], "advisory");
  EXPECT_NE(steps[1]["detail"].get<std::string>().find("version drift"), std::string::npos);
  EXPECT_EQ(steps[2]["outcome"], "ok");
  EXPECT_EQ(steps[3]["outcome"], "ok");
  EXPECT_EQ(steps[3]["detail"], Model("matmul_softmax.onnx"));
  // CPU only: nothing to canary, and never a pass.
  EXPECT_EQ(steps[4]["outcome"], "skipped");
  EXPECT_EQ(steps[4]["detail"], "skipped: no GPU provider attached");
  EXPECT_FALSE(j["startup"].contains("canary"));
  EXPECT_EQ(steps[5]["outcome"], "skipped");
  for (const auto& s : steps) EXPECT_GE(s["ms"].get<double>(), 0.0);
  EXPECT_EQ(j["startup"]["admission"]["verdict"], "VERSION DRIFT");
  // The text report has one line per step.
  auto text = testing::RunTruegreen(
      {"--policy", dir / "p.yaml", "run", "--model", Model("matmul_softmax.onnx"), "--runs", "1"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("startup:    canary   skipped"), std::string::npos) << text.out;
}

// Production on this node (setup's pair, no driver): the chain stops at its factory step, exit 3,
// and --json says which step refused; a drifted matrix stops it at admit, exit 4.
TEST(RuntimeStartupChain, ProductionStopsAtTheRefusingStepInJson) {
  auto r = testing::RunTruegreen({"--json", "run", "--model", Model("matmul_softmax.onnx")});
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;
  common::Json j = ParseOut(r);
  const common::Json& steps = j["startup"]["steps"];
  ASSERT_FALSE(steps.empty()) << j.dump(2);
  EXPECT_EQ(steps.back()["outcome"], "refused") << j["startup"].dump(2);
  EXPECT_EQ(steps.back()["step"], "factory") << j["startup"].dump(2);
  EXPECT_EQ(steps[0]["step"], "snapshot");

  testing::TempDir dir;
  WriteDriftedPolicy(dir, "production");
  auto d = testing::RunTruegreen(
      {"--policy", dir / "p.yaml", "--json", "run", "--model", Model("matmul_softmax.onnx")});
  ASSERT_EQ(d.exit_code, 4) << d.out << d.err;
  common::Json dj = ParseOut(d);
  ASSERT_EQ(dj["startup"]["steps"].size(), 2u) << dj.dump(2);
  EXPECT_EQ(dj["startup"]["steps"][1]["step"], "admit");
  EXPECT_EQ(dj["startup"]["steps"][1]["outcome"], "refused");
}

}  // namespace
}  // namespace tg
