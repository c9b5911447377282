// Image rules: a positive and a negative case for every rule id, the capability snapshot, the
// matrix comparison and the policy file.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "audit/image/image_audit.h"
#include "audit/report/byte_size.h"
#include "policy/matrix.h"
#include "tests/fixtures/make_images.h"
#include "tests/support/test_util.h"

namespace tg::audit {
namespace {

using testing::TempDir;
using namespace testing::images;

ImageAuditReport Audit(const ImageSpec& spec, const ImageAuditOptions& opts = {}) {
  TempDir t;
  std::string path = WriteImage(spec, Format::kOciLayout, t / "img", t / "work");
  auto r = AuditImage(path, opts);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(*r) : ImageAuditReport{};
}

std::set<std::string> PathsOf(const ImageAuditReport& r, const std::string& rule) {
  std::set<std::string> out;
  for (const auto& f : r.findings) {
    if (f.rule == rule) out.insert(f.path);
  }
  return out;
}
const Finding* FindRule(const ImageAuditReport& r, const std::string& rule) {
  for (const auto& f : r.findings) {
    if (f.rule == rule) return &f;
  }
  return nullptr;
}

ImageSpec OneLayer(std::vector<FileSpec> files, std::vector<std::string> env = {}) {
  ImageSpec s;
  LayerSpec l;
  l.comp = Comp::kNone;
  l.files = std::move(files);
  s.layers = {l};
  if (!env.empty()) s.env = std::move(env);
  return s;
}

TEST(AuditImageRules, BuildTools) {
  auto r = Audit(OneLayer(
      {File("usr/bin/gcc-12", std::string(300, 'g')), File("usr/lib/gcc/x86_64-linux-gnu/12/cc1"),
       File("usr/local/cuda/bin/nvcc"), File("usr/bin/cmake"), File("usr/bin/make"),
       Symlink("usr/bin/clang", "clang-16"), File("usr/bin/x86_64-linux-gnu-g++-12"),
       // negatives
       File("usr/share/doc/make/README"), File("usr/bin/python3"), File("opt/app/make.py"),
       Dir("usr/share/cmake")}));
  EXPECT_EQ(PathsOf(r, "image.build-tools"),
            (std::set<std::string>{"usr/bin/gcc-12", "usr/lib/gcc/x86_64-linux-gnu/12/cc1",
                                   "usr/local/cuda/bin/nvcc", "usr/bin/cmake", "usr/bin/make",
                                   "usr/bin/clang", "usr/bin/x86_64-linux-gnu-g++-12"}));
  const Finding* gcc = nullptr;
  for (const auto& f : r.findings) {
    if (f.path == "usr/bin/gcc-12") gcc = &f;
  }
  ASSERT_NE(gcc, nullptr);
  EXPECT_EQ(gcc->bytes, 300u);
  EXPECT_EQ(gcc->layer, 0);
  EXPECT_FALSE(gcc->fix.empty());
  EXPECT_TRUE(r.failed);
}

TEST(AuditImageRules, HeadersGroupedPerRoot) {
  auto r = Audit(OneLayer({File("usr/include/stdio.h", "1234"), File("usr/include/sys/x.h", "12"),
                           File("usr/local/cuda-12.4/targets/x86_64-linux/include/cuda.h", "c"),
                           File("usr/lib/python3/site-packages/nvidia/cudnn/include/cudnn.h"),
                           File("app/include/mine.h"), File("usr/local/include/ok.h")}));
  EXPECT_EQ(
      PathsOf(r, "image.headers"),
      (std::set<std::string>{"usr/include", "usr/local/cuda-12.4/targets/x86_64-linux/include",
                             "usr/lib/python3/site-packages/nvidia/cudnn/include"}));
  for (const auto& f : r.findings) {
    if (f.path == "usr/include") {
      EXPECT_EQ(f.bytes, 6u);
    }
  }
}

TEST(AuditImageRules, DevPackagesFromDpkgStatus) {
  std::string status =
      "Package: libssl-dev\nStatus: install ok installed\nInstalled-Size: 100\n\n"
      "Package: libssl3\nStatus: install ok installed\nInstalled-Size: 5000\n\n"
      "Package: zlib1g-dev\nStatus: deinstall ok config-files\nInstalled-Size: 30\n";
  auto r = Audit(OneLayer({File("var/lib/dpkg/status", status)}));
  std::vector<const Finding*> dev;
  for (const auto& f : r.findings) {
    if (f.rule == "image.dev-packages") dev.push_back(&f);
  }
  ASSERT_EQ(dev.size(), 1u);
  EXPECT_NE(dev[0]->message.find("libssl-dev"), std::string::npos);
  EXPECT_EQ(dev[0]->bytes, 100u * 1024);
  // The dpkg database of the *final* filesystem counts: a later layer without -dev packages wins.
  ImageSpec two = OneLayer({File("var/lib/dpkg/status", status)});
  LayerSpec purge;
  purge.files = {File("var/lib/dpkg/status", "Package: libssl3\nStatus: install ok installed\n")};
  two.layers.push_back(purge);
  EXPECT_TRUE(PathsOf(Audit(two), "image.dev-packages").empty());
}

TEST(AuditImageRules, NotebooksTestsCachesVcsSecrets) {
  auto r = Audit(OneLayer({
      File("app/train.ipynb"),
      File("app/.ipynb_checkpoints/train-checkpoint.ipynb"),
      File("app/ipynb.txt"),
      File("usr/lib/python3/site-packages/numpy/tests/test_a.py"),
      File("usr/bin/test"),
      File("root/.cache/pip/http/ab/cd", "pipdata"),
      File("var/lib/apt/lists/deb_main_Packages"),
      File("var/lib/apt/lists/lock"),
      Dir("var/lib/apt/lists/partial"),
      File("root/.cache/huggingface/hub/model.bin"),
      File("root/.cache/other/x"),
      File("app/.git/HEAD"),
      File("app/.gitignore"),
      File("app/.env"),
      File("root/.ssh/id_rsa"),
      File("app/server.pem"),
      File("etc/ssl/certs/ca.pem"),
      File("app/.env.example"),
      File("root/.ssh/id_rsa.pub"),
      File("usr/lib/python3/site-packages/certifi/cacert.pem"),
  }));
  EXPECT_EQ(PathsOf(r, "image.notebooks"),
            (std::set<std::string>{"app/train.ipynb", "app/.ipynb_checkpoints"}));
  EXPECT_EQ(PathsOf(r, "image.tests"),
            (std::set<std::string>{"usr/lib/python3/site-packages/numpy/tests"}));
  EXPECT_EQ(
      PathsOf(r, "image.caches"),
      (std::set<std::string>{"root/.cache/pip", "var/lib/apt/lists", "root/.cache/huggingface"}));
  EXPECT_EQ(PathsOf(r, "image.vcs"), (std::set<std::string>{"app/.git"}));
  EXPECT_EQ(PathsOf(r, "image.secrets"),
            (std::set<std::string>{"app/.env", "root/.ssh/id_rsa", "app/server.pem"}));
  ASSERT_NE(FindRule(r, "image.tests"), nullptr);
  EXPECT_EQ(FindRule(r, "image.tests")->severity, Severity::kWarning);
}

TEST(AuditImageRules, CleanImagePasses) {
  auto r = Audit(OneLayer({Dir("app"), File("app/server", std::string(5000, 's')),
                           File("etc/ssl/certs/ca-certificates.crt", "pem"),
                           Symlink("usr/bin/server", "/app/server")}));
  EXPECT_TRUE(r.findings.empty()) << RenderFindingsText(r.findings);
  EXPECT_FALSE(r.failed);
  EXPECT_DOUBLE_EQ(r.efficiency.score, 1.0);
}

std::vector<FileSpec> CudaFiles(const std::string& cudart = "12.4.127") {
  return {File("usr/local/cuda/lib64/libcudart.so." + cudart, "rt"),
          Symlink("usr/local/cuda/lib64/libcudart.so.12", "libcudart.so." + cudart),
          File("usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0", "dnn"),
          File("usr/lib/x86_64-linux-gnu/libnvinfer.so.10.13.0", "trt"),
          File("opt/ort/lib/libonnxruntime.so.1.29.0", "ort"),
          File("opt/ort/lib/libonnxruntime_providers_cuda.so", "p"),
          File("opt/ort/lib/libonnxruntime_providers_shared.so", "s"),
          Dir("usr/lib/python3/site-packages/nvidia_cublas_cu12-12.4.5.8.dist-info"),
          File("usr/lib/python3/site-packages/nvidia_cublas_cu12-12.4.5.8.dist-info/METADATA")};
}
const std::vector<std::string> kGoodEnv = {
    "CUDA_VERSION=12.4.1", "NVIDIA_VISIBLE_DEVICES=all",
    "NVIDIA_DRIVER_CAPABILITIES=compute,utility",
    "NVIDIA_REQUIRE_CUDA=cuda>=12.4 brand=tesla,driver>=470"};

TEST(AuditImageRules, CapabilitySnapshotFromFileNames) {
  auto r = Audit(OneLayer(CudaFiles(), kGoodEnv));
  const auto& c = r.snapshot.components;
  EXPECT_EQ(c.at("cuda-runtime").version, "12.4.127");
  EXPECT_EQ(c.at("cudnn").version, "9.1.0");
  EXPECT_EQ(c.at("tensorrt").version, "10.13.0");
  EXPECT_EQ(c.at("onnxruntime").version, "1.29.0");
  EXPECT_EQ(c.at("cublas").version, "12.4.5.8");
  EXPECT_EQ(c.count("ort-provider-cuda"), 1u);
  EXPECT_TRUE(r.snapshot.gpu_image);
  EXPECT_EQ(r.snapshot.env.at("CUDA_VERSION"), "12.4.1");
  // No inspector here (tests/audit_image_ort_test.cc loads real cores): the pair is reported as
  // not checked, and the fake provider file's DT_NEEDED cannot be read: those two warnings are
  // the only findings.
  std::set<std::string> rules;
  for (const auto& f : r.findings) {
    EXPECT_EQ(f.severity, Severity::kWarning) << RenderFindingsText(r.findings);
    rules.insert(f.rule);
  }
  EXPECT_EQ(r.findings.size(), 2u) << RenderFindingsText(r.findings);
  EXPECT_EQ(rules, (std::set<std::string>{"image.gpu.needed-unchecked", "image.ort.unchecked"}));
}

TEST(AuditImageRules, DriverLibrariesBakedIn) {
  auto files = CudaFiles();
  files.push_back(File("usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05", "drv"));
  files.push_back(Symlink("usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "libnvidia-ml.so.535"));
  files.push_back(File("usr/local/cuda/lib64/stubs/libcuda.so", "stub"));
  files.push_back(File("usr/local/cuda-12.4/compat/libcuda.so.550.54.15", "compat"));
  auto r = Audit(OneLayer(files, kGoodEnv));
  std::set<std::string> errors, warnings;
  for (const auto& f : r.findings) {
    if (f.rule != "image.gpu.driver-libs") continue;
    (f.severity == Severity::kError ? errors : warnings).insert(f.path);
  }
  EXPECT_EQ(errors, (std::set<std::string>{"usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05",
                                           "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"}));
  EXPECT_EQ(warnings, (std::set<std::string>{"usr/local/cuda-12.4/compat/libcuda.so.550.54.15"}));
}

struct EnvCase {
  const char* name;
  std::vector<std::string> env;
  const char* rule;  // expected rule, or nullptr for none of the env rules
};

TEST(AuditImageRules, NvidiaEnvironment) {
  const EnvCase cases[] = {
      {"good", kGoodEnv, nullptr},
      {"visible unset",
       {"CUDA_VERSION=12.4.1", "NVIDIA_REQUIRE_CUDA=cuda>=12.4"},
       "image.gpu.visible-devices"},
      {"visible void",
       {"CUDA_VERSION=12.4.1", "NVIDIA_VISIBLE_DEVICES=void", "NVIDIA_REQUIRE_CUDA=cuda>=12.4"},
       "image.gpu.visible-devices"},
      {"caps utility only",
       {"CUDA_VERSION=12.4.1", "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=utility",
        "NVIDIA_REQUIRE_CUDA=cuda>=12.4"},
       "image.gpu.driver-capabilities"},
      {"caps all",
       {"CUDA_VERSION=12.4.1", "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=all",
        "NVIDIA_REQUIRE_CUDA=cuda>=12.4"},
       nullptr},
      {"require older",
       {"CUDA_VERSION=12.4.1", "NVIDIA_VISIBLE_DEVICES=all",
        "NVIDIA_REQUIRE_CUDA=cuda>=12.2 brand=tesla,driver>=470"},
       "image.gpu.require-cuda"},
      {"disable require",
       {"CUDA_VERSION=12.4.1", "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_REQUIRE_CUDA=cuda>=12.4",
        "NVIDIA_DISABLE_REQUIRE=true"},
       "image.gpu.disable-require"},
      {"disable require false",
       {"CUDA_VERSION=12.4.1", "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_REQUIRE_CUDA=cuda>=12.4",
        "NVIDIA_DISABLE_REQUIRE=false"},
       nullptr},
      {"cuda version vs libcudart",
       {"CUDA_VERSION=12.6.0", "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_REQUIRE_CUDA=cuda>=12.6"},
       "image.gpu.cuda-version"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = Audit(OneLayer(CudaFiles(), c.env));
    std::set<std::string> rules;
    for (const auto& f : r.findings) {
      // The fake provider file's unreadable DT_NEEDED is the library rule's (AuditImageNeeded).
      if (f.rule.starts_with("image.gpu.") && f.rule != "image.gpu.needed-unchecked") {
        rules.insert(f.rule);
      }
    }
    if (c.rule == nullptr) {
      EXPECT_TRUE(rules.empty()) << RenderFindingsText(r.findings);
    } else {
      EXPECT_EQ(rules, (std::set<std::string>{c.rule})) << RenderFindingsText(r.findings);
    }
  }
  // A CPU-only image needs no NVIDIA environment.
  auto cpu = Audit(OneLayer({File("app/main.py")}, {"PATH=/bin"}));
  EXPECT_TRUE(cpu.findings.empty()) << RenderFindingsText(cpu.findings);
}

TEST(AuditImageRules, MatrixComparison) {
  auto m = policy::ParseMatrix(
      "cuda:\n  runtime: \"12.4\"\n  cublas: \"12\"\ncudnn: \">=9.1,<10\"\n"
      "tensorrt: \"10.13\"\nonnxruntime:\n  version: \"=1.29.0\"\n  provider_cuda_major: 12\n",
      "matrix.yaml");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ImageAuditOptions opts;
  opts.matrix = *m;
  auto good = Audit(OneLayer(CudaFiles(), kGoodEnv), opts);
  EXPECT_TRUE(PathsOf(good, "image.matrix").empty()) << RenderFindingsText(good.findings);

  auto files = CudaFiles();
  files[2] = File("usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7", "old");
  files.erase(files.begin() + 3);  // no TensorRT
  auto bad = Audit(OneLayer(files, kGoodEnv), opts);
  std::vector<std::string> msgs;
  for (const auto& f : bad.findings) {
    if (f.rule == "image.matrix") msgs.push_back(f.message);
  }
  ASSERT_EQ(msgs.size(), 2u) << RenderFindingsText(bad.findings);
  EXPECT_TRUE(bad.failed);
  bool cudnn = false, trt = false;
  for (const auto& s : msgs) {
    cudnn |= s.find("cudnn 8.9.7") != std::string::npos;
    trt |= s.find("tensorrt") != std::string::npos && s.find("ships no") != std::string::npos;
  }
  EXPECT_TRUE(cudnn);
  EXPECT_TRUE(trt);
}

TEST(AuditImageRules, PolicyDisablesAndOverrides) {
  auto p = ParseImagePolicy(
      "image:\n  budget: 1MiB\n  disable: [image.secrets]\n  severity:\n"
      "    image.build-tools: warning\n    image.vcs: off\n  limits:\n    max_entries: 99\n",
      "policy.yaml");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(*p->budget, 1u << 20);
  EXPECT_EQ(p->limits.max_entries, 99u);
  ImageAuditOptions opts;
  opts.policy = *p;
  auto r = Audit(OneLayer({File("usr/bin/gcc"), File("app/.env"), File("app/.git/HEAD")}), opts);
  EXPECT_TRUE(PathsOf(r, "image.secrets").empty());
  EXPECT_TRUE(PathsOf(r, "image.vcs").empty());
  ASSERT_NE(FindRule(r, "image.build-tools"), nullptr);
  EXPECT_EQ(FindRule(r, "image.build-tools")->severity, Severity::kWarning);
  EXPECT_FALSE(r.failed);
  p->fail_on = Severity::kWarning;
  opts.policy = *p;
  EXPECT_TRUE(Audit(OneLayer({File("usr/bin/gcc")}), opts).failed);

  auto typo = ParseImagePolicy("image:\n  budgett: 1GiB\n", "policy.yaml");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("policy.yaml"), std::string::npos);
  EXPECT_NE(typo.status().message().find("budgett"), std::string::npos);
  auto bad_size = ParseImagePolicy("image:\n  budget: lots\n", "policy.yaml");
  ASSERT_FALSE(bad_size.ok());
  EXPECT_NE(bad_size.status().message().find("image.budget"), std::string::npos)
      << bad_size.status().message();
  EXPECT_TRUE(ParseImagePolicy("dockerfile: {}\nk8s: {}\n", "p.yaml").ok());
}

TEST(AuditImageRules, ByteSizes) {
  EXPECT_EQ(ParseByteSize("2GiB"), 2ull << 30);
  EXPECT_EQ(ParseByteSize("2 gib"), 2ull << 30);
  EXPECT_EQ(ParseByteSize("500MB"), 500000000ull);
  EXPECT_EQ(ParseByteSize("1.5G"), 3ull << 29);
  EXPECT_EQ(ParseByteSize("1024"), 1024u);
  EXPECT_EQ(ParseByteSize("12 parsecs"), std::nullopt);
  EXPECT_EQ(ParseByteSize("-1"), std::nullopt);
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
}

// Sizes of 2^63 bytes and more used to reach llround (undefined past long long); the value is now
// checked against 2^64 before any conversion, and the refusal names it and the limit.
TEST(AuditImageRules, ByteSizesPastSixtyFourBitsAreRefusedByName) {
  EXPECT_EQ(ParseByteSizeOrError("8EiB").status().code(), common::StatusCode::kInvalidArg);
  EXPECT_EQ(*ParseByteSizeOrError("9223372036854775808"), 9223372036854775808ull);  // 2^63
  EXPECT_EQ(*ParseByteSizeOrError("15 TiB"), 15ull << 40);
  EXPECT_EQ(*ParseByteSizeOrError("18446744073709549568"), 18446744073709549568ull);
  for (const char* past : {"18446744073709551616", "16777216TiB", "1e30", "99999999999999999999"}) {
    auto r = ParseByteSizeOrError(past);
    ASSERT_FALSE(r.ok()) << past;
    EXPECT_NE(r.status().message().find(std::string("'") + past + "'"), std::string::npos)
        << r.status().message();
    if (std::string(past) != "1e30") {
      EXPECT_NE(r.status().message().find("more than the largest size, 18446744073709551615 bytes"),
                std::string::npos)
          << r.status().message();
    }
    EXPECT_EQ(ParseByteSize(past), std::nullopt) << past;
  }
  EXPECT_NE(ParseByteSizeOrError("12 parsecs").status().message().find("is not a size"),
            std::string::npos);
}

}  // namespace
}  // namespace tg::audit
