// Policy file parsing and validation: every unknown or ill-typed option is named with its line.
#include "runtime/runtime_policy.h"

#include <gtest/gtest.h>

#include <fstream>

#include "common/file_util.h"
#include "tests/support/test_util.h"

namespace tg::runtime {
namespace {

TEST(RuntimePolicyTest, BuiltInProfiles) {
  auto prod = LoadRuntimePolicy("production");
  ASSERT_TRUE(prod.ok()) << prod.status().ToString();
  EXPECT_EQ(prod->profile, Profile::kProduction);
  EXPECT_FALSE(prod->allow_cpu);
  EXPECT_TRUE(prod->placement.enforce);
  EXPECT_FALSE(prod->placement.gpu_required_ops.empty());
  EXPECT_TRUE(prod->tensorrt.fp16);
  EXPECT_FALSE(prod->tensorrt.int8);
  EXPECT_FALSE(prod->tensorrt.allow_on_node_build);

  auto dev = LoadRuntimePolicy("dev");
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(dev->profile, Profile::kDev);
  EXPECT_TRUE(dev->allow_cpu);
  EXPECT_FALSE(dev->placement.enforce);
}

TEST(RuntimePolicyTest, ParsesEveryDocumentedOption) {
  const std::string yaml = R"(profile: production
providers: [TensorRT, CUDA]
attach: plugin
matrix: /etc/truegreen/matrix.yaml
placement:
  gpu_required_ops: [MatMul, Conv]
  max_cpu_node_share: 0.1
  max_memcpy_nodes: 2
  disable_cpu_ep_fallback: true
session:
  intra_op_threads: 4
  inter_op_threads: 1
  graph_optimization_level: extended
  io_binding: false
cuda:
  device_id: 1
  gpu_mem_limit: 8589934592
  arena_extend_strategy: kSameAsRequested
  cudnn_conv_algo_search: HEURISTIC
  do_copy_in_default_stream: true
  use_tf32: false
  enable_cuda_graph: false
  prefer_nhwc: true
arena:
  max_mem: 1073741824
  arena_extend_strategy: kNextPowerOfTwo
  initial_chunk_size_bytes: 1048576
  shrink_after_run: true
tensorrt:
  fp16: true
  int8: true
  int8_gate: {max_abs_error: 0.01, max_rel_rms_error: 0.005}
  max_workspace_size: 4294967296
  builder_optimization_level: 5
  timing_cache: true
  engine_dir: /var/lib/truegreen/engines
  allow_on_node_build: false
)";
  auto p = ParseRuntimePolicy(yaml, "policy.yaml");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->providers,
            (std::vector<std::string>{"TensorrtExecutionProvider", "CUDAExecutionProvider"}));
  EXPECT_EQ(p->attach, AttachMode::kPlugin);
  EXPECT_EQ(p->matrix_path, "/etc/truegreen/matrix.yaml");
  EXPECT_EQ(p->placement.gpu_required_ops, (std::vector<std::string>{"MatMul", "Conv"}));
  EXPECT_DOUBLE_EQ(p->placement.max_cpu_node_share, 0.1);
  EXPECT_EQ(p->placement.max_memcpy_nodes, 2);
  EXPECT_TRUE(p->placement.disable_cpu_ep_fallback);
  EXPECT_EQ(p->session.intra_op_threads, 4);
  EXPECT_EQ(p->session.graph_optimization_level, "extended");
  EXPECT_FALSE(p->session.io_binding);
  EXPECT_EQ(p->cuda.device_id, 1);
  EXPECT_EQ(p->cuda.gpu_mem_limit.value_or(0), 8589934592);
  auto opts = p->cuda.ToProviderOptions();
  EXPECT_EQ(opts["arena_extend_strategy"], "kSameAsRequested");
  EXPECT_EQ(opts["cudnn_conv_algo_search"], "HEURISTIC");
  EXPECT_EQ(opts["use_tf32"], "0");
  EXPECT_EQ(opts["prefer_nhwc"], "1");
  EXPECT_EQ(opts["device_id"], "1");
  EXPECT_EQ(p->arena.max_mem.value_or(0), 1073741824);
  EXPECT_EQ(p->arena.arena_extend_strategy.value_or(-1), 0);
  EXPECT_TRUE(p->arena.shrink_after_run);
  EXPECT_TRUE(p->tensorrt.int8);
  EXPECT_DOUBLE_EQ(p->tensorrt.int8_gate.max_abs_error, 0.01);
  EXPECT_EQ(p->tensorrt.builder_optimization_level, 5);
  EXPECT_EQ(p->tensorrt.engine_dir, "/var/lib/truegreen/engines");
}

