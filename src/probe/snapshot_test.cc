#include "probe/snapshot.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/support/test_util.h"

namespace tg::probe {
namespace {

using common::Json;
using ::testing::HasSubstr;

// A snapshot with every kind of field set, including optional ones and errors.
Snapshot Sample() {
  Snapshot s;
  s.tool_version = "0.1.0";
  s.taken_at = "2026-01-02T03:04:05Z";
  s.lib_search_dirs = {"/opt/fake", "/opt/ort/lib"};
  s.host.kernel = "6.1.0";
  s.host.architecture = "x86_64";
  s.host.cpu_model = "AMD EPYC";
  s.host.cpu_count = 2;
  s.host.memory_total_bytes = 8ull << 30;
  s.host.container = true;
  s.host.container_hints = {"/.dockerenv exists"};
  s.host.cgroup_version = "v2";
  s.host.cgroup_memory_limit = "max";
  s.host.errors["os"] = "cannot read /etc/os-release";
  s.devices.root = "/tmp/root";
  s.devices.nvidiactl = {"/dev/nvidiactl", true, "char-device", ""};
  s.devices.nvidia_uvm = {"/dev/nvidia-uvm", false, "", "No such file or directory"};
  s.devices.gpus.push_back({"/dev/nvidia0", true, "file", ""});
  s.devices.proc_driver_version = {"/proc/driver/nvidia/version", true, "file", ""};
  s.devices.kernel_module_version = "580.65.06";
  s.env.push_back({"NVIDIA_VISIBLE_DEVICES", "all"});
  s.env.push_back({"CUDA_VISIBLE_DEVICES", std::nullopt});
  s.nvml.library = {"libnvidia-ml.so.1", true, "/x/libnvidia-ml.so.1", "", std::nullopt,
                    "580.65.06",         ""};
  s.nvml.init = ApiResult{0, "NVML_SUCCESS"};
  s.nvml.driver_version = "580.65.06";
  s.nvml.cuda_driver_version_raw = 13000;
  s.nvml.cuda_driver_version = "13.0";
  s.nvml.device_count = 1;
  NvmlDevice d;
  d.name = "NVIDIA H100";
  d.uuid = "GPU-1";
  d.compute_capability = "9.0";
  d.memory_total_bytes = 85520809984ull;
  d.mig_enabled = false;
  d.pcie_generation = 5;
  d.pcie_width = 16;
  d.errors["pcie_generation_max"] = "NVML_ERROR_NOT_SUPPORTED (3)";
  s.nvml.devices.push_back(d);
  s.cuda_driver.library = {"libcuda.so.1", true, "/x/libcuda.so.1", "", 13000, "13.0", ""};
  s.cuda_driver.init = ApiResult{100, "CUDA_ERROR_NO_DEVICE"};
  s.cuda_driver.errors["init"] = "CUDA_ERROR_NO_DEVICE (100)";
  s.cuda_runtime.library = {"libcudart.so.13", true, "/x/libcudart.so.13", "", 13000, "13.0", ""};
  s.cuda_runtime.driver_version_raw = 0;
  s.cublas = {
      "libcublas.so.13", false,        "", "libcublas.so.13: cannot open shared object file",
      std::nullopt,      std::nullopt, ""};
  s.cudnn.library.soname = "libcudnn.so.9";
  s.cudnn.cudart_version_raw = 13010;
  s.cudnn.sub_libraries.push_back({"libcudnn_ops.so.9", true, "/x/ops", "", 91300, "9.13.0", ""});
  s.tensorrt.library.soname = "libnvinfer.so.10";
  s.nccl.soname = "libnccl.so.2";
  s.onnxruntime.library = {
      "libonnxruntime.so", true, "/ort/libonnxruntime.so", "", std::nullopt, "1.29.0", ""};
  s.onnxruntime.build_info = "ORT Build Info: git-branch=rel-1.29.0";
  s.onnxruntime.compiled_providers = {"CPUExecutionProvider"};
  s.onnxruntime.core_flavor = "cpu";
  ProviderLibrary p;
  p.provider = "CUDAExecutionProvider";
  p.library.soname = "libonnxruntime_providers_cuda.so";
  p.library.error = "libcuda.so.1: cannot open shared object file: No such file or directory";
  p.load_method = "dlopen";
  p.ep_devices = std::vector<EpDevice>{{"CUDAExecutionProvider", "GPU", "NVIDIA"}};
  p.file = "/ort/gpu/libonnxruntime_providers_cuda.so";
  p.needed = {"libcudart.so.13", "libcuda.so.1"};
  p.cuda_major = 13;
  p.origin = "elsewhere";
  s.onnxruntime.provider_libraries.push_back(p);
  return s;
}

TEST(SnapshotJson, RoundTripKeepsEveryField) {
  Snapshot s = Sample();
  Json j = ToJson(s);
  EXPECT_EQ(j["schema_version"], kSnapshotSchemaVersion);
  auto back = SnapshotFromJson(j, "mem.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), j);
  EXPECT_EQ(back->nvml.devices.at(0).memory_total_bytes, 85520809984ull);
  EXPECT_EQ(back->onnxruntime.provider_libraries.at(0).cuda_major, 13);
  ASSERT_TRUE(back->onnxruntime.provider_libraries.at(0).ep_devices.has_value());
  EXPECT_EQ(back->onnxruntime.provider_libraries.at(0).ep_devices->at(0).device_type, "GPU");
  EXPECT_EQ(back->Env("NVIDIA_VISIBLE_DEVICES"), "all");
  EXPECT_EQ(back->Env("CUDA_VISIBLE_DEVICES"), std::nullopt);
  EXPECT_FALSE(back->cublas.loaded);
  EXPECT_EQ(back->cuda_driver.init->name, "CUDA_ERROR_NO_DEVICE");
  EXPECT_EQ(back->onnxruntime.core_flavor, "cpu");
  EXPECT_EQ(back->onnxruntime.provider_libraries.at(0).origin, "elsewhere");
}

TEST(SnapshotJson, MinimalDocumentTakesDefaults) {
  auto s = SnapshotFromJson(Json{{"schema_version", kSnapshotSchemaVersion}}, "min.json");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_FALSE(s->nvml.library.loaded);
  EXPECT_TRUE(s->onnxruntime.provider_libraries.empty());
}

Json SampleJson() { return ToJson(Sample()); }

std::string ErrorOf(const Json& j) {
  auto s = SnapshotFromJson(j, "node-a.json");
  EXPECT_FALSE(s.ok());
  return s.ok() ? "" : s.status().ToString();
}

TEST(SnapshotJson, WrongTypeNamesFileAndField) {
  Json j = SampleJson();
  j["nvml"]["devices"][0]["memory_total_bytes"] = "80GB";
  std::string e = ErrorOf(j);
  EXPECT_THAT(e, HasSubstr("INVALID_ARG"));
  EXPECT_THAT(e, HasSubstr("node-a.json"));
  EXPECT_THAT(e, HasSubstr("nvml.devices[0].memory_total_bytes"));
  EXPECT_THAT(e, HasSubstr("the string \"80GB\""));

  j = SampleJson();
  j["onnxruntime"]["provider_libraries"][0]["library"]["loaded"] = 1;
  EXPECT_THAT(ErrorOf(j), HasSubstr("onnxruntime.provider_libraries[0].library.loaded"));

  j = SampleJson();
  j["cudnn"]["sub_libraries"][0]["version_raw"] = 9.5;
  EXPECT_THAT(ErrorOf(j), HasSubstr("cudnn.sub_libraries[0].version_raw"));

  j = SampleJson();
  j["env"]["NVIDIA_VISIBLE_DEVICES"] = Json::array();
  EXPECT_THAT(ErrorOf(j), HasSubstr("env.NVIDIA_VISIBLE_DEVICES"));

  j = SampleJson();
  j["host"] = "linux";
  EXPECT_THAT(ErrorOf(j), HasSubstr("field 'host': expected an object"));

  j = SampleJson();
  j["nvml"]["devices"][0]["memory_total_bytes"] = -1;
  EXPECT_THAT(ErrorOf(j), HasSubstr("non-negative"));
}

TEST(SnapshotJson, UnknownFieldIsRejected) {
  Json j = SampleJson();
  j["nvml"]["devices"][0]["colour"] = "green";
  std::string e = ErrorOf(j);
  EXPECT_THAT(e, HasSubstr("unknown field 'nvml.devices[0].colour'"));
  EXPECT_THAT(e, HasSubstr("node-a.json"));
  j = SampleJson();
  j["extra"] = 1;
  EXPECT_THAT(ErrorOf(j), HasSubstr("unknown field 'extra'"));
}

TEST(SnapshotJson, SchemaVersionIsChecked) {
  Json j = SampleJson();
  j.erase("schema_version");
  EXPECT_THAT(ErrorOf(j), HasSubstr("schema_version"));
  j["schema_version"] = "truegreen.snapshot/v0";
  EXPECT_THAT(ErrorOf(j), HasSubstr("truegreen.snapshot/v0"));
  EXPECT_THAT(ErrorOf(Json::array()), HasSubstr("expected an object"));
}

TEST(SnapshotFile, TruncatedJsonNamesFileAndPosition) {
  testing::TempDir dir;
  std::string text = SampleJson().dump(2);
  std::string path = dir / "cut.json";
  testing::WriteFile(path, text.substr(0, text.size() / 2));
  auto s = LoadSnapshotFile(path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr(path + ":"));
  EXPECT_THAT(s.status().message(), HasSubstr("invalid JSON"));
}

TEST(SnapshotFile, MissingAndHugeFilesAreRefused) {
  testing::TempDir dir;
  auto missing = LoadSnapshotFile(dir / "nope.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("nope.json"));
  EXPECT_EQ(common::ExitCodeFromStatus(missing.status()), common::kExitUsage);

  // 100 MB (sparse, so the test stays fast): refused by size before anything is parsed.
  std::string big = dir / "big.json";
  int fd = ::open(big.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 100ll << 20), 0);
  ::close(fd);
  auto s = LoadSnapshotFile(big);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("big.json"));
  EXPECT_EQ(common::ExitCodeFromStatus(s.status()), common::kExitUsage);
}

TEST(SnapshotFile, WrittenSnapshotReadsBack) {
  testing::TempDir dir;
  std::string path = dir / "s.json";
  testing::WriteFile(path, SampleJson().dump());
  auto s = LoadSnapshotFile(path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->devices.kernel_module_version, "580.65.06");
}

TEST(VersionStrings, Encodings) {
  EXPECT_EQ(CudaVersionString(13000), "13.0");
  EXPECT_EQ(CudaVersionString(12020), "12.2");
  EXPECT_EQ(TripleVersionString(91300), "9.13.0");
  EXPECT_EQ(TripleVersionString(101300), "10.13.0");
  EXPECT_EQ(TripleVersionString(8907), "8.9.7");    // cuDNN 8 encoding
  EXPECT_EQ(TripleVersionString(22809), "2.28.9");  // NCCL
}

}  // namespace
}  // namespace tg::probe
