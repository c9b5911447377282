// Real ONNX Runtime sessions on the generated models (build tree models/runtime/): dev-profile
// placement, the placement policy against ORT's own assignment report, the verbose-log fallback,
// IO binding vs plain Run, input validation and concurrent runs.
#include <gtest/gtest.h>

#include <thread>

#include "runtime/session.h"
#include "tests/support/test_util.h"

namespace tg::runtime {
namespace {

std::string Model(const std::string& name) {
  return tg::testing::BinaryDir() + "/models/runtime/" + name;
}

SessionFactory DevFactory(RuntimePolicy policy = DevPolicy()) {
  auto ort = OrtRuntime::Open(common::LibraryLoader::WithDefaults({}));
  if (!ort.ok()) {
    ADD_FAILURE() << "ONNX Runtime: " << ort.status().ToString();
    std::abort();
  }
  auto f = SessionFactory::Create(policy, **ort);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return std::move(f).value();
}

std::vector<NamedTensor> RandomInputs(const Session& s, std::int64_t dynamic = 3) {
  std::vector<NamedTensor> in;
  std::uint64_t seed = 5;
  for (const auto& i : s.inputs()) {
    auto shape = i.shape;
    for (auto& d : shape) d = d < 0 ? dynamic : d;
    auto t = RandomTensor(i.dtype, shape, seed++);
    EXPECT_TRUE(t.ok());
    in.push_back({i.name, std::move(t).value()});
  }
  return in;
}

TEST(RuntimeSessionTest, DevProfileIsAllCpuAndDegraded) {
  SessionFactory f = DevFactory();
  EXPECT_TRUE(f.degraded());
  auto s = f.Open(Model("unet_tiny.onnx"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const SessionReport& r = s->report();
  EXPECT_TRUE(r.degraded);
  EXPECT_NE(r.degraded_reason.find("dev profile"), std::string::npos);
  EXPECT_EQ(r.profile, "dev");
  EXPECT_EQ(r.placement.source, "ep_graph_assignment_info");
  ASSERT_GT(r.placement.total_nodes, 0);
  EXPECT_EQ(r.placement.nodes_per_provider.size(), 1u);
  EXPECT_EQ(r.placement.nodes_per_provider.at("CPUExecutionProvider"), r.placement.total_nodes);
  EXPECT_EQ(r.placement.cpu_nodes, r.placement.total_nodes);
  EXPECT_FALSE(r.gpu_active);
  EXPECT_EQ(r.io_mode, "host");
  // Dev: the violations are reported (advisory) but do not fail the session.
  EXPECT_TRUE(r.placement.ok);
  EXPECT_FALSE(r.placement.cpu_compute_ops.empty());
  // Its one self-attention is rewritten at open (attention_fusion.h) and checked.
  EXPECT_EQ(r.attention.verdict, "fused") << r.attention.fusion;
  EXPECT_EQ(r.attention.unfused_chains, 0);
  EXPECT_EQ(r.attention.fused_by_truegreen, 1);
  EXPECT_EQ(r.attention.fusion.rfind("fused by truegreen: 1 of 1 chains", 0), 0u)
      << r.attention.fusion;
  OpenOptions as_exported;
  as_exported.fuse_attention = false;
  auto plain = f.Open(Model("unet_tiny.onnx"), as_exported);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->report().attention.verdict, "unfused");
  EXPECT_EQ(plain->report().attention.unfused_chains, 1);
  EXPECT_EQ(plain->report().attention.fusion, "off");
  ASSERT_EQ(s->inputs().size(), 1u);
  EXPECT_EQ(s->inputs()[0].name, "sample");
  EXPECT_EQ(s->inputs()[0].shape, (std::vector<std::int64_t>{1, 4, 16, 16}));
  // Providers that could not attach are in the report with their cause; CPU is last.
  ASSERT_FALSE(r.providers.empty());
  EXPECT_EQ(r.providers.back().name, "CPUExecutionProvider");
  const auto json = SessionReportToJson(r);
  EXPECT_TRUE(json.at("degraded").get<bool>());
  EXPECT_NE(FormatSessionReport(r).find("DEGRADED"), std::string::npos);
}

TEST(RuntimeSessionTest, GpuPlacementPolicyRejectsComputeOpsOnCpu) {
  // ORT's real assignment report from a CPU session, judged by a GPU-requiring policy.
  RuntimePolicy p = DevPolicy();
  p.placement.enforce = true;
  SessionFactory f = DevFactory(p);
  auto s = f.Open(Model("matmul_softmax.onnx"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), common::StatusCode::kUnavailable);
  EXPECT_NE(s.status().message().find("mm1 (MatMul)"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("softmax (Softmax)"), std::string::npos);

  common::Status violation;
  auto diag = f.OpenForDiagnosis(Model("matmul_softmax.onnx"), {}, &violation);
  ASSERT_TRUE(diag.ok());
  EXPECT_FALSE(violation.ok());
  EXPECT_FALSE(diag->report().placement.ok);
  EXPECT_EQ(diag->report().placement.cpu_compute_ops.size(), 3u);  // 2 MatMul + Softmax
}

TEST(RuntimeSessionTest, GpuPlacementPolicyAcceptsShapeOnlyCpuNodes) {
  RuntimePolicy p = DevPolicy();
  p.placement.enforce = true;
  SessionFactory f = DevFactory(p);
  auto s = f.Open(Model("shape_ops.onnx"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const PlacementReport& pl = s->report().placement;
  EXPECT_TRUE(pl.ok);
  EXPECT_GT(pl.cpu_nodes, 0);
  EXPECT_EQ(pl.cpu_nodes, pl.cpu_shape_nodes);
  EXPECT_EQ(pl.cpu_share, 0.0);
}

TEST(RuntimeSessionTest, VerboseLogPlacementMatchesApi) {
  SessionFactory f = DevFactory();
  OpenOptions log_opts;
  log_opts.placement_from_log = true;
  auto from_log = f.Open(Model("unet_tiny.onnx"), log_opts);
  auto from_api = f.Open(Model("unet_tiny.onnx"));
  ASSERT_TRUE(from_log.ok() && from_api.ok());
  EXPECT_EQ(from_log->report().placement.source, "verbose_log");
  EXPECT_EQ(from_api->report().placement.source, "ep_graph_assignment_info");
  EXPECT_EQ(from_log->report().placement.nodes_per_provider,
            from_api->report().placement.nodes_per_provider);
  EXPECT_EQ(from_log->report().placement.cpu_compute_ops.size(),
            from_api->report().placement.cpu_compute_ops.size());
}

TEST(RuntimeSessionTest, IoBindingIsBitwiseEqualToPlainRun) {
  SessionFactory f = DevFactory();
  for (const char* m : {"unet_tiny.onnx", "matmul_softmax.onnx", "add_int64.onnx",
                        "half_matmul.onnx", "attention_fused.onnx", "shape_ops.onnx"}) {
    auto s = f.Open(Model(m));
    ASSERT_TRUE(s.ok()) << m << ": " << s.status().ToString();
    auto in = RandomInputs(*s);
    std::vector<Tensor> plain, bound;
    ASSERT_TRUE(s->Run(in, {}, &plain, RunMode::kPlain).ok()) << m;
    ASSERT_TRUE(s->Run(in, {}, &bound, RunMode::kIoBinding).ok()) << m;
    ASSERT_EQ(plain.size(), bound.size());
    ASSERT_FALSE(plain.empty());
    for (std::size_t i = 0; i < plain.size(); ++i) {
      EXPECT_TRUE(plain[i].BitwiseEquals(bound[i])) << m << " output " << i;
      EXPECT_GT(plain[i].byte_size(), 0u);
    }
    // CPU: the same code path, no host<->device copies.
    const IoStats io = s->io_stats();
    EXPECT_EQ(io.runs, 2u);
    EXPECT_EQ(io.h2d_bytes, 0u);
    EXPECT_EQ(io.d2h_bytes, 0u);
  }
}

TEST(RuntimeSessionTest, FusedAttentionIsDetectedAndRuns) {
  SessionFactory f = DevFactory();
  auto s = f.Open(Model("attention_fused.onnx"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->report().attention.verdict, "fused");
  EXPECT_EQ(s->report().attention.fused_ops, 1);
  ASSERT_EQ(s->report().attention.fused_op_types.size(), 1u);
  EXPECT_EQ(s->report().attention.fused_op_types[0], "com.microsoft.MultiHeadAttention");
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run(RandomInputs(*s), {"out"}, &out).ok());
  EXPECT_EQ(out[0].shape(), (std::vector<std::int64_t>{1, 6, 16}));
}

TEST(RuntimeSessionTest, RunValidatesInputs) {
  SessionFactory f = DevFactory();
  auto s = f.Open(Model("matmul_softmax.onnx"));
  ASSERT_TRUE(s.ok());
  std::vector<Tensor> out;
  auto wrong_name = s->Run({{"nope", *RandomTensor(DataType::kFloat32, {1, 8}, 1)}}, {}, &out);
  EXPECT_EQ(wrong_name.code(), common::StatusCode::kInvalidArg);
  EXPECT_NE(wrong_name.message().find("'nope'"), std::string::npos);
  auto wrong_type = s->Run({{"x", *RandomTensor(DataType::kFloat64, {1, 8}, 1)}}, {}, &out);
  EXPECT_NE(wrong_type.message().find("float64"), std::string::npos) << wrong_type.message();
  auto wrong_shape = s->Run({{"x", *RandomTensor(DataType::kFloat32, {1, 7}, 1)}}, {}, &out);
  EXPECT_NE(wrong_shape.message().find("[1,7]"), std::string::npos) << wrong_shape.message();
  auto missing = s->Run({}, {}, &out);
  EXPECT_NE(missing.message().find("'x' is missing"), std::string::npos);
  auto bad_out = s->Run({{"x", *RandomTensor(DataType::kFloat32, {2, 8}, 1)}}, {"z"}, &out);
  EXPECT_NE(bad_out.message().find("no output 'z'"), std::string::npos);
  // Dynamic batch: any N works.
  ASSERT_TRUE(s->Run({{"x", *RandomTensor(DataType::kFloat32, {5, 8}, 1)}}, {"y"}, &out).ok());
  EXPECT_EQ(out[0].shape(), (std::vector<std::int64_t>{5, 8}));
}

TEST(RuntimeSessionTest, ConcurrentRunsAgree) {
  SessionFactory f = DevFactory();
  auto s = f.Open(Model("unet_tiny.onnx"));
  ASSERT_TRUE(s.ok());
  auto in = RandomInputs(*s);
  std::vector<Tensor> ref;
  ASSERT_TRUE(s->Run(in, {}, &ref).ok());
  std::vector<std::string> sums(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<Tensor> out;
      for (int i = 0; i < 3; ++i) {
        if (!s->Run(in, {}, &out).ok()) return;
      }
      sums[static_cast<std::size_t>(t)] = out[0].Checksum();
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& c : sums) EXPECT_EQ(c, ref[0].Checksum());
  EXPECT_EQ(s->io_stats().runs, 13u);
}

TEST(RuntimeSessionTest, BadModelsAreNamedErrors) {
  SessionFactory f = DevFactory();
  auto missing = f.Open("/nonexistent/model.onnx");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), common::StatusCode::kNotFound);
  tg::testing::TempDir dir;
  tg::testing::WriteFile(dir / "junk.onnx", "this is not a protobuf \x01\x02\x03");
  auto junk = f.Open(dir / "junk.onnx");
  ASSERT_FALSE(junk.ok());
  EXPECT_EQ(junk.status().code(), common::StatusCode::kInvalidArg);
  EXPECT_NE(junk.status().message().find("junk.onnx"), std::string::npos);
}

}  // namespace
}  // namespace tg::runtime