// Each case: a policy with one bad option, and what the error must name.
struct BadCase {
  const char* yaml;
  const char* must_name;
};

class RuntimePolicyBadOption : public ::testing::TestWithParam<BadCase> {};

TEST_P(RuntimePolicyBadOption, IsNamedWithLine) {
  auto p = ParseRuntimePolicy(GetParam().yaml, "bad.yaml");
  ASSERT_FALSE(p.ok()) << "accepted: " << GetParam().yaml;
  EXPECT_EQ(p.status().code(), common::StatusCode::kInvalidArg);
  EXPECT_NE(p.status().message().find(GetParam().must_name), std::string::npos)
      << p.status().message();
  EXPECT_NE(p.status().message().find("bad.yaml:"), std::string::npos) << p.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Options, RuntimePolicyBadOption,
    ::testing::Values(
        BadCase{"profile: staging\n", "profile"}, BadCase{"providers: [ROCm]\n", "providers"},
        BadCase{"attach: sideways\n", "attach"}, BadCase{"allow_cpu: true\n", "allow_cpu"},
        BadCase{"frobnicate: 1\n", "frobnicate"},
        BadCase{"cuda:\n  device_id: zero\n", "cuda.device_id"},
        BadCase{"cuda:\n  gpu_mem_limt: 5\n", "cuda.gpu_mem_limt"},
        BadCase{"cuda:\n  gpu_mem_limit: -5\n", "cuda.gpu_mem_limit"},
        BadCase{"cuda:\n  cudnn_conv_algo_search: FASTEST\n", "cuda.cudnn_conv_algo_search"},
        BadCase{"cuda:\n  arena_extend_strategy: kDouble\n", "cuda.arena_extend_strategy"},
        BadCase{"cuda:\n  use_tf32: maybe\n", "cuda.use_tf32"},
        BadCase{"cuda:\n  enable_cuda_graph: [1]\n", "cuda.enable_cuda_graph"},
        BadCase{"cuda:\n  prefer_nhwc: 2\n", "cuda.prefer_nhwc"},
        BadCase{"cuda:\n  do_copy_in_default_stream: x\n", "cuda.do_copy_in_default_stream"},
        BadCase{"arena:\n  max_mem: lots\n", "arena.max_mem"},
        BadCase{"arena:\n  initial_chunk_size: 1\n", "arena.initial_chunk_size"},
        BadCase{"arena:\n  shrink_after_run: sometimes\n", "arena.shrink_after_run"},
        BadCase{"tensorrt:\n  fp16: yes please\n", "tensorrt.fp16"},
        BadCase{"tensorrt:\n  builder_optimization_level: 9\n",
                "tensorrt.builder_optimization_level"},
        BadCase{"tensorrt:\n  int8_gate:\n    max_abs: 0.1\n", "tensorrt.int8_gate.max_abs"},
        BadCase{"tensorrt:\n  max_workspace_size: 1.5\n", "tensorrt.max_workspace_size"},
        BadCase{"tensorrt:\n  trt_fp16_enable: true\n", "tensorrt.trt_fp16_enable"},
        BadCase{"session:\n  intra_op_threads: -1\n", "session.intra_op_threads"},
        BadCase{"session:\n  graph_optimization_level: max\n", "session.graph_optimization_level"},
        BadCase{"session:\n  allow_spinning: sometimes\n", "session.allow_spinning"},
        BadCase{"session:\n  allow_spining: false\n", "session.allow_spining"},
        BadCase{"placement:\n  max_cpu_node_share: 1.5\n", "placement.max_cpu_node_share"},
        BadCase{"placement:\n  max_memcpy_nodes: many\n", "placement.max_memcpy_nodes"},
        BadCase{"placement:\n  gpu_required_ops: MatMul\n", "placement.gpu_required_ops"},
        BadCase{"cuda: 5\n", "cuda"}));

