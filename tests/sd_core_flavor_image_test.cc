// The GPU-flavor ONNX Runtime core that setup installs computes on the CPU exactly what the
// CPU-built core of the same release computes: `--policy dev generate` on the bundled pipelines
// writes byte-identical PNGs with either core. Which core each run loaded is checked with
// `probe --json` under the same library path, so the comparison cannot silently use one core twice.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "common/config.h"
#include "common/file_util.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

namespace fs = std::filesystem;
using testing::RunTruegreen;

const std::map<std::string, std::string> kEnv = {{"TRUEGREEN_LIB_PATH", testing::kUnset}};

// `truegreen <global> probe --json`: the core's flavor and the file it was loaded from.
std::pair<std::string, std::string> CoreOf(const std::vector<std::string>& global) {
  std::vector<std::string> argv = global;
  argv.insert(argv.end(), {"probe", "--json", "--no-init"});
  testing::ProcessResult r = RunTruegreen(argv, kEnv);
  auto j = common::ParseJson(r.out, "probe --json");
  if (!j.ok()) return {"", r.out + r.err};
  const common::Json& ort = (*j)["onnxruntime"];
  return {ort.value("core_flavor", ""), ort["library"].value("resolved_path", "")};
}

// SD 1.5 (external data), its fp16 export and SDXL from the bundled pipelines; every bundled
// pipeline (a folder with a model_index.json) when none of those names is there, so a renamed set
// is still compared. One step each: enough to run every op of the three models.
std::vector<fs::path> Pipelines() {
  const fs::path root = testing::BinaryDir() + "/models/sd-tiny";
  std::vector<fs::path> out;
  for (const char* name : {"sd15-legacy", "sd15-optimum-fp16", "sdxl-optimum"}) {
    if (fs::exists(root / name / "model_index.json")) out.push_back(root / name);
  }
  if (!out.empty()) return out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (e.is_directory() && fs::exists(e.path() / "model_index.json")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(SdCoreFlavorImage, GpuFlavorCoreAndCpuCoreWriteTheSameImage) {
  testing::TempDir dir;
  fs::create_directories(dir / "cpu");
  fs::create_symlink(testing::CpuOrtCore(), dir / "cpu/libonnxruntime.so");
  const std::vector<std::string> cpu_core = {"--lib-path", dir / "cpu"};

  auto [gpu_flavor, gpu_file] = CoreOf({});
  EXPECT_EQ(gpu_flavor, "gpu") << gpu_file;
  EXPECT_EQ(gpu_file, fs::canonical(testing::OrtDir() + "/lib/libonnxruntime.so").string());
  auto [cpu_flavor, cpu_file] = CoreOf(cpu_core);
  EXPECT_EQ(cpu_flavor, "cpu") << cpu_file;
  EXPECT_EQ(cpu_file, fs::canonical(testing::CpuOrtCore()).string());

  int compared = 0;
  for (const fs::path& model : Pipelines()) {
    SCOPED_TRACE(model.string());
    auto generate = [&](std::vector<std::string> argv, const std::string& out) {
      argv.insert(argv.end(), {"--policy", "dev", "generate", "--model", model.string(), "--prompt",
                               "a photo of a cat", "--steps", "1", "--size", "256x256", "--seed",
                               "7", "-o", out});
      return RunTruegreen(argv, kEnv);
    };
    const std::string a = dir / (model.filename().string() + "-gpu-core.png");
    const std::string b = dir / (model.filename().string() + "-cpu-core.png");
    testing::ProcessResult ra = generate({}, a);
    testing::ProcessResult rb = generate(cpu_core, b);
    // A pipeline that is broken on purpose fails alike with both cores; the rest must succeed.
    EXPECT_EQ(ra.exit_code, rb.exit_code) << ra.err << "\n---\n" << rb.err;
    if (ra.exit_code != 0) continue;
    ASSERT_TRUE(fs::exists(a) && fs::exists(b)) << ra.err << rb.err;
    EXPECT_GT(fs::file_size(a), 0u);
    const std::string png_a = testing::ReadFile(a), png_b = testing::ReadFile(b);
    EXPECT_EQ(common::Sha256Hex(png_a.data(), png_a.size()),
              common::Sha256Hex(png_b.data(), png_b.size()));
    ++compared;
  }
  EXPECT_GE(compared, 1) << "no bundled pipeline generated an image";
}

}  // namespace
}  // namespace tg
