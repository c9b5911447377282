#include "runtime/ort_probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "probe/provider_libs.h"
#include "tests/support/test_util.h"

namespace tg::runtime {
namespace {

using ::testing::HasSubstr;

TEST(OrtProbe, ReadsProviderElfWithoutLoading) {
  common::LibraryLoader loader({testing::OrtDir() + "/lib"});
  probe::ProviderLibrary p;
  p.library.soname = "libonnxruntime_providers_tensorrt.so";
  probe::ReadProviderElf(loader, &p);
  EXPECT_EQ(p.file, testing::OrtDir() + "/lib/libonnxruntime_providers_tensorrt.so");
  EXPECT_EQ(p.cuda_major, 13);
  EXPECT_EQ(p.cudnn_major, 9);
  EXPECT_EQ(p.tensorrt_major, 10);
  EXPECT_FALSE(p.library.loaded);

  probe::ProviderLibrary missing;
  missing.library.soname = "libonnxruntime_providers_nothing.so";
  probe::ReadProviderElf(loader, &missing);
  EXPECT_THAT(missing.elf_error, HasSubstr("not found"));
}

// The real ORT and the real provider libraries, default search order (the bundled pair).
TEST(OrtProbe, RealOrtVersionAndProviderOutcomes) {
  probe::OrtInfo info;
  const common::LibraryLoader loader = common::LibraryLoader::WithDefaults({});
  auto ort = OrtRuntime::Open(loader);
  ASSERT_TRUE(ort.ok()) << ort.status().ToString();
  ProbeOrt(loader, *ort, "", &info);
  ASSERT_TRUE(info.library.loaded) << info.library.error;
  EXPECT_EQ(info.library.version, "1.29.0");
  EXPECT_THAT(info.build_info, HasSubstr("ORT Build Info"));
  // Setup's default pair: a core built with CUDA and TensorRT, its providers in its own folder.
  EXPECT_THAT(info.compiled_providers, ::testing::Contains("CUDAExecutionProvider"));
  EXPECT_THAT(info.compiled_providers, ::testing::Contains("TensorrtExecutionProvider"));
  EXPECT_EQ(info.core_flavor, "gpu");
  EXPECT_EQ(info.library.resolved_path,
            std::filesystem::canonical(testing::OrtDir() + "/lib/libonnxruntime.so").string());
  ASSERT_EQ(info.provider_libraries.size(), std::size(probe::kGpuProviderLibraries));
  for (const auto& p : info.provider_libraries) {
    SCOPED_TRACE(p.provider);
    EXPECT_EQ(p.cuda_major, 13);
    EXPECT_EQ(p.origin, "beside_core");
    // Either it loaded, or the reason is recorded: never both, never neither.
    EXPECT_NE(p.library.loaded, !p.library.error.empty());
    EXPECT_FALSE(p.load_method.empty());
  }
}

}  // namespace
}  // namespace tg::runtime