TEST(RuntimePolicyTest, ReportsEveryProblemAtOnce) {
  auto p =
      ParseRuntimePolicy("cuda:\n  device_id: x\n  bogus: 1\ntensorrt:\n  fp16: 3\n", "m.yaml");
  ASSERT_FALSE(p.ok());
  const std::string& m = p.status().message();
  EXPECT_NE(m.find("cuda.device_id"), std::string::npos) << m;
  EXPECT_NE(m.find("cuda.bogus"), std::string::npos) << m;
  EXPECT_NE(m.find("tensorrt.fp16"), std::string::npos) << m;
  EXPECT_NE(m.find("m.yaml:2:"), std::string::npos) << m;  // line of device_id
}

TEST(RuntimePolicyTest, AllowSpinningDefaultsToOrtAndReachesTheConfigEntries) {
  // Default (no session: key) = ORT's default: both pools may spin.
  auto d = ParseRuntimePolicy("profile: dev\n", "d.yaml");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->session.allow_spinning);
  EXPECT_TRUE(ProductionPolicy().session.allow_spinning);
  EXPECT_TRUE(DevPolicy().session.allow_spinning);
  auto on = d->session.ToSessionConfigEntries();
  EXPECT_EQ(on["session.intra_op.allow_spinning"], "1");
  EXPECT_EQ(on["session.inter_op.allow_spinning"], "1");

  auto p = ParseRuntimePolicy("profile: dev\nsession: {allow_spinning: false}\n", "s.yaml");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_FALSE(p->session.allow_spinning);
  auto off = p->session.ToSessionConfigEntries();
  EXPECT_EQ(off.size(), 2u);
  EXPECT_EQ(off["session.intra_op.allow_spinning"], "0");
  EXPECT_EQ(off["session.inter_op.allow_spinning"], "0");
}

TEST(RuntimePolicyTest, AllowSpinningOfTheWrongTypeIsNamedWithLineAndColumn) {
  auto p = ParseRuntimePolicy("session:\n  intra_op_threads: 2\n  allow_spinning: 0.5\n", "x.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), common::StatusCode::kInvalidArg);
  const std::string& m = p.status().message();
  EXPECT_NE(m.find("x.yaml:3:"), std::string::npos) << m;
  EXPECT_NE(m.find("session.allow_spinning"), std::string::npos) << m;
  EXPECT_NE(m.find("0.5"), std::string::npos) << m;  // what was found
}

TEST(RuntimePolicyTest, MissingFileIsNotFound) {
  auto p = LoadRuntimePolicy("/nonexistent/policy.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), common::StatusCode::kNotFound);
  EXPECT_NE(p.status().message().find("/nonexistent/policy.yaml"), std::string::npos);
}

TEST(RuntimePolicyTest, DeployedExamplesParse) {
  for (const char* f : {"/deploy/policy.production.yaml", "/deploy/policy.dev.yaml"}) {
    auto p = LoadRuntimePolicy(tg::testing::SourceDir() + f);
    ASSERT_TRUE(p.ok()) << f << ": " << p.status().ToString();
  }
  auto dev = LoadRuntimePolicy(tg::testing::SourceDir() + "/deploy/policy.dev.yaml");
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(dev->profile, Profile::kDev);
}

}  // namespace
}  // namespace tg::runtime
