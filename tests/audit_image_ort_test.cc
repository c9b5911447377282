// `audit image` and the ONNX Runtime pair inside an image (audit/image/image_ort.h): the real
// CPU-built core (setup's test fixture) beside a GPU provider fails image.ort.pair through the
// CLI's child-process inspector; the real GPU-flavour core setup installs passes beside the real
// providers, as does the fake GPU-flavour core (tests/fakegpu/fake_ort_core.c); a provider from
// another release, a provider without its core, a core that cannot be loaded and --no-load each
// say what they found, and never pass silently.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "audit/image/image_audit.h"
#include "audit/image/image_ort.h"
#include "common/config.h"
#include "tests/fixtures/make_images.h"
#include "tests/support/test_util.h"

namespace tg::audit {
namespace {

using testing::RunTruegreen;
using testing::TempDir;
using namespace testing::images;

// A provider "library": the loader never opens it; the audit reads its version strings.
std::string ProviderBytes(const std::string& version) {
  return std::string(
             "\x7f"
             "ELF\0\0",
             6) +
         "libcudart.so.13" + std::string(1, '\0') + version + std::string(1, '\0') +
         "CUDAExecutionProvider" + std::string(1, '\0');
}

std::string CpuCore() { return testing::ReadFile(testing::CpuOrtCore()); }
std::string OrtLib(const std::string& name) {
  return testing::ReadFile(testing::OrtDir() + "/lib/" + name);
}
std::string FakeGpuCore() {
  return testing::ReadFile(testing::FakeGpuDir() + "/libonnxruntime.so");
}

ImageSpec Image(std::vector<FileSpec> files) {
  ImageSpec s;
  LayerSpec l;
  l.comp = Comp::kNone;
  l.files = std::move(files);
  s.layers = {l};
  return s;
}

std::vector<FileSpec> Pair(const std::string& core, const std::string& provider_version) {
  return {File("opt/ort/lib/libonnxruntime.so.1.29.0", core),
          Symlink("opt/ort/lib/libonnxruntime.so", "libonnxruntime.so.1.29.0"),
          File("opt/ort/lib/libonnxruntime_providers_shared.so", "shared"),
          File("opt/ort/lib/libonnxruntime_providers_cuda.so", ProviderBytes(provider_version))};
}

struct CliRun {
  int exit_code = -1;
  common::Json report;
  std::string out, err;
};

CliRun AuditCli(const ImageSpec& spec, std::vector<std::string> extra = {}) {
  TempDir t;
  const std::string path = WriteImage(spec, Format::kOciLayout, t / "img", t / "work");
  std::vector<std::string> args = {"--json", "audit", "image", path};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = RunTruegreen(args);
  CliRun c{r.exit_code, {}, r.out, r.err};
  auto j = common::ParseJson(r.out, "audit image --json");
  if (j.ok()) c.report = *j;
  return c;
}

std::vector<common::Json> Findings(const CliRun& r, const std::string& rule) {
  std::vector<common::Json> out;
  if (!r.report.contains("findings")) return out;
  for (const auto& f : r.report["findings"]) {
    if (f.value("rule", "") == rule) out.push_back(f);
  }
  return out;
}

TEST(AuditImageOrt, CpuBuiltCoreWithGpuProviderFailsThroughTheChildInspector) {
  CliRun r = AuditCli(Image(Pair(CpuCore(), "1.29.0")));
  ASSERT_TRUE(r.report.is_object()) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
  auto pair = Findings(r, "image.ort.pair");
  ASSERT_EQ(pair.size(), 1u) << r.out;
  EXPECT_EQ(pair[0]["path"], "opt/ort/lib/libonnxruntime_providers_cuda.so");
  const std::string msg = pair[0]["message"];
  EXPECT_NE(msg.find("CPU-built"), std::string::npos) << msg;
  EXPECT_NE(msg.find("opt/ort/lib/libonnxruntime.so.1.29.0"), std::string::npos) << msg;
  EXPECT_NE(pair[0]["fix"].get<std::string>().find("one GPU release archive"), std::string::npos);
  const auto& ort = r.report["onnxruntime"];
  EXPECT_EQ(ort["core_flavor"], "cpu");
  EXPECT_EQ(ort["core_version"], "1.29.0");
  EXPECT_TRUE(ort["checked"].get<bool>());
  EXPECT_TRUE(Findings(r, "image.ort.unchecked").empty()) << r.out;
}

// What setup installs and the image ships: the real GPU-flavour core with the real provider
// bridge and TensorRT provider of the same release (the CUDA provider is the same package's
// sibling; 230 MB, so make audit-deploy audits it in our own image instead).
TEST(AuditImageOrt, SetupPairOfRealLibrariesPasses) {
  CliRun r = AuditCli(
      Image({File("opt/ort/lib/libonnxruntime.so.1.29.0", OrtLib("libonnxruntime.so.1.29.0")),
             Symlink("opt/ort/lib/libonnxruntime.so.1", "libonnxruntime.so.1.29.0"),
             Symlink("opt/ort/lib/libonnxruntime.so", "libonnxruntime.so.1"),
             File("opt/ort/lib/libonnxruntime_providers_shared.so",
                  OrtLib("libonnxruntime_providers_shared.so")),
             File("opt/ort/lib/libonnxruntime_providers_tensorrt.so",
                  OrtLib("libonnxruntime_providers_tensorrt.so"))}));
  ASSERT_TRUE(r.report.is_object()) << r.out << r.err;
  EXPECT_TRUE(Findings(r, "image.ort.pair").empty()) << r.out;
  EXPECT_TRUE(Findings(r, "image.ort.layout").empty()) << r.out;
  EXPECT_TRUE(Findings(r, "image.ort.unchecked").empty()) << r.out;
  const auto& ort = r.report["onnxruntime"];
  EXPECT_EQ(ort["core_flavor"], "gpu");
  EXPECT_EQ(ort["core_version"], "1.29.0");
  EXPECT_EQ(ort["core"], "opt/ort/lib/libonnxruntime.so.1.29.0");
  EXPECT_TRUE(ort["checked"].get<bool>());
  // The same provider files beside the CPU-built core of the same release: refused.
  CliRun cpu = AuditCli(Image({File("opt/ort/lib/libonnxruntime.so", CpuCore()),
                               File("opt/ort/lib/libonnxruntime_providers_shared.so",
                                    OrtLib("libonnxruntime_providers_shared.so")),
                               File("opt/ort/lib/libonnxruntime_providers_tensorrt.so",
                                    OrtLib("libonnxruntime_providers_tensorrt.so"))}));
  EXPECT_EQ(cpu.exit_code, 6) << cpu.out << cpu.err;
  ASSERT_EQ(Findings(cpu, "image.ort.pair").size(), 1u) << cpu.out;
  EXPECT_EQ(cpu.report["onnxruntime"]["core_flavor"], "cpu");
}

TEST(AuditImageOrt, GpuFlavourCoreWithItsProviderPasses) {
  CliRun r = AuditCli(Image(Pair(FakeGpuCore(), "1.29.0")));
  ASSERT_TRUE(r.report.is_object()) << r.out << r.err;
  EXPECT_TRUE(Findings(r, "image.ort.pair").empty()) << r.out;
  EXPECT_TRUE(Findings(r, "image.ort.layout").empty()) << r.out;
  EXPECT_TRUE(Findings(r, "image.ort.unchecked").empty()) << r.out;
  EXPECT_EQ(r.report["onnxruntime"]["core_flavor"], "gpu");
  EXPECT_EQ(r.report["onnxruntime"]["core"], "opt/ort/lib/libonnxruntime.so.1.29.0");
}

TEST(AuditImageOrt, ProviderFromAnotherReleaseFails) {
  CliRun r = AuditCli(Image(Pair(FakeGpuCore(), "1.28.1")));
  auto pair = Findings(r, "image.ort.pair");
  ASSERT_EQ(pair.size(), 1u) << r.out << r.err;
  const std::string msg = pair[0]["message"];
  EXPECT_NE(msg.find("another ONNX Runtime release"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1.28.1"), std::string::npos) << msg;
  EXPECT_EQ(r.exit_code, 6);
}

TEST(AuditImageOrt, NoLoadSaysThePairWasNotChecked) {
  CliRun r = AuditCli(Image(Pair(CpuCore(), "1.29.0")), {"--no-load"});
  auto un = Findings(r, "image.ort.unchecked");
  ASSERT_EQ(un.size(), 1u) << r.out << r.err;
  EXPECT_EQ(un[0]["severity"], "warning");
  EXPECT_NE(un[0]["message"].get<std::string>().find("NOT checked"), std::string::npos);
  // The reason is the CLI's: it names the flag that turned loading off.
  EXPECT_NE(un[0]["message"].get<std::string>().find("turned off (--no-load)"), std::string::npos)
      << un[0]["message"];
  EXPECT_FALSE(r.report["onnxruntime"]["checked"].get<bool>());
  EXPECT_TRUE(Findings(r, "image.ort.pair").empty());
  // The text report says so too.
  TempDir t;
  auto text = RunTruegreen(
      {"audit", "image",
       WriteImage(Image(Pair(CpuCore(), "1.29.0")), Format::kOciLayout, t / "img", t / "work"),
       "--no-load"});
  EXPECT_NE(text.out.find("core/provider pair NOT checked"), std::string::npos) << text.out;
}

TEST(AuditImageOrt, CoreThatCannotLoadIsReportedNotPassed) {
  CliRun r = AuditCli(Image(Pair("this is not an ELF library", "1.29.0")));
  auto un = Findings(r, "image.ort.unchecked");
  ASSERT_EQ(un.size(), 1u) << r.out << r.err;
  EXPECT_NE(un[0]["message"].get<std::string>().find("could not be loaded here"), std::string::npos)
      << un[0]["message"];
  EXPECT_TRUE(Findings(r, "image.ort.pair").empty());
}

// The rules alone (inspector injected): layout problems and the CPU-flavour verdict.
ImageAuditReport AuditWith(const ImageSpec& spec, OrtCoreInspector inspect) {
  TempDir t;
  ImageAuditOptions o;
  o.ort_inspect = std::move(inspect);
  auto r = AuditImage(WriteImage(spec, Format::kOciLayout, t / "img", t / "work"), o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(*r) : ImageAuditReport{};
}

std::set<std::string> Rules(const ImageAuditReport& r) {
  std::set<std::string> out;
  for (const auto& f : r.findings) {
    if (f.rule.starts_with("image.ort.")) out.insert(f.rule + " " + f.path);
  }
  return out;
}

TEST(AuditImageOrtRules, ProviderWithoutCoreOrSharedHelperIsALayoutError) {
  int calls = 0;
  auto gpu = [&](const std::string& file) -> common::Result<OrtCoreInfo> {
    ++calls;
    EXPECT_TRUE(std::filesystem::exists(file)) << file;
    return OrtCoreInfo{"1.29.0", "", {"CUDAExecutionProvider", "CPUExecutionProvider"}};
  };
  auto r = AuditWith(
      Image({File("opt/ort/lib/libonnxruntime.so", "core"),
             File("opt/ort/gpu/libonnxruntime_providers_cuda.so", ProviderBytes("1.29.0")),
             File("opt/trt/libonnxruntime.so", "core"),
             File("opt/trt/libonnxruntime_providers_tensorrt.so", ProviderBytes("1.29.0"))}),
      gpu);
  EXPECT_EQ(Rules(r),
            (std::set<std::string>{"image.ort.layout opt/ort/gpu/libonnxruntime_providers_cuda.so",
                                   "image.ort.layout opt/trt/libonnxruntime.so"}));
  EXPECT_EQ(calls, 1);  // only the core that sits with a provider is loaded
  EXPECT_EQ(r.ort.gpu_providers.size(), 2u);
}

TEST(AuditImageOrtRules, NoGpuProviderNoCheckAndNoLoad) {
  int calls = 0;
  auto r = AuditWith(Image({File("opt/ort/lib/libonnxruntime.so", "core")}),
                     [&](const std::string&) -> common::Result<OrtCoreInfo> {
                       ++calls;
                       return OrtCoreInfo{};
                     });
  EXPECT_TRUE(Rules(r).empty());
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(r.ort.cores, std::vector<std::string>{"opt/ort/lib/libonnxruntime.so"});
}

TEST(AuditImageOrtRules, VersionStringsAreWholeNulDelimitedTriples) {
  TempDir t;
  const std::string bytes = std::string("x1.2.3\0", 7) + std::string("1.29.0\0", 7) +
                            std::string("12.4\0", 5) + std::string("1..2.3\0", 7) +
                            std::string("2.0.0", 5);
  testing::WriteFile(t / "p.so", bytes + std::string(1, '\0'));
  EXPECT_EQ(VersionStringsInFile(t / "p.so"), (std::vector<std::string>{"1.29.0", "2.0.0"}));
  EXPECT_TRUE(VersionStringsInFile(t / "missing.so").empty());
}

// image.gpu.needed (audit/image/image_needed.h): every DT_NEEDED of a GPU provider resolves inside
// the image. The fake CUDA provider (tests/fakegpu) is a real ELF linking libcudart.so.13,
// libcuda.so.1, libcublas.so.13, libcublasLt.so.13 and libcurand.so.10; the image ships the real
// fake libraries for all but libcublasLt (and libcuda, which the container toolkit injects), and
// a stand-in for each system library they need.
std::vector<FileSpec> FakeCudaStack(const std::set<std::string>& left_out) {
  const std::string dir = testing::FakeGpuDir() + "/";
  std::vector<FileSpec> files = {File("opt/truegreen/lib/libonnxruntime_providers_cuda.so",
                                      testing::ReadFile(dir + "libonnxruntime_providers_cuda.so"))};
  for (const char* lib :
       {"libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libcurand.so.10"}) {
    if (left_out.count(lib) == 0) {
      files.push_back(
          File(std::string("usr/local/cuda/lib64/") + lib, testing::ReadFile(dir + lib)));
    }
  }
  for (const char* lib : {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
                          "libgcc_s.so.1", "libstdc++.so.6", "ld-linux-x86-64.so.2"}) {
    files.push_back(File(std::string("lib/x86_64-linux-gnu/") + lib, "system library"));
  }
  return files;
}

std::vector<const Finding*> Needed(const ImageAuditReport& r, const std::string& rule) {
  std::vector<const Finding*> out;
  for (const auto& f : r.findings) {
    if (f.rule == rule) out.push_back(&f);
  }
  return out;
}

TEST(AuditImageNeeded, MissingCublasLtIsNamedWithTheProviderThatNeedsIt) {
  ImageSpec spec = Image(FakeCudaStack({"libcublasLt.so.13"}));
  spec.env.push_back("LD_LIBRARY_PATH=/opt/truegreen/lib:/usr/local/cuda/lib64");
  auto r = AuditWith(spec, {});
  auto missing = Needed(r, "image.gpu.needed");
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0]->severity, Severity::kError);
  EXPECT_EQ(missing[0]->path, "opt/truegreen/lib/libonnxruntime_providers_cuda.so");
  EXPECT_NE(missing[0]->message.find("libcublasLt.so.13 is not in the image"), std::string::npos)
      << missing[0]->message;
  EXPECT_NE(missing[0]->message.find("libonnxruntime_providers_cuda.so needs it"),
            std::string::npos)
      << missing[0]->message;
  EXPECT_TRUE(r.failed);
  EXPECT_TRUE(Needed(r, "image.gpu.needed-unchecked").empty());
  // The whole stack: nothing missing (libcuda.so.1 is the toolkit's), the CUDA libraries' own
  // DT_NEEDED read too.
  ImageSpec whole = Image(FakeCudaStack({}));
  whole.env.push_back("LD_LIBRARY_PATH=/usr/local/cuda/lib64");
  auto ok = AuditWith(whole, {});
  EXPECT_TRUE(Needed(ok, "image.gpu.needed").empty()) << ok.findings.size();
  EXPECT_TRUE(Needed(ok, "image.gpu.needed-unchecked").empty());
  // Without LD_LIBRARY_PATH the dynamic linker would not look in /usr/local/cuda/lib64.
  auto unfound = AuditWith(Image(FakeCudaStack({})), {});
  EXPECT_EQ(Needed(unfound, "image.gpu.needed").size(), 4u);
}

// A provider that is no ELF file is reported as not checked, never passed silently.
TEST(AuditImageNeeded, UnreadableProviderIsNotChecked) {
  auto r =
      AuditWith(Image({File("opt/ort/lib/libonnxruntime_providers_cuda.so", "not an elf")}), {});
  auto unchecked = Needed(r, "image.gpu.needed-unchecked");
  ASSERT_EQ(unchecked.size(), 1u);
  EXPECT_NE(unchecked[0]->message.find("NOT checked"), std::string::npos);
}

}  // namespace
}  // namespace tg::audit
