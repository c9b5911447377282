// `truegreen admit` end to end: the real binary, the real ONNX Runtime, and the fake NVIDIA stack
// (tests/fakegpu) with a fake device root. Each row breaks one thing through TG_FAKE_* variables,
// the library directory, the fake root or the matrix, and asserts verdict, exit code and the
// named root cause in the JSON report. Every row is its own process (libraries stay loaded).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "common/config.h"
#include "tests/fakegpu/fake_root.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

using ::testing::HasSubstr;

// Matches the fake stack's defaults (README): driver 580.65.06 / CUDA 13.0, cuBLAS 13.1,
// cuDNN 9.13, TensorRT 10.13, one H100 (9.0, 81559 MiB, MIG off), real ORT 1.29.0.
std::string MatrixYaml(const std::string& devices_extra = "", const std::string& ort = "=1.29.0") {
  return "name: fakegpu\n"
         "driver: {branch: 580, minimum: \"580.65.06\"}\n"
         "cuda: {runtime: \"13.0\", cublas: \"13\"}\n"
         "cudnn: \">=9.1,<10\"\n"
         "tensorrt: \"10.13\"\n"
         "onnxruntime:\n"
         "  version: \"" +
         ort +
         "\"\n"
         "  provider_cuda_major: 13\n"
         "  providers: [TensorrtExecutionProvider, CUDAExecutionProvider]\n"
         "devices: {min_compute_capability: \"8.0\", min_memory_mib: 16384" +
         (devices_extra.empty() ? ", count: 1, mig: disabled" : devices_extra) +
         "}\n"
         "container: {driver_capabilities: [compute, utility], device_nodes: true}\n";
}

struct Row {
  std::string name;
  std::map<std::string, std::string> env;
  std::set<std::string> exclude;  // fake libraries left out of the --lib-path directory
  testing::FakeRootOptions root;
  std::string matrix;
  int exit_code;
  std::string verdict;
  std::string cause_id;    // first entry of "causes"
  std::string cause_text;  // contained in that check's found + cause
  std::string core;        // a real ONNX Runtime core linked in as libonnxruntime.so, if set
};

struct Outcome {
  testing::ProcessResult proc;
  common::Json report;
};

Outcome RunAdmit(const Row& row) {
  testing::TempDir dir;
  testing::WriteFile(dir / "matrix.yaml", row.matrix);
  testing::FakeRoot root(row.root);
  testing::FakeLibDir libs(row.exclude);
  if (!row.core.empty()) {
    std::filesystem::create_symlink(row.core, libs.path() + "/libonnxruntime.so");
  }
  std::map<std::string, std::string> env = {{"NVIDIA_VISIBLE_DEVICES", "all"},
                                            {"NVIDIA_DRIVER_CAPABILITIES", "compute,utility"},
                                            {"CUDA_VISIBLE_DEVICES", testing::kUnset},
                                            {"TRUEGREEN_LIB_PATH", testing::kUnset}};
  for (const auto& [k, v] : row.env) env[k] = v;
  Outcome o;
  o.proc = testing::RunTruegreen({"--json", "--lib-path", libs.path(), "admit", "--matrix",
                                  dir / "matrix.yaml", "--root", root.path()},
                                 env);
  auto j = common::ParseJson(o.proc.out, "admit stdout");
  EXPECT_TRUE(j.ok()) << o.proc.out << o.proc.err;
  if (j.ok()) o.report = *j;
  return o;
}

const common::Json* CheckById(const common::Json& report, const std::string& id) {
  for (const auto& c : report["checks"]) {
    if (c["id"] == id) return &c;
  }
  return nullptr;
}

std::string Text(const common::Json& report) {
  std::string s;
  for (const auto& c : report["checks"]) {
    s += c["result"].get<std::string>() + " " + c["id"].get<std::string>() + ": " +
         c["found"].get<std::string>() + " — " + c["cause"].get<std::string>() + "\n";
  }
  return s;
}

