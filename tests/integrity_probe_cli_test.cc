// `truegreen probe` end to end: the real binary against the fake GPU stack, against no driver at
// all, and against the CUDA toolkit's stub driver. Each case is its own process (libraries loaded
// RTLD_NODELETE stay in a process), with behaviour chosen by TG_FAKE_* variables.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "common/config.h"
#include "probe/snapshot.h"
#include "tests/fakegpu/fake_root.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

using ::testing::HasSubstr;
using testing::RunTruegreen;

// Environment for a truegreen child. Sanitizer builds compile their LSan suppressions in
// (common/sanitizer_defaults.h), so nothing needs adding here.
std::map<std::string, std::string> ChildEnv(std::map<std::string, std::string> env) { return env; }

// Runs `truegreen <global> probe --json <args>` and parses the document strictly.
probe::Snapshot Probe(const std::vector<std::string>& global, const std::vector<std::string>& args,
                      std::map<std::string, std::string> env = {}) {
  env = ChildEnv(std::move(env));
  std::vector<std::string> argv = global;
  argv.push_back("probe");
  argv.push_back("--json");
  argv.insert(argv.end(), args.begin(), args.end());
  testing::ProcessResult r = RunTruegreen(argv, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto j = common::ParseJson(r.out, "probe stdout");
  EXPECT_TRUE(j.ok()) << j.status().ToString() << "\n" << r.err;
  if (!j.ok()) return {};
  auto s = probe::SnapshotFromJson(*j, "probe stdout");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : probe::Snapshot{};
}

const probe::ProviderLibrary* Provider(const probe::Snapshot& s, const std::string& name) {
  for (const auto& p : s.onnxruntime.provider_libraries) {
    if (p.provider == name) return &p;
  }
  return nullptr;
}

// True when this machine has a real NVIDIA driver (then "no driver" cases cannot be shown).
bool SystemHasDriver() {
  static const bool has = Probe({}, {"--no-init"}).cuda_driver.library.loaded;
  return has;
}

TEST(ProbeCli, FakeStackValuesAppearInTheSnapshot) {
  testing::FakeRoot root(testing::FakeRootOptions{.gpu_count = 2});
  probe::Snapshot s = Probe({"--lib-path", testing::FakeGpuDir()}, {"--root", root.path()},
                            {{"TG_FAKE_DRIVER_VERSION", "575.51.03"},
                             {"TG_FAKE_CUDA_DRIVER_VERSION", "12090"},
                             {"TG_FAKE_DEVICE_COUNT", "2"},
                             {"TG_FAKE_GPU_NAME", "NVIDIA A10G"},
                             {"TG_FAKE_CC", "8.6"},
                             {"TG_FAKE_MEM_MB", "22731"},
                             {"TG_FAKE_MIG", "1"},
                             {"TG_FAKE_PCIE_GEN", "4"},
                             {"TG_FAKE_CUDART_VERSION", "12080"},
                             {"TG_FAKE_CUDNN_VERSION", "90300"},
                             {"TG_FAKE_TRT_VERSION", "100900"},
                             {"NVIDIA_VISIBLE_DEVICES", "all"},
                             {"NVIDIA_DRIVER_CAPABILITIES", "compute,utility"},
                             {"CUDA_VISIBLE_DEVICES", testing::kUnset}});
  EXPECT_EQ(s.schema_version, probe::kSnapshotSchemaVersion);
  EXPECT_EQ(s.devices.gpus.size(), 2u);
  EXPECT_EQ(s.devices.kernel_module_version, "580.65.06");
  EXPECT_EQ(s.Env("NVIDIA_VISIBLE_DEVICES"), "all");
  EXPECT_EQ(s.Env("CUDA_VISIBLE_DEVICES"), std::nullopt);

  ASSERT_TRUE(s.nvml.library.loaded) << s.nvml.library.error;
  EXPECT_EQ(s.nvml.library.resolved_path, testing::FakeGpuDir() + "/libnvidia-ml.so.1");
  EXPECT_EQ(s.nvml.init->name, "NVML_SUCCESS");
  EXPECT_EQ(s.nvml.driver_version, "575.51.03");
  EXPECT_EQ(s.nvml.cuda_driver_version, "12.9");
  ASSERT_EQ(s.nvml.devices.size(), 2u);
  EXPECT_EQ(s.nvml.devices[1].name, "NVIDIA A10G");
  EXPECT_EQ(s.nvml.devices[1].compute_capability, "8.6");
  EXPECT_EQ(s.nvml.devices[1].memory_total_bytes, 22731ull << 20);
  EXPECT_EQ(s.nvml.devices[1].mig_enabled, true);
  EXPECT_EQ(s.nvml.devices[1].pcie_generation, 4);
  EXPECT_EQ(s.nvml.devices[1].pcie_width, 16);

  EXPECT_EQ(s.cuda_driver.library.version, "12.9");
  EXPECT_EQ(s.cuda_driver.init->code, 0);
  EXPECT_EQ(s.cuda_driver.device_count, 2);
  EXPECT_EQ(s.cuda_runtime.library.version, "12.8");
  EXPECT_EQ(s.cudnn.library.version, "9.3.0");
  EXPECT_EQ(s.cudnn.sub_libraries.size(), 7u);
  EXPECT_TRUE(s.cudnn.sub_libraries[0].loaded) << s.cudnn.sub_libraries[0].error;
  EXPECT_EQ(s.tensorrt.library.version_raw, 100900);
  EXPECT_EQ(s.tensorrt.library.version, "10.9.0");
  EXPECT_EQ(s.nccl.version, "2.28.9");
  EXPECT_EQ(s.cublas.version, "13.1.0");

  // The fake providers load (all their dependencies resolve to the fakes) and report their build.
  const auto* cuda = Provider(s, "CUDAExecutionProvider");
  ASSERT_NE(cuda, nullptr);
  EXPECT_TRUE(cuda->library.loaded) << cuda->library.error;
  EXPECT_EQ(cuda->library.resolved_path,
            testing::FakeGpuDir() + "/libonnxruntime_providers_cuda.so");
  EXPECT_EQ(cuda->cuda_major, 13);
  const auto* trt = Provider(s, "TensorrtExecutionProvider");
  ASSERT_NE(trt, nullptr);
  EXPECT_TRUE(trt->library.loaded) << trt->library.error;
  EXPECT_EQ(trt->cudnn_major, 9);
  EXPECT_EQ(trt->tensorrt_major, 10);

  // Real ONNX Runtime underneath the fakes.
  EXPECT_EQ(s.onnxruntime.library.version, "1.29.0");
}

TEST(ProbeCli, CuInitFailuresAreNamed) {
  for (auto [code, name] : std::vector<std::pair<std::string, std::string>>{
           {"100", "CUDA_ERROR_NO_DEVICE"},
           {"803", "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
           {"804", "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"}}) {
    SCOPED_TRACE(code);
    probe::Snapshot s =
        Probe({"--lib-path", testing::FakeGpuDir()}, {}, {{"TG_FAKE_CUINIT_RESULT", code}});
    ASSERT_TRUE(s.cuda_driver.init.has_value());
    EXPECT_EQ(s.cuda_driver.init->code, std::stoi(code));
    EXPECT_EQ(s.cuda_driver.init->name, name);
    EXPECT_FALSE(s.cuda_driver.device_count.has_value());
    EXPECT_THAT(s.cuda_driver.errors["init"], HasSubstr(name));
  }
}

TEST(ProbeCli, NvmlInitFailureIsNamed) {
  probe::Snapshot s =
      Probe({"--lib-path", testing::FakeGpuDir()}, {}, {{"TG_FAKE_NVML_INIT_RESULT", "18"}});
  ASSERT_TRUE(s.nvml.init.has_value());
  EXPECT_EQ(s.nvml.init->name, "NVML_ERROR_LIB_RM_VERSION_MISMATCH");
  EXPECT_FALSE(s.nvml.driver_version.has_value());
  EXPECT_TRUE(s.nvml.devices.empty());
}

TEST(ProbeCli, MissingFakeDriverFailsTheProviderWithTheLinkerText) {
  if (SystemHasDriver()) GTEST_SKIP() << "a real libcuda.so.1 is installed; it cannot be absent";
  testing::FakeLibDir libs({"libcuda.so.1"});
  probe::Snapshot s = Probe({"--lib-path", libs.path()}, {});
  EXPECT_FALSE(s.cuda_driver.library.loaded);
  EXPECT_THAT(s.cuda_driver.library.error,
              HasSubstr("libcuda.so.1: cannot open shared object file"));
  EXPECT_TRUE(s.cuda_runtime.library.loaded);  // the rest of the fake stack is there
  const auto* cuda = Provider(s, "CUDAExecutionProvider");
  ASSERT_NE(cuda, nullptr);
  EXPECT_FALSE(cuda->library.loaded);
  EXPECT_THAT(cuda->library.error, HasSubstr("libcuda.so.1: cannot open shared object file"));
}

TEST(ProbeCli, NoDriverRealProviderErrorIsVerbatim) {
  if (SystemHasDriver()) GTEST_SKIP() << "a real NVIDIA driver is installed on this machine";
  probe::Snapshot s = Probe({}, {});
  EXPECT_FALSE(s.cuda_driver.library.loaded);
  EXPECT_FALSE(s.nvml.library.loaded);
  EXPECT_THAT(s.nvml.library.error, HasSubstr("libnvidia-ml.so.1"));
  const auto* cuda = Provider(s, "CUDAExecutionProvider");
  ASSERT_NE(cuda, nullptr);
  EXPECT_EQ(cuda->file, testing::OrtDir() + "/lib/libonnxruntime_providers_cuda.so");
  EXPECT_FALSE(cuda->library.loaded);
  EXPECT_THAT(cuda->library.error,
              HasSubstr("libcuda.so.1: cannot open shared object file: No such file or directory"));
  EXPECT_EQ(cuda->cuda_major, 13);
  EXPECT_EQ(s.onnxruntime.library.version, "1.29.0");
  EXPECT_THAT(s.onnxruntime.build_info, HasSubstr("ORT Build Info"));
  EXPECT_FALSE(s.onnxruntime.compiled_providers.empty());
}

constexpr const char* kStub = "/usr/local/cuda/lib64/stubs/libcuda.so";
constexpr const char* kCudaLib = "/usr/local/cuda/lib64";

TEST(ProbeCli, StubDriverLoadsTheProviderButCuInitFails) {
  if (::access(kStub, R_OK) != 0) GTEST_SKIP() << kStub << " not installed";
  if (SystemHasDriver()) GTEST_SKIP() << "a real driver would be found instead of the stub";
  // The stub exposed under the driver's soname, next to ONNX Runtime and its provider libraries
  // (the layout of an ORT GPU package: ORT looks for libonnxruntime_providers_shared.so beside
  // libonnxruntime.so).
  testing::TempDir dir;
  namespace fs = std::filesystem;
  fs::create_symlink(kStub, dir / "libcuda.so.1");
  for (const char* f :
       {"libonnxruntime.so", "libonnxruntime_providers_shared.so",
        "libonnxruntime_providers_cuda.so", "libonnxruntime_providers_tensorrt.so"}) {
    fs::create_symlink(testing::OrtDir() + "/lib/" + f, dir / f);
  }
  probe::Snapshot s = Probe({"--lib-path", dir.path(), "--lib-path", kCudaLib}, {});
  ASSERT_TRUE(s.cuda_driver.library.loaded) << s.cuda_driver.library.error;
  EXPECT_THAT(s.cuda_driver.library.resolved_path, HasSubstr("stubs/libcuda.so"));
  ASSERT_TRUE(s.cuda_driver.init.has_value());
  // Measured: the CUDA 13 stub answers every call with 34 (CUDA_ERROR_STUB_LIBRARY).
  EXPECT_EQ(s.cuda_driver.init->code, 34);
  EXPECT_EQ(s.cuda_driver.init->name, "CUDA_ERROR_STUB_LIBRARY");
  EXPECT_FALSE(s.cuda_driver.device_count.has_value());

  const auto* cuda = Provider(s, "CUDAExecutionProvider");
  ASSERT_NE(cuda, nullptr);
  EXPECT_TRUE(cuda->library.loaded) << cuda->library.error;
  EXPECT_EQ(cuda->load_method, "ort_register");
  ASSERT_TRUE(cuda->ep_devices.has_value());
  EXPECT_TRUE(cuda->ep_devices->empty()) << "the stub has no GPU to offer";
  EXPECT_TRUE(s.onnxruntime.providers_shared.loaded) << s.onnxruntime.providers_shared.error;
  EXPECT_EQ(s.onnxruntime.library.version, "1.29.0");
  EXPECT_THAT(s.onnxruntime.build_info, HasSubstr("ORT Build Info"));
}

TEST(ProbeCli, StubWithBundledLayoutNeverCrashes) {
  if (::access(kStub, R_OK) != 0) GTEST_SKIP() << kStub << " not installed";
  if (SystemHasDriver()) GTEST_SKIP() << "a real driver would be found instead of the stub";
  testing::TempDir dir;
  std::filesystem::create_symlink(kStub, dir / "libcuda.so.1");
  probe::Snapshot s = Probe({"--lib-path", dir.path(), "--lib-path", kCudaLib}, {});
  const auto* cuda = Provider(s, "CUDAExecutionProvider");
  ASSERT_NE(cuda, nullptr);
  // Loaded (ORT can find its provider host) or a recorded reason — but the probe survived.
  EXPECT_NE(cuda->library.loaded, !cuda->library.error.empty());
  if (!s.onnxruntime.providers_shared.loaded) {
    EXPECT_THAT(s.onnxruntime.providers_shared.error, HasSubstr("libonnxruntime.so"));
    EXPECT_THAT(cuda->library.error, HasSubstr("Provider_GetHost"));
  }
}

TEST(ProbeCli, HumanOutputAndUsageErrors) {
  testing::ProcessResult r = RunTruegreen({"--lib-path", testing::FakeGpuDir(), "probe"},
                                          ChildEnv({{"TG_FAKE_GPU_NAME", "Fake GPU Z"}}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ONNX Runtime"));
  EXPECT_THAT(r.out, HasSubstr("1.29.0"));
  EXPECT_THAT(r.out, HasSubstr("Fake GPU Z"));
  EXPECT_THAT(r.out, HasSubstr("CUDAExecutionProvider"));

  EXPECT_EQ(RunTruegreen({"probe", "--bogus"}).exit_code, 2);
  EXPECT_EQ(RunTruegreen({"probe", "--root"}).exit_code, 2);
  EXPECT_EQ(RunTruegreen({"probe", "extra-arg"}).exit_code, 2);
}

// A folder the user names for a command to read (typed DIR) that does not exist, or is a file,
// is a usage error before anything runs, naming the flag and the value: probe used to answer
// with a snapshot of a root that is not there, doctor to fail as if the node were broken.
TEST(ProbeCli, FolderOptionsThatDoNotExistAreUsageErrors) {
  testing::TempDir dir;
  const std::string missing = dir / "missing", file = dir / "file";
  testing::WriteFile(file, "x");
  const std::vector<std::vector<std::string>> commands = {
      {"probe", "--root", missing},
      {"--lib-path", missing, "probe"},
      {"--lib-path", missing, "doctor"},
      {"doctor", "--root", missing},
      {"admit", "--root", missing},
      {"serve", "--models", missing},
      {"tokenize", "--tokenizer", missing, "a photo"},
      {"generate", "--model", missing, "--prompt", "a photo"},
  };
  for (const auto& args : commands) {
    for (const auto& value : {missing, file}) {
      std::vector<std::string> argv = args;
      std::replace(argv.begin(), argv.end(), missing, value);
      const std::string flag = *(std::find(argv.begin(), argv.end(), value) - 1);
      testing::ProcessResult r = RunTruegreen(argv);
      const std::string what = ::testing::PrintToString(argv);
      EXPECT_EQ(r.exit_code, 2) << what << "\n" << r.err;
      EXPECT_THAT(r.err, HasSubstr(flag + " " + value)) << what;
      EXPECT_THAT(r.err, HasSubstr(value == file ? "is not a directory: found a regular file"
                                                 : "no such file or directory"))
          << what;
      EXPECT_THAT(r.err, HasSubstr("a directory is required")) << what;
    }
  }
  // The value from the environment is named as such.
  testing::ProcessResult env = RunTruegreen({"serve"}, {{"TRUEGREEN_MODELS", missing}});
  EXPECT_EQ(env.exit_code, 2) << env.err;
  EXPECT_THAT(env.err, HasSubstr("environment variable TRUEGREEN_MODELS"));
  // Under --json the error object carries NOT_FOUND (a missing input, as for files).
  testing::ProcessResult json = RunTruegreen({"--json", "probe", "--root", missing});
  EXPECT_EQ(json.exit_code, 2);
  EXPECT_THAT(json.out, HasSubstr("\"NOT_FOUND\""));
  // A folder a command writes is left to the command: run names it itself.
  testing::ProcessResult out = RunTruegreen(
      {"--policy", "dev", "run", "--model", "/nonexistent.onnx", "--save-outputs", missing});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_THAT(out.err, HasSubstr("--model /nonexistent.onnx")) << out.err;
}

}  // namespace
}  // namespace tg
