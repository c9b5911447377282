#include "policy/matrix.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "common/status.h"
#include "tests/support/test_util.h"

namespace tg::policy {
namespace {

TEST(VersionTest, ParsesAndCompares) {
  auto v = Version::Parse("580.65.06");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->ToString(), "580.65.6");
  EXPECT_EQ(v->major(), 580);
  EXPECT_EQ(v->minor(), 65);
  EXPECT_EQ(Version::Parse("13")->Compare(*Version::Parse("13.0.0")), 0);
  EXPECT_LT(Version::Parse("12.9")->Compare(*Version::Parse("13.0")), 0);
  EXPECT_TRUE(Version::Parse("1.29.0+cuda13"));
  for (const char* bad : {"", "abc", "13.", ".13", "1.2.3.4.5", "99999999999", "13.x", "-1"}) {
    EXPECT_FALSE(Version::Parse(bad)) << bad;
  }
}

struct SpecCase {
  const char* spec;
  const char* version;
  bool match;
};

TEST(VersionSpecTest, MatchTable) {
  const SpecCase cases[] = {
      {"13.0", "13.0", true},       {"13.0", "13.0.88", true},    {"13.0", "13.1", false},
      {"13.0", "13", false},        {"=1.29.0", "1.29", true},    {"=1.29.0", "1.29.1", false},
      {"==10.13", "10.13.0", true}, {">=9.1,<10", "9.1.0", true}, {">=9.1,<10", "9.0.9", false},
      {">=9.1,<10", "10.0", false}, {">=9.1, <10", "9.13", true}, {"*", "0.0.1", true},
      {"!=12.2", "12.2.0", false},  {"!=12.2", "12.3", true},     {">12", "12.0.1", true},
      {"<=8.9", "8.9.7", false},    {"10", "10.13.2", true},      {"10", "1.0", false},
  };
  for (const auto& c : cases) {
    auto s = VersionSpec::Parse(c.spec);
    ASSERT_TRUE(s.ok()) << c.spec << ": " << s.status().message();
    EXPECT_EQ(s->Matches(std::string_view(c.version)), c.match) << c.spec << " vs " << c.version;
  }
  EXPECT_FALSE(VersionSpec::Parse("*")->Matches(std::string_view("garbage")));
}

TEST(VersionSpecTest, RejectsMalformed) {
  for (const char* bad : {"", " ", ">=", "9.1,,10", "~9", "9.1-rc", "latest", ">= 9.x", ",9"}) {
    auto s = VersionSpec::Parse(bad);
    EXPECT_FALSE(s.ok()) << bad;
    if (!s.ok()) {
      EXPECT_EQ(s.status().code(), common::StatusCode::kInvalidArg);
    }
  }
}

TEST(VersionSpecTest, NormalisesAndFindsSingleMajor) {
  EXPECT_EQ(VersionSpec::Parse(" >= 9.1 ,< 10 ")->text(), ">=9.1,<10");
  EXPECT_EQ(VersionSpec::Parse("==1.29.0")->text(), "=1.29.0");
  EXPECT_EQ(VersionSpec::Parse(">=9.1,<10")->SingleMajor(), 9);
  EXPECT_EQ(VersionSpec::Parse("13.0")->SingleMajor(), 13);
  EXPECT_EQ(VersionSpec::Parse("=10.13.2")->SingleMajor(), 10);
  EXPECT_EQ(VersionSpec::Parse(">=9")->SingleMajor(), std::nullopt);
  EXPECT_EQ(VersionSpec::Parse("*")->SingleMajor(), std::nullopt);
}

constexpr const char* kFull = R"(schema: 1
name: test
require_gpu: true
driver:
  branch: 580
  minimum: "580.65.06"
cuda:
  runtime: "13.0"
  cublas: 13
cudnn: ">=9.1,<10"
tensorrt: "10.13"
onnxruntime:
  version: "=1.29.0"
  provider_cuda_major: 13
  providers: [TensorrtExecutionProvider, CUDAExecutionProvider]
devices:
  count: 2
  min_compute_capability: "8.0"
  min_memory_mib: 16384
  mig: disabled
container:
  driver_capabilities: [compute, utility]
  device_nodes: true
)";

