// Table-driven tests of the admission engine on synthesized snapshots: each case starts from a
// healthy node, breaks one thing, and asserts the verdict, the exit code and the named cause.
#include "policy/admission.h"

#include <gtest/gtest.h>

#include <functional>

#include "common/status.h"
#include "policy/ort_pair.h"
#include "probe/snapshot.h"
#include "tests/support/test_util.h"

namespace tg::policy {
namespace {

using probe::LibInfo;
using probe::Snapshot;

LibInfo Lib(const std::string& soname, const std::string& version, const std::string& dir) {
  LibInfo l;
  l.soname = soname;
  l.loaded = true;
  l.resolved_path = dir + "/" + soname;
  l.version = version;
  return l;
}

LibInfo Missing(const std::string& soname) {
  LibInfo l;
  l.soname = soname;
  l.error = soname + ": cannot open shared object file: No such file or directory";
  return l;
}

// A healthy H100 node with CUDA 13, cuDNN 9, TensorRT 10.13 and ORT 1.29 providers.
Snapshot GoodSnapshot() {
  Snapshot s;
  const std::string sys = "/usr/lib/x86_64-linux-gnu";
  const std::string cuda = "/usr/local/cuda/lib64";
  s.env = {{"NVIDIA_VISIBLE_DEVICES", "all"}, {"NVIDIA_DRIVER_CAPABILITIES", "compute,utility"}};
  s.devices.nvidiactl = {"/dev/nvidiactl", true, "char-device", ""};
  s.devices.nvidia_uvm = {"/dev/nvidia-uvm", true, "char-device", ""};
  s.devices.gpus = {{"/dev/nvidia0", true, "char-device", ""}};
  s.devices.proc_driver_version = {"/proc/driver/nvidia/version", true, "file", ""};
  s.devices.kernel_module_version = "580.65.06";
  s.nvml.library = Lib("libnvidia-ml.so.1", "580.65.06", sys);
  s.nvml.init = probe::ApiResult{0, "NVML_SUCCESS"};
  s.nvml.driver_version = "580.65.06";
  s.nvml.cuda_driver_version_raw = 13000;
  s.nvml.cuda_driver_version = "13.0";
  s.nvml.device_count = 1;
  probe::NvmlDevice nd;
  nd.index = 0;
  nd.name = "NVIDIA H100 80GB HBM3";
  nd.compute_capability = "9.0";
  nd.memory_total_bytes = 81559ull << 20;
  nd.mig_enabled = false;
  s.nvml.devices = {nd};
  s.cuda_driver.library = Lib("libcuda.so.1", "13.0", sys);
  s.cuda_driver.init = probe::ApiResult{0, "CUDA_SUCCESS"};
  s.cuda_driver.device_count = 1;
  probe::CudaDevice cd;
  cd.index = 0;
  cd.name = nd.name;
  cd.compute_capability = "9.0";
  cd.memory_total_bytes = nd.memory_total_bytes;
  s.cuda_driver.devices = {cd};
  s.cuda_runtime.library = Lib("libcudart.so.13", "13.0", cuda);
  s.cuda_runtime.driver_version_raw = 13000;
  s.cuda_runtime.driver_version = "13.0";
  s.cublas = Lib("libcublas.so.13", "13.1.0", cuda);
  s.cudnn.library = Lib("libcudnn.so.9", "9.13.0", cuda);
  s.cudnn.sub_libraries = {Lib("libcudnn_ops.so.9", "9.13.0", cuda),
                           Lib("libcudnn_cnn.so.9", "9.13.0", cuda)};
  s.tensorrt.library = Lib("libnvinfer.so.10", "10.13.0", sys);
  s.onnxruntime.library = Lib("libonnxruntime.so", "1.29.0", "/opt/ort/lib");
  // A core from the GPU release archive: it lists the GPU providers it can host.
  s.onnxruntime.compiled_providers = {"TensorrtExecutionProvider", "CUDAExecutionProvider",
                                      "CPUExecutionProvider"};
  s.onnxruntime.core_flavor = "gpu";
  probe::ProviderLibrary trt;
  trt.provider = "TensorrtExecutionProvider";
  trt.library = Lib("libonnxruntime_providers_tensorrt.so", "", "/opt/ort/gpu");
  trt.library.version.reset();
  trt.cuda_major = 13;
  trt.cudnn_major = 9;
  trt.tensorrt_major = 10;
  probe::ProviderLibrary cu = trt;
  cu.provider = "CUDAExecutionProvider";
  cu.library = Lib("libonnxruntime_providers_cuda.so", "", "/opt/ort/gpu");
  cu.library.version.reset();
  cu.cudnn_major.reset();
  cu.tensorrt_major.reset();
  s.onnxruntime.provider_libraries = {trt, cu};
  return s;
}

Matrix TestMatrix() {
  auto m = ParseMatrix(R"(name: test
driver: {branch: 580, minimum: "580.65.06"}
cuda: {runtime: "13.0", cublas: "13"}
cudnn: ">=9.1,<10"
tensorrt: "10.13"
onnxruntime:
  version: "=1.29.0"
  provider_cuda_major: 13
  providers: [TensorrtExecutionProvider, CUDAExecutionProvider]
devices: {count: 1, min_compute_capability: "8.0", min_memory_mib: 16384, mig: disabled}
container: {driver_capabilities: [compute, utility], device_nodes: true}
)",
                       "test.yaml");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(m).value() : Matrix{};
}

void SetEnv(Snapshot& s, const std::string& name, std::optional<std::string> value) {
  for (auto& e : s.env) {
    if (e.name == name) {
      e.value = value;
      return;
    }
  }
  s.env.push_back({name, value});
}

struct Case {
  const char* name;
  std::function<void(Snapshot&, Matrix&)> mutate;
  Verdict verdict;
  int exit_code;
  const char* cause_id;    // the first cause (root cause) must be this check
  const char* cause_text;  // and its line must contain this text
};

std::string Dump(const AdmissionReport& r) { return r.ToText(); }

TEST(AdmissionTest, Table) {
  const Case cases[] = {
      {"all good", [](Snapshot&, Matrix&) {}, Verdict::kAccelerated, 0, "", ""},
      {"driver library absent",
       [](Snapshot& s, Matrix&) {
         s.cuda_driver.library = Missing("libcuda.so.1");
         s.cuda_driver.init.reset();
         s.cuda_driver.device_count.reset();
         s.cuda_driver.devices.clear();
         s.onnxruntime.provider_libraries[0].library.loaded = false;
         s.onnxruntime.provider_libraries[0].library.error =
             "libcuda.so.1: cannot open shared object file: No such file or directory";
       },
       Verdict::kNotAccelerated, 3, "driver.library",
       "libcuda.so.1 not found — the NVIDIA driver is not mounted into this container"},
      {"cuInit no device (100)",
       [](Snapshot& s, Matrix&) {
         s.cuda_driver.init = probe::ApiResult{100, "CUDA_ERROR_NO_DEVICE"};
         s.cuda_driver.device_count.reset();
         s.cuda_driver.devices.clear();
       },
       Verdict::kNotAccelerated, 3, "driver.init", "CUDA_ERROR_NO_DEVICE (100)"},
      {"cuInit driver mismatch (803)",
       [](Snapshot& s, Matrix&) {
         s.cuda_driver.init = probe::ApiResult{803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"};
       },
       Verdict::kNotAccelerated, 3, "driver.init", "kernel module are different versions"},
      {"cuInit compat not supported (804)",
       [](Snapshot& s, Matrix&) {
         s.cuda_driver.init = probe::ApiResult{804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"};
       },
       Verdict::kNotAccelerated, 3, "driver.init", "forward-compatibility package (cuda-compat)"},
      {"stub libcuda",
       [](Snapshot& s, Matrix&) {
         s.cuda_driver.library.resolved_path = "/usr/local/cuda/lib64/stubs/libcuda.so";
         s.cuda_driver.init = probe::ApiResult{34, "CUDA_ERROR_STUB_LIBRARY"};
       },
       Verdict::kNotAccelerated, 3, "driver.library", "the CUDA toolkit's stub"},
      {"driver too old for runtime (CUDA 12.2 driver, 13.0 runtime)",
       [](Snapshot& s, Matrix&) {
         s.nvml.driver_version = "535.104.05";
         s.devices.kernel_module_version = "535.104.05";
         s.nvml.cuda_driver_version = "12.2";
         s.cuda_driver.library.version = "12.2";
       },
       Verdict::kNotAccelerated, 3, "driver.cuda_floor", "too old for CUDA 13"},
      {"driver CUDA insufficient but floor unknown",
       [](Snapshot& s, Matrix& m) {
         m.driver = {};
         s.nvml.driver_version.reset();
         s.devices.kernel_module_version.reset();
         s.nvml.cuda_driver_version = "12.2";
         s.cuda_driver.library.version = "12.2";
       },
       Verdict::kNotAccelerated, 3, "driver.cuda_version",
       "CUDA driver version is insufficient for CUDA runtime version"},
      {"cuDNN major differs from provider's",
       [](Snapshot& s, Matrix& m) {
         m.cudnn.reset();
         s.cudnn.library = Lib("libcudnn.so.8", "8.9.7", "/usr/lib");
       },
       Verdict::kNotAccelerated, 3, "cudnn.provider_major.TensorrtExecutionProvider",
       "install cuDNN 9"},
      {"cuDNN version outside the matrix range",
       [](Snapshot& s, Matrix&) { s.cudnn.library.version = "9.0.0"; }, Verdict::kDrift, 4, "cudnn",
       "cuDNN 9.0.0 differs from the matrix"},
      {"TensorRT minor differs from the matrix",
       [](Snapshot& s, Matrix&) { s.tensorrt.library.version = "10.12.0"; }, Verdict::kDrift, 4,
       "tensorrt", "TensorRT 10.12.0 differs from the matrix"},
      {"ORT version differs",
       [](Snapshot& s, Matrix&) { s.onnxruntime.library.version = "1.28.1"; }, Verdict::kDrift, 4,
       "onnxruntime.library", "ONNX Runtime release differs"},
      {"driver below matrix minimum (same branch)",
       [](Snapshot& s, Matrix&) { s.nvml.driver_version = "580.10.01"; }, Verdict::kDrift, 4,
       "driver.version", "older than the matrix minimum"},
      {"fewer devices", [](Snapshot& s, Matrix& m) { m.devices.count = 2; },
       Verdict::kNotAccelerated, 3, "devices.nodes", "at least 2 /dev/nvidiaN"},
      {"fewer devices (device nodes not checked)",
       [](Snapshot& s, Matrix& m) {
         m.devices.count = 4;
         m.container.device_nodes = false;
       },
       Verdict::kNotAccelerated, 3, "devices.count", "fewer GPUs are visible"},
      {"compute capability too low",
       [](Snapshot& s, Matrix&) {
         s.cuda_driver.devices[0].compute_capability = "7.5";
         s.cuda_driver.devices[0].name = "Tesla T4";
       },
       Verdict::kNotAccelerated, 3, "devices.compute_capability", "device 0 (Tesla T4) 7.5"},
      {"memory too small",
       [](Snapshot& s, Matrix&) { s.cuda_driver.devices[0].memory_total_bytes = 15360ull << 20; },
       Verdict::kNotAccelerated, 3, "devices.memory", "device 0 15360 MiB"},
      {"NVIDIA_VISIBLE_DEVICES=void",
       [](Snapshot& s, Matrix&) { SetEnv(s, "NVIDIA_VISIBLE_DEVICES", "void"); },
       Verdict::kNotAccelerated, 3, "env.visible_devices", "does not request nvidia.com/gpu"},
      {"NVIDIA_VISIBLE_DEVICES empty",
       [](Snapshot& s, Matrix&) { SetEnv(s, "NVIDIA_VISIBLE_DEVICES", ""); },
       Verdict::kNotAccelerated, 3, "env.visible_devices", "inject no GPU"},
      {"NVIDIA_VISIBLE_DEVICES=none",
       [](Snapshot& s, Matrix&) { SetEnv(s, "NVIDIA_VISIBLE_DEVICES", "none"); },
       Verdict::kNotAccelerated, 3, "env.visible_devices", "no GPU device"},
      {"capabilities without compute",
       [](Snapshot& s, Matrix&) { SetEnv(s, "NVIDIA_DRIVER_CAPABILITIES", "utility"); },
       Verdict::kNotAccelerated, 3, "env.driver_capabilities", "without 'compute'"},
      {"MIG expected but disabled",
       [](Snapshot& s, Matrix& m) { m.devices.mig = MigExpectation::kEnabled; },
       Verdict::kNotAccelerated, 3, "devices.mig", "not in MIG mode"},
      {"provider built for another CUDA major",
       [](Snapshot& s, Matrix& m) {
         m.onnxruntime.provider_cuda_major.reset();
         s.onnxruntime.provider_libraries[1].cuda_major = 12;
       },
       Verdict::kNotAccelerated, 3, "onnxruntime.provider_cuda_major.CUDAExecutionProvider",
       "built for CUDA 12 but the image ships the CUDA 13 runtime"},
      {"cuDNN missing makes the TensorRT provider fail",
       [](Snapshot& s, Matrix&) {
         s.cudnn.library = Missing("libcudnn.so.9");
         s.cudnn.sub_libraries.clear();
         s.onnxruntime.provider_libraries[0].library.loaded = false;
         s.onnxruntime.provider_libraries[0].library.error =
             "libcudnn.so.9: cannot open shared object file: No such file or directory";
       },
       Verdict::kNotAccelerated, 3, "cudnn", "cuDNN is not installed"},
      {"NVML driver/library mismatch",
       [](Snapshot& s, Matrix&) {
         s.nvml.init = probe::ApiResult{18, "NVML_ERROR_LIB_RM_VERSION_MISMATCH"};
       },
       Verdict::kNotAccelerated, 3, "driver.nvml", "driver/library version mismatch"},
      {"CUDA_VISIBLE_DEVICES hides all",
       [](Snapshot& s, Matrix&) { SetEnv(s, "CUDA_VISIBLE_DEVICES", "-1"); },
       Verdict::kNotAccelerated, 3, "env.cuda_visible_devices", "hides every GPU"},
      {"CPU-built core with the GPU providers (the npm core)",
       [](Snapshot& s, Matrix&) {
         s.onnxruntime.compiled_providers = {"CPUExecutionProvider"};
         s.onnxruntime.core_flavor = "cpu";
       },
       Verdict::kNotAccelerated, 3, "onnxruntime.core_flavor.TensorrtExecutionProvider",
       "Fix: use the pair scripts/setup.sh installs"},
      {"integrity dominates drift",
       [](Snapshot& s, Matrix&) {
         s.onnxruntime.library.version = "1.28.1";
         SetEnv(s, "NVIDIA_VISIBLE_DEVICES", "void");
       },
       Verdict::kNotAccelerated, 3, "env.visible_devices", "void"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Snapshot s = GoodSnapshot();
    Matrix m = TestMatrix();
    c.mutate(s, m);
    AdmissionReport r = Admit(s, m);
    EXPECT_EQ(r.verdict, c.verdict) << Dump(r);
    EXPECT_EQ(r.exit_code, c.exit_code) << Dump(r);
    auto causes = r.Causes();
    if (std::string(c.cause_id).empty()) {
      EXPECT_TRUE(causes.empty()) << Dump(r);
      continue;
    }
    ASSERT_FALSE(causes.empty()) << Dump(r);
    EXPECT_EQ(causes[0]->id, c.cause_id) << Dump(r);
    std::string line = causes[0]->found + " | " + causes[0]->required + " | " + causes[0]->cause;
    EXPECT_NE(line.find(c.cause_text), std::string::npos)
        << "cause line: " << line << "\nexpected: " << c.cause_text;
    // Every failing line says what was found and required, and why.
    for (const Check* f : causes) {
      EXPECT_FALSE(f->found.empty()) << f->id;
      EXPECT_FALSE(f->required.empty()) << f->id;
      EXPECT_FALSE(f->cause.empty()) << f->id;
    }
  }
}

TEST(AdmissionTest, AllGoodReportHasOnlyPassesAndStableJson) {
  AdmissionReport r = Admit(GoodSnapshot(), TestMatrix());
  for (const Check& c : r.checks) {
    EXPECT_EQ(c.result, CheckResult::kPass) << c.id << ": " << c.found << " " << c.cause;
  }
  // Every matrix requirement produced a line.
  for (const char* id : {"env.driver_capabilities",
                         "devices.nodes",
                         "driver.library",
                         "driver.init",
                         "driver.version",
                         "driver.cuda_floor",
                         "driver.cuda_version",
                         "cuda.runtime",
                         "cuda.cublas",
                         "cudnn",
                         "tensorrt",
                         "onnxruntime.library",
                         "onnxruntime.provider.TensorrtExecutionProvider",
                         "onnxruntime.core_flavor.TensorrtExecutionProvider",
                         "onnxruntime.core_flavor.CUDAExecutionProvider",
                         "onnxruntime.provider.CUDAExecutionProvider",
                         "devices.count",
                         "devices.compute_capability",
                         "devices.memory",
                         "devices.mig"}) {
    EXPECT_NE(r.Find(id), nullptr) << id;
  }
  common::Json j = r.ToJson();
  EXPECT_EQ(j["verdict"], "ACCELERATED");
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_EQ(j["matrix"]["fingerprint"], TestMatrix().Fingerprint());
  EXPECT_EQ(j["checks"].size(), r.checks.size());
  EXPECT_NE(r.ToText().find("verdict: ACCELERATED (exit 0"), std::string::npos);
}

TEST(AdmissionTest, DevMatrixOnGpuLessNodeIsDegradedNotAccelerated) {
  // What this development machine looks like: no driver, no devices, CPU ORT.
  Snapshot s;
  s.cuda_driver.library = Missing("libcuda.so.1");
  s.nvml.library = Missing("libnvidia-ml.so.1");
  s.cuda_runtime.library = Missing("libcudart.so.13");
  s.cublas = Missing("libcublas.so.13");
  s.cudnn.library = Missing("libcudnn.so.9");
  s.tensorrt.library = Missing("libnvinfer.so.10");
  s.onnxruntime.library = Lib("libonnxruntime.so", "1.29.0", "/opt/ort/lib");
  s.onnxruntime.compiled_providers = {"CPUExecutionProvider"};
  probe::ProviderLibrary cu;
  cu.provider = "CUDAExecutionProvider";
  cu.library = Missing("libonnxruntime_providers_cuda.so");
  cu.library.error = "libcuda.so.1: cannot open shared object file: No such file or directory";
  cu.cuda_major = 13;
  s.onnxruntime.provider_libraries = {cu};

  AdmissionReport dev = Admit(s, DevMatrix());
  EXPECT_EQ(dev.verdict, Verdict::kDegraded) << dev.ToText();
  EXPECT_EQ(dev.exit_code, 0);
  EXPECT_EQ(VerdictName(dev.verdict), "DEGRADED (dev policy: CPU allowed)");
  for (const Check& c : dev.checks) EXPECT_NE(c.result, CheckResult::kFail) << c.id;
  ASSERT_FALSE(dev.Causes().empty());
  EXPECT_EQ(dev.Causes()[0]->id, "driver.library");

  AdmissionReport prod = Admit(s, ProductionMatrix());
  EXPECT_EQ(prod.verdict, Verdict::kNotAccelerated) << prod.ToText();
  EXPECT_EQ(prod.exit_code, 3);
  const Check* p = prod.Find("onnxruntime.provider.CUDAExecutionProvider");
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->found.find("libcuda.so.1: cannot open shared object file"), std::string::npos);
  EXPECT_NE(p->cause.find("NVIDIA driver is not mounted"), std::string::npos);

  // Dev still refuses drift of what it pins, and refuses a node without ONNX Runtime.
  s.onnxruntime.library.version = "1.30.0";
  EXPECT_EQ(Admit(s, DevMatrix()).exit_code, 4);
  s.onnxruntime.library = Missing("libonnxruntime.so");
  AdmissionReport none = Admit(s, DevMatrix());
  EXPECT_EQ(none.exit_code, 3) << none.ToText();
  EXPECT_EQ(none.verdict, Verdict::kNotAccelerated);
}

// The first remedy names exactly the packages scripts/setup.sh installs.
TEST(AdmissionTest, OrtPairRemedyNamesWhatSetupInstallsFirst) {
  const std::string setup = testing::ReadFile(testing::SourceDir() + "/scripts/setup.sh");
  const std::string remedy(kOrtPairRemedy);
  for (const char* var : {"ORT_CORE_PKG=\"", "ORT_GPU_PKG=\""}) {
    const std::size_t at = setup.find(var);
    ASSERT_NE(at, std::string::npos) << var;
    const std::size_t begin = at + std::string(var).size();
    const std::string pkg = setup.substr(begin, setup.find('"', begin) - begin);
    const std::size_t named = remedy.find(pkg);
    EXPECT_NE(named, std::string::npos) << pkg;
    EXPECT_LT(named, remedy.find("release archive")) << "setup's pair is the first remedy";
  }
  EXPECT_TRUE(remedy.starts_with("use the pair scripts/setup.sh installs"));
}

TEST(AdmissionTest, ExplainLoadError) {
  struct E {
    const char* error;
    const char* expect;
  } cases[] = {
      {"libcuda.so.1: cannot open shared object file: No such file or directory",
       "NVIDIA driver is not mounted"},
      {"/x/libonnxruntime_providers_tensorrt.so: libnvinfer.so.10: cannot open shared object "
       "file: No such file or directory",
       "TensorRT 10 is not installed"},
      {"libcudnn.so.9: cannot open shared object file", "cuDNN 9 is not installed"},
      {"libcublasLt.so.13: cannot open shared object file", "CUDA 13 runtime libraries"},
      {"/x/libfoo.so: undefined symbol: cudnnGetVersion", "different symbols"},
      {"/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.32' not found",
       "glibc/libstdc++"},
      {"/x/lib.so: invalid ELF header", "not a library for this architecture"},
  };
  for (const auto& c : cases) {
    EXPECT_NE(ExplainLoadError(c.error).find(c.expect), std::string::npos)
        << c.error << " -> " << ExplainLoadError(c.error);
  }
  EXPECT_EQ(ExplainLoadError(""), "");
  EXPECT_EQ(ExplainLoadError("something else entirely"), "");
}

TEST(AdmissionTest, DriverFloors) {
  EXPECT_EQ(DriverFloorForCudaMajor(13), 580);
  EXPECT_EQ(DriverFloorForCudaMajor(12), 525);
  EXPECT_EQ(DriverFloorForCudaMajor(11), 450);
  EXPECT_EQ(DriverFloorForCudaMajor(10), 0);
}

}  // namespace
}  // namespace tg::policy
