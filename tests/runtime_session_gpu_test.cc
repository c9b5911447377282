// GPU-only checks (label `gpu`): a production CUDA session really places compute on the GPU,
// binds device memory and counts exactly one host->device copy per input and one device->host
// copy per output. Skips, saying why, where no CUDA device is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "runtime/engines.h"
#include "runtime/session.h"
#include "tests/support/test_util.h"

namespace tg::runtime {
namespace {

std::string Model(const std::string& name) {
  return tg::testing::BinaryDir() + "/models/runtime/" + name;
}

class RuntimeGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto gpu = QueryGpuIdentity(common::LibraryLoader::WithDefaults({}), 0);
    if (!gpu.ok()) GTEST_SKIP() << "no CUDA device: " << gpu.status().message();
    // The plugin path needs the provider libraries next to libonnxruntime.so (ORT loads its
    // provider bridge from its own directory): lay them out like an official GPU package.
    namespace fs = std::filesystem;
    dir_ = std::make_unique<tg::testing::TempDir>();
    for (const auto& src : {tg::testing::OrtDir() + "/lib", tg::testing::OrtDir() + "/gpu"}) {
      for (const auto& e : fs::directory_iterator(src)) {
        fs::create_symlink(e.path(), *dir_ / e.path().filename().string());
      }
    }
    RuntimePolicy p = ProductionPolicy();
    p.providers = {"CUDAExecutionProvider"};  // TensorRT needs engine artifacts; not here
    auto f = SessionFactory::Create(p, common::LibraryLoader::WithDefaults({dir_->path()}));
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    factory_ = std::make_unique<SessionFactory>(std::move(f).value());
  }
  std::unique_ptr<tg::testing::TempDir> dir_;
  std::unique_ptr<SessionFactory> factory_;
};

TEST_F(RuntimeGpuTest, ComputeOnCudaWithCountedCopies) {
  auto s = factory_->Open(Model("unet_tiny.onnx"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const SessionReport& r = s->report();
  EXPECT_FALSE(r.degraded);
  EXPECT_TRUE(r.gpu_active);
  EXPECT_EQ(r.io_mode, "device");
  EXPECT_TRUE(r.placement.cpu_compute_ops.empty()) << FormatSessionReport(r);
  EXPECT_GT(r.placement.nodes_per_provider.at("CUDAExecutionProvider"), 0);
  ASSERT_EQ(r.providers.front().path, AttachPath::kPlugin);

  auto in = RandomTensor(DataType::kFloat32, {1, 4, 16, 16}, 3);
  std::vector<Tensor> bound, plain;
  ASSERT_TRUE(s->Run({{"sample", *in}}, {}, &bound, RunMode::kIoBinding).ok());
  const IoStats io = s->io_stats();
  EXPECT_EQ(io.h2d_bytes, in->byte_size());
  EXPECT_EQ(io.d2h_bytes, bound[0].byte_size());
  ASSERT_TRUE(s->Run({{"sample", *in}}, {}, &plain, RunMode::kPlain).ok());
  const auto a = bound[0].ToFloatVector();
  const auto b = plain[0].ToFloatVector();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4) << i;
}

}  // namespace
}  // namespace tg::runtime
