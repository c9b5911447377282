// scripts/build_image.sh builds a runtime image archive without a Docker daemon (buildah, with
// the umoci fallback) from this build tree's truegreen binary. To stay fast the image carries the
// real ONNX Runtime core library in the npm layout (lib/ + gpu/): the script must leave the GPU
// provider plugins of that layout out, because the npm core is CPU-built and cannot host them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/support/test_util.h"

namespace tg::testing {
namespace {

namespace fs = std::filesystem;

bool Have(const std::string& tool) {
  return RunProcess({"/bin/sh", "-c", "command -v " + tool}).exit_code == 0;
}

struct Built {
  ProcessResult result;
  std::string archive;
};

Built BuildImage(const TempDir& dir, const std::string& builder) {
  fs::create_directories(dir / "ort/lib");
  fs::create_symlink(OrtDir() + "/lib/libonnxruntime.so", dir / "ort/lib/libonnxruntime.so");
  fs::create_directories(dir / "ort/gpu");
  WriteFile(dir / "ort/gpu/libonnxruntime_providers_cuda.so", "not a library");
  fs::create_symlink("../gpu/libonnxruntime_providers_shared.so",
                     dir / "ort/lib/libonnxruntime_providers_shared.so");
  WriteFile(dir / "ort/gpu/libonnxruntime_providers_shared.so", "not a library");
  Built b;
  b.archive = dir / ("image-" + builder + ".tar");
  b.result =
      RunProcess({"/bin/bash", SourceDir() + "/scripts/build_image.sh", "--binary", TruegreenPath(),
                  "--ort-dir", dir / "ort", "--out", b.archive, "--builder", builder},
                 {{"TMPDIR", dir.path()}});
  return b;
}

// Reads index.json of an OCI archive with tar (no extraction to disk).
nlohmann::json IndexOf(const std::string& archive) {
  ProcessResult r = RunProcess({"/bin/sh", "-c",
                                "tar -xOf '" + archive + "' index.json 2>/dev/null || tar -xOf '" +
                                    archive + "' ./index.json"});
  return nlohmann::json::parse(r.out, nullptr, false);
}

void ExpectImage(const Built& b) {
  ASSERT_EQ(b.result.exit_code, 0) << b.result.out << b.result.err;
  ASSERT_TRUE(fs::exists(b.archive));
  EXPECT_GT(fs::file_size(b.archive), 1u << 20);
  nlohmann::json index = IndexOf(b.archive);
  ASSERT_TRUE(index.is_object()) << "no index.json in " << b.archive;
  ASSERT_FALSE(index["manifests"].empty());
  std::string digest = ReadFile(b.archive.substr(0, b.archive.size() - 4) + ".digest");
  EXPECT_EQ(digest.rfind("sha256:", 0), 0u) << digest;
  // The layer lists the binary, the loader and the ORT library, and no NVIDIA driver library.
  // Every layer must be a complete tar stream (tar -t fails on a truncated one).
  ProcessResult list = RunProcess(
      {"/bin/sh", "-c",
       "set -e; d=\"$(mktemp -d)\"; trap 'rm -rf \"$d\"' EXIT; cd \"$d\"; tar -xf '" + b.archive +
           "'; for l in blobs/sha256/*; do "
           "if zstd -t \"$l\" 2>/dev/null; then zstd -dc \"$l\" | tar -t; "
           "elif gzip -t \"$l\" 2>/dev/null; then gzip -dc \"$l\" | tar -t; fi; done"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("usr/bin/truegreen"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("opt/truegreen/lib/libonnxruntime.so"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("ld-linux-x86-64.so.2"), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find("libcuda.so"), std::string::npos) << list.out;
  // npm layout: the CPU core without the GPU providers it cannot host, and the log says why.
  EXPECT_EQ(list.out.find("libonnxruntime_providers_"), std::string::npos) << list.out;
  EXPECT_NE(b.result.err.find("GPU provider plugins in"), std::string::npos) << b.result.err;
  EXPECT_EQ(list.out.find("bin/sh"), std::string::npos) << list.out;
  // The chroot smoke test runs for normal builds; sanitizer builds say why they skip it.
  EXPECT_TRUE(b.result.err.find("smoke test: chroot") != std::string::npos ||
              b.result.err.find("smoke test skipped: ") != std::string::npos)
      << b.result.err;
  // When this build has `audit image` (the full build does), the image passes it: no build tools,
  // no driver libraries, GPU environment set, within the CI budget.
  ProcessResult help = RunTruegreen({"audit", "image", "--help"});
  if (help.exit_code == 0 && help.out.find("--budget") != std::string::npos) {
    ProcessResult a = RunTruegreen({"audit", "image", b.archive, "--budget", "2GiB"});
    EXPECT_EQ(a.exit_code, 0) << a.out << a.err;
  }
}

TEST(AuditConfigImage, BuildahBuildsAnOciArchive) {
  if (geteuid() != 0) GTEST_SKIP() << "buildah with vfs storage and chroot needs root here";
  if (!Have("buildah")) GTEST_SKIP() << "buildah is not installed (scripts/setup.sh installs it)";
  TempDir dir;
  Built b = BuildImage(dir, "buildah");
  ExpectImage(b);
  EXPECT_NE(b.result.err.find("with buildah"), std::string::npos) << b.result.err;
}

TEST(AuditConfigImage, UmociFallbackBuildsAnOciArchive) {
  if (geteuid() != 0) GTEST_SKIP() << "the chroot smoke test needs root here";
  if (!Have("umoci")) GTEST_SKIP() << "umoci is not installed (scripts/setup.sh installs it)";
  TempDir dir;
  Built b = BuildImage(dir, "umoci");
  ExpectImage(b);
  EXPECT_NE(b.result.err.find("with umoci"), std::string::npos) << b.result.err;
}

TEST(AuditConfigImage, FailsLoudlyOnBadInput) {
  TempDir dir;
  ProcessResult r = RunProcess({"/bin/bash", SourceDir() + "/scripts/build_image.sh", "--binary",
                                dir / "missing", "--out", dir / "x.tar"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("not found"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "x.tar"));
  ProcessResult fmt =
      RunProcess({"/bin/bash", SourceDir() + "/scripts/build_image.sh", "--format", "tarball"});
  EXPECT_NE(fmt.exit_code, 0);
}

}  // namespace
}  // namespace tg::testing