TEST(AdmitFakeGpu, Table) {
  const std::string good = MatrixYaml();
  std::vector<Row> rows = {
      {"all good", {}, {}, {}, good, 0, "ACCELERATED", "", ""},
      {"driver library absent",
       {},
       {"libcuda.so.1"},
       {},
       good,
       3,
       "NOT ACCELERATED",
       "driver.library",
       "the NVIDIA driver is not mounted into this container"},
      {"cuInit no device",
       {{"TG_FAKE_CUINIT_RESULT", "100"}},
       {},
       {},
       good,
       3,
       "NOT ACCELERATED",
       "driver.init",
       "CUDA_ERROR_NO_DEVICE"},
      {"cuInit 803",
       {{"TG_FAKE_CUINIT_RESULT", "803"}},
       {},
       {},
       good,
       3,
       "NOT ACCELERATED",
       "driver.init",
       "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
      {"cuInit 804",
       {{"TG_FAKE_CUINIT_RESULT", "804"}},
       {},
       {},
       good,
       3,
       "NOT ACCELERATED",
       "driver.init",
       "cuda-compat"},
      {"driver too old for the runtime (CUDA 12.2 driver, 13.0 runtime)",
       {{"TG_FAKE_DRIVER_VERSION", "535.104.05"}, {"TG_FAKE_CUDA_DRIVER_VERSION", "12020"}},
       {},
       {.driver_version = "535.104.05"},
       good,
       3,
       "NOT ACCELERATED",
       "driver.cuda_floor",
       "too old for CUDA 13"},
      {"cuDNN major differs from the provider's",
       {{"TG_FAKE_CUDNN_VERSION", "80907"}},
       {},
       {},
       good,
       3,
       "NOT ACCELERATED",
       "cudnn.provider_major.TensorrtExecutionProvider",
       "install cuDNN 9"},
      {"TensorRT minor differs from the matrix",
       {{"TG_FAKE_TRT_VERSION", "101200"}},
       {},
       {},
       good,
       4,
       "VERSION DRIFT",
       "tensorrt",
       "TensorRT 10.12.0 differs from the matrix"},
      {"ORT version differs from the matrix",
       {},
       {},
       {},
       MatrixYaml("", "=1.28.0"),
       4,
       "VERSION DRIFT",
       "onnxruntime.library",
       "ONNX Runtime release differs"},
      {"fewer devices than required",
       {},
       {},
       {.gpu_count = 2},
       MatrixYaml(", count: 2, mig: disabled"),
       3,
       "NOT ACCELERATED",
       "devices.count",
       "fewer GPUs are visible"},
      {"compute capability too low",
       {{"TG_FAKE_CC", "7.0"}},
       {},
       {},
       good,
       3,
       "NOT ACCELERATED",
       "devices.compute_capability",
       "7.0"},
      {"NVIDIA_VISIBLE_DEVICES=void",
       {{"NVIDIA_VISIBLE_DEVICES", "void"}},
       {},
       {},
       good,
       3,
       "NOT ACCELERATED",
       "env.visible_devices",
       "nvidia.com/gpu"},
      {"capabilities without compute",
       {{"NVIDIA_DRIVER_CAPABILITIES", "utility"}},
       {},
       {},
       good,
       3,
       "NOT ACCELERATED",
       "env.driver_capabilities",
       "without 'compute'"},
      {"MIG expected but disabled",
       {{"TG_FAKE_MIG", "0"}},
       {},
       {},
       MatrixYaml(", count: 1, mig: enabled"),
       3,
       "NOT ACCELERATED",
       "devices.mig",
       "not in MIG mode"},
      {"device nodes missing",
       {},
       {},
       {.nvidiactl = false},
       good,
       3,
       "NOT ACCELERATED",
       "devices.nodes",
       "/dev/nvidiactl"},
      {"CPU-flavor core (the real CPU-built core) with the GPU providers",
       {},
       {"libonnxruntime.so"},
       {},
       good,
       3,
       "NOT ACCELERATED",
       "onnxruntime.core_flavor.TensorrtExecutionProvider",
       "one GPU release archive of the same version",
       testing::CpuOrtCore()},
      {"fake core reading as a CPU build",
       {{"TG_FAKE_ORT_FLAVOR", "cpu"}},
       {},
       {},
       good,
       3,
       "NOT ACCELERATED",
       "onnxruntime.core_flavor.TensorrtExecutionProvider",
       "is a CPU build and cannot host"},
      {"TensorRT missing fails its provider",
       {},
       {"libnvinfer.so.10"},
       {},
       good,
       3,
       "NOT ACCELERATED",
       "tensorrt",
       "TensorRT is not installed"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Outcome o = RunAdmit(row);
    ASSERT_TRUE(o.report.is_object()) << o.proc.err;
    EXPECT_EQ(o.proc.exit_code, row.exit_code) << Text(o.report) << o.proc.err;
    EXPECT_EQ(o.report["exit_code"], row.exit_code);
    EXPECT_EQ(o.report["verdict"], row.verdict) << Text(o.report);
    if (row.cause_id.empty()) {
      EXPECT_TRUE(o.report["causes"].empty()) << Text(o.report);
      continue;
    }
    ASSERT_FALSE(o.report["causes"].empty()) << Text(o.report);
    EXPECT_EQ(o.report["causes"][0], row.cause_id) << Text(o.report);
    const common::Json* c = CheckById(o.report, row.cause_id);
    ASSERT_NE(c, nullptr);
    std::string line = (*c)["found"].get<std::string>() + " | " +
                       (*c)["required"].get<std::string>() + " | " +
                       (*c)["cause"].get<std::string>();
    EXPECT_THAT(line, HasSubstr(row.cause_text));
  }
}

TEST(AdmitFakeGpu, HumanOutputHasOneLinePerCheckAndTheVerdict) {
  Row row{"void", {{"NVIDIA_VISIBLE_DEVICES", "void"}}, {}, {}, MatrixYaml(), 3, "", "", ""};
  testing::TempDir dir;
  testing::WriteFile(dir / "matrix.yaml", row.matrix);
  testing::FakeRoot root;
  testing::ProcessResult r = testing::RunTruegreen(
      {"--lib-path", testing::FakeGpuDir(), "admit", "--matrix", dir / "matrix.yaml", "--root",
       root.path()},
      {{"NVIDIA_VISIBLE_DEVICES", "void"}, {"NVIDIA_DRIVER_CAPABILITIES", "compute,utility"}});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("FAIL  env.visible_devices: found NVIDIA_VISIBLE_DEVICES=\"void\""));
  EXPECT_THAT(r.out, HasSubstr("PASS  driver.init: CUDA_SUCCESS"));
  EXPECT_THAT(r.out, HasSubstr("verdict: NOT ACCELERATED (exit 3"));
}

// Every admission check passes on the healthy fake node, but doctor's startup chain then tries
// to attach the provider to the core, and the fake GPU-flavour core is the real CPU core inside
// ("not enabled in this build"): a refused step after admit leaves no ACCELERATED verdict, with
// --matrix as without it.
TEST(AdmitFakeGpu, DoctorOnAHealthyFakeNodeStillNeedsTheFactory) {
  testing::TempDir dir;
  testing::WriteFile(dir / "matrix.yaml", MatrixYaml());
  testing::FakeRoot root;
  testing::ProcessResult r =
      testing::RunTruegreen({"--lib-path", testing::FakeGpuDir(), "doctor", "--matrix",
                             dir / "matrix.yaml", "--root", root.path()},
                            {{"NVIDIA_VISIBLE_DEVICES", "all"},
                             {"NVIDIA_DRIVER_CAPABILITIES", "compute,utility"},
                             {"CUDA_VISIBLE_DEVICES", testing::kUnset}});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "NOT ACCELERATED") << r.out;
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("FAIL  "))) << r.out;  // admission itself passed
  EXPECT_THAT(r.out, HasSubstr("because admission passed, but startup step 'factory' was refused"));
  EXPECT_THAT(r.out, HasSubstr("not enabled in this build"));
  // The full check list (behind --verbose) closes with a verdict line that agrees with the first.
  testing::ProcessResult v =
      testing::RunTruegreen({"--lib-path", testing::FakeGpuDir(), "doctor", "--verbose", "--matrix",
                             dir / "matrix.yaml", "--root", root.path()},
                            {{"NVIDIA_VISIBLE_DEVICES", "all"},
                             {"NVIDIA_DRIVER_CAPABILITIES", "compute,utility"},
                             {"CUDA_VISIBLE_DEVICES", testing::kUnset}});
  EXPECT_EQ(v.exit_code, 3) << v.out << v.err;
  EXPECT_THAT(v.out, ::testing::Not(HasSubstr("verdict: ACCELERATED"))) << v.out;
  EXPECT_THAT(v.out, HasSubstr("verdict: NOT ACCELERATED (exit 3)")) << v.out;
}