TEST(MatrixTest, ParsesEveryField) {
  auto m = ParseMatrix(kFull, "full.yaml");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->name, "test");
  EXPECT_EQ(m->driver.branch, 580);
  EXPECT_EQ(m->driver.minimum->ToString(), "580.65.6");
  EXPECT_EQ(m->cuda.runtime->text(), "13.0");
  EXPECT_EQ(m->cuda.cublas->text(), "13");
  EXPECT_EQ(m->cudnn->text(), ">=9.1,<10");
  EXPECT_EQ(m->tensorrt->text(), "10.13");
  EXPECT_EQ(m->onnxruntime.version->text(), "=1.29.0");
  EXPECT_EQ(m->onnxruntime.provider_cuda_major, 13);
  ASSERT_EQ(m->onnxruntime.providers.size(), 2u);
  EXPECT_EQ(m->onnxruntime.providers[0], "TensorrtExecutionProvider");
  EXPECT_EQ(m->devices.count, 2);
  EXPECT_EQ(m->devices.min_compute_capability->ToString(), "8.0");
  EXPECT_EQ(m->devices.min_memory_mib, 16384);
  EXPECT_EQ(m->devices.mig, MigExpectation::kDisabled);
  EXPECT_EQ(m->container.driver_capabilities.size(), 2u);
}

TEST(MatrixTest, FingerprintIgnoresFormattingButNotContent) {
  auto a = ParseMatrix(kFull, "a.yaml");
  // Same content: different key order, comments, name and quoting.
  auto b = ParseMatrix(R"(# reordered
name: other
container: {device_nodes: true, driver_capabilities: [compute, utility]}
devices: {mig: disabled, min_memory_mib: 16384, min_compute_capability: 8.0, count: 2}
onnxruntime: {providers: [TensorrtExecutionProvider, CUDAExecutionProvider],
              provider_cuda_major: 13, version: "==1.29.0"}
tensorrt: "10.13"
cudnn: ">= 9.1, < 10"
cuda: {cublas: "13", runtime: "13.0"}
driver: {minimum: 580.65.06, branch: 580}
)",
                       "b.yaml");
  ASSERT_TRUE(a.ok() && b.ok()) << b.status().message();
  EXPECT_EQ(a->Fingerprint(), b->Fingerprint());
  EXPECT_EQ(a->Fingerprint().size(), 64u);
  std::string changed = kFull;
  changed.replace(changed.find("10.13"), 5, "10.14");
  auto c = ParseMatrix(changed, "c.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->Fingerprint(), c->Fingerprint());
}

struct BadCase {
  const char* yaml;
  const char* must_contain;  // field path and/or line reference
};

TEST(MatrixTest, BadInputNamesFileLineAndField) {
  const BadCase cases[] = {
      {"schema: 1\ncudnn: \">=9.1,<10\"\ntensorrtt: \"10\"\n",
       "bad.yaml:3:1: unknown field 'tensorrtt'"},
      {"devices:\n  count: 1\n  colour: red\n", "unknown field 'devices.colour'"},
      {"devices:\n  count: two\n", "bad.yaml:2:10: field 'devices.count': expected an integer"},
      {"devices:\n  count: -1\n", "field 'devices.count'"},
      {"devices:\n  mig: maybe\n", "field 'devices.mig': expected one of any, disabled, enabled"},
      {"cudnn: [9]\n", "field 'cudnn': expected a string"},
      {"cudnn: \"nine\"\n", "bad.yaml:1:8: field 'cudnn': 'nine' is not a version clause"},
      {"driver:\n  minimum: 580.x\n", "field 'driver.minimum'"},
      {"driver: 580\n", "field 'driver': expected a mapping"},
      {"onnxruntime:\n  providers: CUDAExecutionProvider\n", "field 'onnxruntime.providers'"},
      {"onnxruntime:\n  providers: [CUDA, CUDA]\n", "field 'onnxruntime.providers'"},
      {"container:\n  driver_capabilities: [compute, gpu]\n",
       "field 'container.driver_capabilities'"},
      {"require_gpu: perhaps\n", "field 'require_gpu': expected true or false"},
      {"schema: 2\n", "field 'schema'"},
      {"- a\n- b\n", "document root: expected a mapping"},
      {"cuda: {runtime: \"13.0\"\n", "bad.yaml:"},  // truncated flow mapping
      {"devices:\n\tcount: 1\n", "bad.yaml:"},      // tab indentation
  };
  for (const auto& c : cases) {
    auto m = ParseMatrix(c.yaml, "bad.yaml");
    ASSERT_FALSE(m.ok()) << c.yaml;
    EXPECT_EQ(common::ExitCodeFromStatus(m.status()), common::kExitUsage) << c.yaml;
    EXPECT_NE(m.status().message().find(c.must_contain), std::string::npos)
        << "message: " << m.status().message() << "\nexpected to contain: " << c.must_contain;
  }
}

