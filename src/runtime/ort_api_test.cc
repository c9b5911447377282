#include "runtime/ort_api.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"

namespace tg::runtime {
namespace {

TEST(OrtApiTest, DeviceTypeNamesAreTheSnapshotSpellings) {
  EXPECT_STREQ(DeviceTypeName(OrtHardwareDeviceType_CPU), "CPU");
  EXPECT_STREQ(DeviceTypeName(OrtHardwareDeviceType_GPU), "GPU");
  EXPECT_STREQ(DeviceTypeName(OrtHardwareDeviceType_NPU), "NPU");
  EXPECT_STREQ(DeviceTypeName(static_cast<OrtHardwareDeviceType>(97)), "unknown");
}

TEST(OrtApiTest, LoadsBundledOrtThroughLoader) {
  auto loader = common::LibraryLoader::WithDefaults({});
  auto ort = LoadOrt(loader);
  ASSERT_TRUE(ort.ok()) << ort.status().ToString();
  EXPECT_EQ(ort->version, "1.29.0");
  EXPECT_NE(ort->build_info.find("ORT Build Info"), std::string::npos) << ort->build_info;
  EXPECT_NE(ort->library_path.find("libonnxruntime.so"), std::string::npos);
  bool has_cpu = false;
  for (const auto& p : ort->providers) has_cpu |= p == "CPUExecutionProvider";
  EXPECT_TRUE(has_cpu);
  // Idempotent: a second call returns the same library.
  auto again = LoadOrt(loader);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->api, ort->api);
}

}  // namespace
}  // namespace tg::runtime