// doctor --matrix M: the startup chain's factory attaches M's providers, not the --policy's. With
// a CUDA-only matrix, the factory asks for CUDA alone (it used to ask for the production policy's
// TensorRT + CUDA), and its refusal (the CPU-built core inside the fake core) is the verdict.
TEST(AdmitFakeGpu, DoctorMatrixProvidersDriveTheFactory) {
  testing::TempDir dir;
  std::string m = MatrixYaml();
  m.replace(m.find("tensorrt: \"10.13\"\n"), std::string("tensorrt: \"10.13\"\n").size(), "");
  m.replace(m.find("[TensorrtExecutionProvider, CUDAExecutionProvider]"),
            std::string("[TensorrtExecutionProvider, CUDAExecutionProvider]").size(),
            "[CUDAExecutionProvider]");
  testing::WriteFile(dir / "matrix.yaml", m);
  testing::FakeRoot root;
  testing::FakeLibDir libs({"libonnxruntime_providers_tensorrt.so"});
  testing::ProcessResult r =
      testing::RunTruegreen({"--json", "--lib-path", libs.path(), "doctor", "--matrix",
                             dir / "matrix.yaml", "--root", root.path()},
                            {{"NVIDIA_VISIBLE_DEVICES", "all"},
                             {"NVIDIA_DRIVER_CAPABILITIES", "compute,utility"},
                             {"CUDA_VISIBLE_DEVICES", testing::kUnset}});
  auto j = common::ParseJson(r.out, "doctor --json");
  ASSERT_TRUE(j.ok()) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_EQ((*j)["verdict"], "NOT ACCELERATED") << r.out;
  const common::Json* factory = nullptr;
  for (const auto& step : (*j)["startup"]["steps"]) {
    if (step["step"] == "factory") factory = &step;
  }
  ASSERT_NE(factory, nullptr) << (*j)["startup"].dump(2);
  EXPECT_EQ((*factory)["outcome"], "refused") << factory->dump(2);
  const std::string detail = (*factory)["detail"];
  EXPECT_THAT(detail, HasSubstr("requires CUDAExecutionProvider;")) << detail;
  EXPECT_THAT(detail, ::testing::Not(HasSubstr("Tensorrt"))) << detail;
}

