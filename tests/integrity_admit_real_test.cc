// `truegreen admit` with the real libraries only (no fakes): the bundled ONNX Runtime and its real
// CUDA provider library on a machine without an NVIDIA driver, and with the CUDA toolkit's stub
// libcuda exposed as libcuda.so.1. Both must refuse admission (exit 3), each naming its own cause.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "common/config.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::map<std::string, std::string> kCleanEnv = {{"TRUEGREEN_LIB_PATH", testing::kUnset},
                                                      {"CUDA_VISIBLE_DEVICES", testing::kUnset}};

common::Json AdmitJson(const std::vector<std::string>& global, int* exit_code) {
  std::vector<std::string> argv = global;
  argv.insert(argv.begin(), "--json");
  argv.push_back("admit");
  testing::ProcessResult r = testing::RunTruegreen(argv, kCleanEnv);
  *exit_code = r.exit_code;
  auto j = common::ParseJson(r.out, "admit stdout");
  EXPECT_TRUE(j.ok()) << r.out << r.err;
  return j.ok() ? *j : common::Json();
}

const common::Json* CheckById(const common::Json& report, const std::string& id) {
  for (const auto& c : report["checks"]) {
    if (c["id"] == id) return &c;
  }
  return nullptr;
}

bool SystemHasDriver() {
  int rc = 0;
  common::Json j = AdmitJson({}, &rc);
  const common::Json* c = CheckById(j, "driver.library");
  return c != nullptr && (*c)["result"] == "PASS";
}

TEST(AdmitReal, NoDriverRealCudaProviderFailsAndAdmitNamesIt) {
  if (SystemHasDriver()) GTEST_SKIP() << "a real NVIDIA driver is installed on this machine";
  int rc = 0;
  common::Json j = AdmitJson({}, &rc);
  EXPECT_EQ(rc, 3);
  EXPECT_EQ(j["verdict"], "NOT ACCELERATED");
  const common::Json* p = CheckById(j, "onnxruntime.provider.CUDAExecutionProvider");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ((*p)["result"], "FAIL");
  // The real provider library's loader error, verbatim.
  EXPECT_THAT((*p)["found"].get<std::string>(),
              HasSubstr("libcuda.so.1: cannot open shared object file"));
  EXPECT_THAT((*p)["cause"].get<std::string>(),
              HasSubstr("the NVIDIA driver is not mounted into this container"));
  const common::Json* d = CheckById(j, "driver.library");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ((*d)["result"], "FAIL");
  // Real ONNX Runtime version in the report.
  const common::Json* o = CheckById(j, "onnxruntime.library");
  ASSERT_NE(o, nullptr);
  EXPECT_THAT((*o)["found"].get<std::string>(), HasSubstr("1.29.0"));
}

TEST(AdmitReal, StubDriverIsRefusedWithADifferentCause) {
  constexpr const char* kStub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (::access(kStub, R_OK) != 0) GTEST_SKIP() << kStub << " not installed";
  if (SystemHasDriver()) GTEST_SKIP() << "a real driver would be found instead of the stub";
  namespace fs = std::filesystem;
  testing::TempDir dir;
  fs::create_symlink(kStub, dir / "libcuda.so.1");
  for (const char* f :
       {"libonnxruntime.so", "libonnxruntime_providers_shared.so",
        "libonnxruntime_providers_cuda.so", "libonnxruntime_providers_tensorrt.so"}) {
    fs::create_symlink(testing::OrtDir() + "/lib/" + f, dir / f);
  }
  int rc = 0;
  common::Json j =
      AdmitJson({"--lib-path", dir.path(), "--lib-path", "/usr/local/cuda/lib64"}, &rc);
  EXPECT_EQ(rc, 3);
  EXPECT_EQ(j["verdict"], "NOT ACCELERATED");
  const common::Json* d = CheckById(j, "driver.library");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ((*d)["result"], "FAIL");
  EXPECT_THAT((*d)["found"].get<std::string>(), HasSubstr("stubs/libcuda.so"));
  EXPECT_THAT((*d)["cause"].get<std::string>(), HasSubstr("the CUDA toolkit's stub"));
  EXPECT_THAT((*d)["cause"].get<std::string>(), Not(HasSubstr("libcuda.so.1 not found")));
  const common::Json* init = CheckById(j, "driver.init");
  ASSERT_NE(init, nullptr);
  EXPECT_THAT((*init)["found"].get<std::string>(), HasSubstr("CUDA_ERROR_STUB_LIBRARY (34)"));
  // With the stub, the real CUDA provider library itself loads: the refusal comes from the
  // driver, not from a missing file.
  const common::Json* p = CheckById(j, "onnxruntime.provider.CUDAExecutionProvider");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ((*p)["result"], "PASS") << (*p)["found"];
}

// Setup's default pair passes the build-flavor rule for every provider the production matrix
// names (the CUDA provider; TensorRT is deploy/matrix.production-tensorrt.yaml's): its core is
// built with CUDA and the providers sit beside it. What keeps this node out is the missing
// driver, nothing else.
TEST(AdmitReal, DefaultPairPassesBuildFlavor) {
  int rc = 0;
  common::Json j = AdmitJson({}, &rc);
  for (const char* p : {"CUDAExecutionProvider"}) {
    const common::Json* c = CheckById(j, std::string("onnxruntime.core_flavor.") + p);
    ASSERT_NE(c, nullptr) << j.dump(2);
    EXPECT_EQ((*c)["result"], "PASS") << (*c).dump(2);
    EXPECT_THAT((*c)["found"].get<std::string>(), HasSubstr("(gpu build;"));
  }
}

// The rule fires for the real CPU-built core of the same release (setup's test fixture) beside
// the same real providers, from the core's flavor alone, driver or not.
TEST(AdmitReal, CpuBuiltCoreWithGpuProviderIsRefusedByBuildFlavor) {
  namespace fs = std::filesystem;
  testing::TempDir dir;
  fs::create_symlink(testing::CpuOrtCore(), dir / "libonnxruntime.so");
  for (const char* f : {"libonnxruntime_providers_shared.so", "libonnxruntime_providers_cuda.so",
                        "libonnxruntime_providers_tensorrt.so"}) {
    fs::create_symlink(testing::OrtDir() + "/lib/" + f, dir / f);
  }
  int rc = 0;
  common::Json j = AdmitJson({"--lib-path", dir.path()}, &rc);
  EXPECT_EQ(rc, 3);
  const common::Json* c = CheckById(j, "onnxruntime.core_flavor.CUDAExecutionProvider");
  ASSERT_NE(c, nullptr) << j.dump(2);
  EXPECT_EQ((*c)["result"], "FAIL");
  const std::string found = (*c)["found"].get<std::string>();
  EXPECT_THAT(found, HasSubstr("libonnxruntime.so (cpu build;"));
  EXPECT_THAT(found, HasSubstr("libonnxruntime_providers_cuda.so"));
  EXPECT_THAT((*c)["cause"].get<std::string>(),
              HasSubstr("core and providers from one GPU release archive of the same version"));
}

}  // namespace
}  // namespace tg
