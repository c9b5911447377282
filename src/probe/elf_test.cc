#include "probe/elf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/test_util.h"

namespace tg::probe {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

TEST(ElfDynamic, RealCudaProviderIsBuiltForCuda13) {
  auto info = ReadElfDynamic(testing::OrtDir() + "/lib/libonnxruntime_providers_cuda.so");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_THAT(info->needed, Contains("libcudart.so.13"));
  EXPECT_THAT(info->needed, Contains("libcuda.so.1"));
  EXPECT_EQ(MajorFromNeeded(info->needed, {"libcudart", "libcublas"}), 13);
  // The CUDA provider of ORT 1.29 opens cuDNN at run time, not through DT_NEEDED.
  EXPECT_EQ(MajorFromNeeded(info->needed, {"libcudnn"}), std::nullopt);
}

TEST(ElfDynamic, RealTensorRtProviderNeedsCudnn9AndTensorRt10) {
  auto info = ReadElfDynamic(testing::OrtDir() + "/lib/libonnxruntime_providers_tensorrt.so");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(MajorFromNeeded(info->needed, {"libcudnn"}), 9);
  EXPECT_EQ(MajorFromNeeded(info->needed, {"libnvinfer"}), 10);
  EXPECT_EQ(MajorFromNeeded(info->needed, {"libcudart"}), 13);
}

TEST(ElfDynamic, FakeLibraryHasItsSoname) {
  auto info = ReadElfDynamic(testing::FakeGpuDir() + "/libcudart.so.13");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->soname, "libcudart.so.13");
  EXPECT_TRUE(info->runpath.empty());
}

TEST(ElfDynamic, BadFilesAreErrorsNotCrashes) {
  testing::TempDir dir;
  EXPECT_EQ(ReadElfDynamic(dir / "missing.so").status().code(), common::StatusCode::kNotFound);
  testing::WriteFile(dir / "text.so", "hello, not an ELF file");
  auto text = ReadElfDynamic(dir / "text.so");
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr("not an ELF file"));
  EXPECT_THAT(text.status().message(), HasSubstr("text.so"));
  // A real library cut short after its headers: every table offset now points past the end.
  std::string real = testing::ReadFile(testing::FakeGpuDir() + "/libcuda.so.1");
  ASSERT_GT(real.size(), 200u);
  testing::WriteFile(dir / "cut.so", real.substr(0, 200));
  auto cut = ReadElfDynamic(dir / "cut.so");
  ASSERT_FALSE(cut.ok());
  EXPECT_THAT(cut.status().message(), HasSubstr("cut.so"));
  // Every prefix of a real library must fail cleanly, never crash (a cheap in-test fuzz).
  for (std::size_t n = 0; n < real.size(); n += 97) {
    testing::WriteFile(dir / "p.so", real.substr(0, n));
    auto r = ReadElfDynamic(dir / "p.so");
    (void)r;
  }
}

TEST(SonameMajor, ParsesOnlyMatchingStems) {
  EXPECT_EQ(SonameMajor("libcudart.so.13", "libcudart"), 13);
  EXPECT_EQ(SonameMajor("libcudart.so.12.8.90", "libcudart"), 12);
  EXPECT_EQ(SonameMajor("libcublasLt.so.13", "libcublas"), std::nullopt);
  EXPECT_EQ(SonameMajor("libcudart.so", "libcudart"), std::nullopt);
  EXPECT_EQ(SonameMajor("libcudart.so.x", "libcudart"), std::nullopt);
}

}  // namespace
}  // namespace tg::probe