// The build-flavor rule on both sides of the same provider files: the GPU-flavor core passes it,
// the real CPU-built core (setup's test fixture) fails it naming both files and the fix.
TEST(AdmitFakeGpu, BuildFlavorRuleNamesCoreAndProvider) {
  Row gpu{"gpu core", {}, {}, {}, MatrixYaml(), 0, "", "", ""};
  Outcome pass = RunAdmit(gpu);
  ASSERT_TRUE(pass.report.is_object()) << pass.proc.err;
  for (const char* p : {"TensorrtExecutionProvider", "CUDAExecutionProvider"}) {
    const common::Json* c = CheckById(pass.report, std::string("onnxruntime.core_flavor.") + p);
    ASSERT_NE(c, nullptr) << Text(pass.report);
    EXPECT_EQ((*c)["result"], "PASS") << Text(pass.report);
    EXPECT_THAT((*c)["found"].get<std::string>(), HasSubstr("(gpu build;"));
  }

  Row cpu{"cpu core", {}, {"libonnxruntime.so"}, {}, MatrixYaml(), 3, "",
          "",         "", testing::CpuOrtCore()};
  Outcome fail = RunAdmit(cpu);
  ASSERT_TRUE(fail.report.is_object()) << fail.proc.err;
  EXPECT_EQ(fail.proc.exit_code, 3);
  const common::Json* c = CheckById(fail.report, "onnxruntime.core_flavor.CUDAExecutionProvider");
  ASSERT_NE(c, nullptr) << Text(fail.report);
  EXPECT_EQ((*c)["result"], "FAIL");
  const std::string found = (*c)["found"].get<std::string>();
  EXPECT_THAT(found, HasSubstr("/libonnxruntime.so (cpu build;"));
  EXPECT_THAT(found, HasSubstr("libonnxruntime_providers_cuda.so"));
  EXPECT_THAT((*c)["cause"].get<std::string>(),
              HasSubstr("core and providers from one GPU release archive of the same version"));
}

}  // namespace
}  // namespace tg
