// GPU-only checks (label `gpu`): a production CUDA session really places compute on the GPU,
// binds device memory and counts exactly one host->device copy per input and one device->host
// copy per output. Skips, saying why, where no CUDA device is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
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
    // provider bridge from its own directory): setup's lib/ is laid out so (the GPU-flavor core
    // with its providers); $TRUEGREEN_GPU_ORT_DIR names another such directory when given.
    lib_dir_ = tg::testing::OrtDir() + "/lib";
    if (const char* g = std::getenv("TRUEGREEN_GPU_ORT_DIR"); g != nullptr && *g) lib_dir_ = g;
    const std::string& lib_dir = lib_dir_;
    RuntimePolicy p = ProductionPolicy();
    p.providers = {"CUDAExecutionProvider"};  // TensorRT needs engine artifacts; not here
    auto ort = OrtRuntime::Open(common::LibraryLoader::WithDefaults({lib_dir}));
    ASSERT_TRUE(ort.ok()) << ort.status().ToString();
    auto f = SessionFactory::Create(p, **ort);
    if (!f.ok() && f.status().message().find("is a CPU build") != std::string::npos) {
      GTEST_SKIP() << "the ONNX Runtime core in " << lib_dir
                   << " is a CPU build, which cannot host the CUDA provider (it crashes on "
                      "Slice/Einsum/Tile): set TRUEGREEN_GPU_ORT_DIR to the lib/ directory of "
                      "the GPU release archive of the same version. "
                   << f.status().message();
    }
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    factory_ = std::make_unique<SessionFactory>(std::move(f).value());
  }
  std::string lib_dir_;
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
  // The EP device names the GPU; device_id passed again made ORT log "Config with key
  // [ep.cuda.device_id] already exists ... overwritten" on every session.
  EXPECT_EQ(r.providers.front().options.count("device_id"), 0u);

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

// Arena options cannot take effect on ORT 1.29's plugin CUDA path: an error, never ignored.
TEST_F(RuntimeGpuTest, ArenaOptionsOnThePluginPathAreRefused) {
  RuntimePolicy p = ProductionPolicy();
  p.providers = {"CUDAExecutionProvider"};
  p.arena.max_mem = 1 << 30;
  auto ort = OrtRuntime::Open(common::LibraryLoader::WithDefaults({lib_dir_}));
  ASSERT_TRUE(ort.ok()) << ort.status().ToString();
  auto f = SessionFactory::Create(p, **ort);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto s = f->Open(Model("unet_tiny.onnx"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), common::StatusCode::kInvalidArg) << s.status().ToString();
  EXPECT_NE(s.status().message().find("cannot take effect on the plugin"), std::string::npos);
}

}  // namespace
}  // namespace tg::runtime
