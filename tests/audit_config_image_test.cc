// scripts/build_image.sh builds a runtime image archive without a Docker daemon (buildah, with
// the umoci fallback) from this build tree's truegreen binary. The image carries the ONNX Runtime
// folder the way setup lays it out (a GPU release archive's lib/: the real GPU-flavor core, its
// soname links, the provider bridge and a provider), and the result passes `audit image`. The
// split layout of older setups (a CPU-built core in lib/, providers in gpu/) is refused.
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

// The layout setup installs (a GPU release archive's lib/): the real GPU-flavor core under its
// release name with the soname links beside it, the real provider bridge, and a stand-in CUDA
// provider: the bridge's ELF carrying the release string a real provider carries. The real CUDA
// provider would pull a gigabyte of CUDA libraries into each of these images (make audit-deploy
// builds that one).
Built BuildImage(const TempDir& dir, const std::string& builder) {
  const std::string lib = dir / "ort/lib";
  fs::create_directories(lib);
  fs::create_symlink(fs::canonical(OrtDir() + "/lib/libonnxruntime.so"),
                     lib + "/libonnxruntime.so.1.29.0");
  fs::create_symlink("libonnxruntime.so.1.29.0", lib + "/libonnxruntime.so.1");
  fs::create_symlink("libonnxruntime.so.1", lib + "/libonnxruntime.so");
  const std::string bridge = ReadFile(OrtDir() + "/lib/libonnxruntime_providers_shared.so");
  WriteFile(lib + "/libonnxruntime_providers_shared.so", bridge);
  WriteFile(lib + "/libonnxruntime_providers_cuda.so", bridge + std::string("\0"
                                                                            "1.29.0\0",
                                                                            8));
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
  // The pair ships as one folder, the core once (its soname links stay links).
  for (const char* f : {"libonnxruntime.so.1.29.0", "libonnxruntime.so.1",
                        "libonnxruntime_providers_shared.so", "libonnxruntime_providers_cuda.so"}) {
    EXPECT_NE(list.out.find(std::string("opt/truegreen/lib/") + f), std::string::npos) << f;
  }
  EXPECT_NE(b.result.err.find("ONNX Runtime: 5 files from"), std::string::npos) << b.result.err;
  EXPECT_EQ(list.out.find("bin/sh"), std::string::npos) << list.out;
  // The chroot smoke test runs for normal builds; sanitizer builds say why they skip it.
  EXPECT_TRUE(b.result.err.find("smoke test: chroot") != std::string::npos ||
              b.result.err.find("smoke test skipped: ") != std::string::npos)
      << b.result.err;
  // When this build has `audit image` (the full build does), the image passes it: no build tools,
  // no driver libraries, GPU environment set, within the CI budget.
  ProcessResult help = RunTruegreen({"audit", "image", "--help"});
  if (help.exit_code == 0 && help.out.find("--budget") != std::string::npos) {
    ProcessResult a = RunTruegreen({"--json", "audit", "image", b.archive, "--budget", "2GiB"});
    EXPECT_EQ(a.exit_code, 0) << a.out << a.err;
    auto report = nlohmann::json::parse(a.out, nullptr, false);
    ASSERT_TRUE(report.is_object()) << a.out;
    EXPECT_EQ(report["onnxruntime"]["core_flavor"], "gpu") << a.out;
    EXPECT_EQ(report["onnxruntime"]["core"], "opt/truegreen/lib/libonnxruntime.so.1.29.0");
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

TEST(AuditConfigImage, SplitLayoutOfAnOlderSetupIsRefused) {
  // lib/ with a core, gpu/ with the providers: the layout that paired a CPU-built core with GPU
  // providers. The script names it instead of building an image that crashes on a GPU.
  TempDir dir;
  fs::create_directories(dir / "ort/gpu");
  fs::create_directories(dir / "ort/lib");
  fs::create_symlink(CpuOrtCore(), dir / "ort/lib/libonnxruntime.so");
  WriteFile(dir / "ort/gpu/libonnxruntime_providers_cuda.so", "provider");
  ProcessResult r =
      RunProcess({"/bin/bash", SourceDir() + "/scripts/build_image.sh", "--binary", TruegreenPath(),
                  "--ort-dir", dir / "ort", "--out", dir / "x.tar", "--collect-only", dir / "root"},
                 {{"TMPDIR", dir.path()}});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("split layout"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "x.tar"));
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