TEST(MatrixTest, EmptyDocumentIsRejected) {
  auto m = ParseMatrix("", "empty.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("empty.yaml"), std::string::npos);
}

TEST(MatrixTest, EmbeddedDefaultsParseAndMatchDeployFiles) {
  auto prod = ParseMatrix(std::string(ProductionMatrixYaml()), "p");
  auto dev = ParseMatrix(std::string(DevMatrixYaml()), "d");
  ASSERT_TRUE(prod.ok()) << prod.status().message();
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  EXPECT_TRUE(prod->require_gpu);
  EXPECT_FALSE(dev->require_gpu);
  EXPECT_EQ(ProductionMatrix().Fingerprint(), prod->Fingerprint());
  const std::string deploy = testing::SourceDir() + "/deploy/";
  auto prod_file = LoadMatrix(deploy + "matrix.production.yaml");
  auto dev_file = LoadMatrix(deploy + "matrix.dev.yaml");
  auto example = LoadMatrix(deploy + "matrix.example.yaml");
  ASSERT_TRUE(prod_file.ok()) << prod_file.status().message();
  ASSERT_TRUE(dev_file.ok()) << dev_file.status().message();
  ASSERT_TRUE(example.ok()) << example.status().message();
  EXPECT_EQ(prod_file->Fingerprint(), ProductionMatrix().Fingerprint())
      << "deploy/matrix.production.yaml and the embedded production matrix differ";
  EXPECT_EQ(dev_file->Fingerprint(), DevMatrix().Fingerprint())
      << "deploy/matrix.dev.yaml and the embedded dev matrix differ";
  // The matrix deploy/k8s mounts (the ConfigMap's matrix.yaml) is the same production matrix
  // (`k8s render`'s default: tests/audit_config_cli_test.cc).
  YAML::Node cm = YAML::LoadFile(deploy + "k8s/configmap.yaml");
  auto mounted = ParseMatrix(cm["data"]["matrix.yaml"].as<std::string>(), "configmap.yaml");
  ASSERT_TRUE(mounted.ok()) << mounted.status().message();
  EXPECT_EQ(mounted->Fingerprint(), ProductionMatrix().Fingerprint())
      << "deploy/k8s/configmap.yaml mounts another matrix than the embedded production one";
}

// Production is what truegreen's image ships: the CUDA provider on CUDA 13, cuBLAS 13 and cuDNN 9,
// no TensorRT. The TensorRT variant is the same plus TensorRT 10, its provider first.
TEST(MatrixTest, ProductionNeedsNoTensorRtAndTheVariantAddsIt) {
  const Matrix& prod = ProductionMatrix();
  EXPECT_FALSE(prod.tensorrt.has_value());
  EXPECT_EQ(prod.onnxruntime.providers, std::vector<std::string>{"CUDAExecutionProvider"});
  auto trt = LoadMatrix(testing::SourceDir() + "/deploy/matrix.production-tensorrt.yaml");
  ASSERT_TRUE(trt.ok()) << trt.status().message();
  ASSERT_TRUE(trt->tensorrt.has_value());
  EXPECT_EQ(trt->onnxruntime.providers,
            (std::vector<std::string>{"TensorrtExecutionProvider", "CUDAExecutionProvider"}));
  EXPECT_NE(trt->Fingerprint(), prod.Fingerprint());
  Matrix same = *trt;  // everything else equal: drop TensorRT and its provider
  same.tensorrt.reset();
  same.onnxruntime.providers = {"CUDAExecutionProvider"};
  same.name = prod.name;
  EXPECT_EQ(same.Fingerprint(), prod.Fingerprint());
}

TEST(MatrixTest, ResolvePolicy) {
  EXPECT_TRUE(ResolvePolicyMatrix("production")->require_gpu);
  EXPECT_FALSE(ResolvePolicyMatrix("dev")->require_gpu);
  auto missing = ResolvePolicyMatrix("/nonexistent/matrix.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(common::ExitCodeFromStatus(missing.status()), common::kExitUsage);
  EXPECT_NE(missing.status().message().find("/nonexistent/matrix.yaml"), std::string::npos);
}

TEST(MatrixTest, HugeFileIsRefusedBeforeParsing) {
  testing::TempDir dir;
  std::string path = dir / "huge.yaml";
  // A sparse 100 MB file: the size check must refuse it without reading it.
  testing::WriteFile(path, "schema: 1\n");
  std::filesystem::resize_file(path, 100ull << 20);
  auto m = LoadMatrix(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(common::ExitCodeFromStatus(m.status()), common::kExitUsage);
  EXPECT_NE(m.status().message().find("huge.yaml"), std::string::npos);
}

}  // namespace
}  // namespace tg::policy
