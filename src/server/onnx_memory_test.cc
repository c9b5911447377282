// OnnxMemoryModel and MemoryAdmission's KServe side: estimates cached per input shapes (bounded),
// a shape that shape inference refuses counted by its inputs alone, the refusal naming the model,
// the need, the budget and what is held, and the capabilities object.
#include "server/onnx_memory.h"

#include <gtest/gtest.h>

#include "runtime/onnx_builder.h"
#include "server/memory_admission.h"

namespace tg::server {
namespace {

namespace ob = ::tg::runtime::onnx;

// x [N, 8] -> Relu -> h -> Relu -> y [N, 8]: 3 x N x 32 bytes at the peak (x, h, y).
std::shared_ptr<OnnxMemoryModel> Chain() {
  ob::Graph g;
  g.nodes.push_back({"Relu", {"x"}, {"h"}, {}});
  g.nodes.push_back({"Relu", {"h"}, {"y"}, {}});
  g.inputs.push_back({"x", ob::ElemType::kFloat, {-1, 8}});
  g.outputs.push_back({"y", ob::ElemType::kFloat, {-1, 8}});
  auto m = runtime::OnnxModel::Parse(ob::SerializeModel(g), "chain.onnx", ".");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::make_shared<OnnxMemoryModel>(runtime::ShapeOnlyModel(*m));
}

TEST(OnnxMemoryModel, CachesPerShapesAndBoundsTheCache) {
  auto m = Chain();
  EXPECT_EQ(m->Estimate({{"x", {4, 8}}}, 128).peak_bytes, 3 * 128);
  EXPECT_EQ(m->Estimate({{"x", {4, 8}}}, 128).peak_bytes, 3 * 128);
  EXPECT_EQ(m->ToJson()["cached_shapes"], 1);
  EXPECT_EQ(m->Estimate({{"x", {8, 8}}}, 256).peak_bytes, 3 * 256);
  EXPECT_EQ(m->ToJson()["cached_shapes"], 2);
  for (std::int64_t n = 10; n < 10 + static_cast<std::int64_t>(kMaxCachedShapes) + 5; ++n) {
    EXPECT_EQ(m->Estimate({{"x", {n, 8}}}, n * 32).peak_bytes, 3 * n * 32);
  }
  EXPECT_EQ(m->ToJson()["cached_shapes"], kMaxCachedShapes);
}

TEST(OnnxMemoryModel, AShapeInferenceRefusesIsCountedByItsInputsAndMarkedIncomplete) {
  auto m = Chain();
  const runtime::RunMemoryEstimate e = m->Estimate({{"x", {4, 8, 2}}}, 256);  // rank 3 of 2
  EXPECT_FALSE(e.complete);
  EXPECT_EQ(e.peak_bytes, 256);
  EXPECT_NE(e.incomplete_reason.find("shape inference failed"), std::string::npos)
      << e.incomplete_reason;
  m->NoteAdmitted(e);
  EXPECT_FALSE(m->ToJson()["last_estimate_complete"].get<bool>());
  EXPECT_EQ(m->ToJson()["last_estimate_bytes"], 256);
}

TEST(MemoryAdmissionKserve, RefusesARunThatCannotFitNamingTheNeedAndTheBudget) {
  MemoryAdmission a;
  // No budget: no estimate, admitted as before.
  a.SetOnnxModel("mm", Chain());
  EXPECT_FALSE(a.EstimateOnnx("mm", {{"x", {4, 8}}}, 128).has_value());
  sd::MemoryBudget b;
  b.bytes = 100 << 20;
  b.source = "--memory-budget";
  a.Configure(b, 40 << 20);
  EXPECT_FALSE(a.EstimateOnnx("other", {{"x", {4, 8}}}, 128).has_value());
  // 60 MiB fits one run; 3 x N x 32 bytes at N = 1 Mi rows is 96 MiB.
  const InputShapes big = {{"x", {1 << 20, 8}}};
  auto e = a.EstimateOnnx("mm", big, 32 << 20);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->peak_bytes, 96 << 20);
  const common::Status s = a.CheckOnnx("mm", big, *e);
  ASSERT_EQ(s.code(), common::StatusCode::kInvalidArg);
  for (const char* part :
       {"model 'mm'", "needs an estimated 96.0 MiB", "x[1048576,8]", "100.0 MiB (--memory-budget)",
        "40.0 MiB of it held", "at most 60.0 MiB"}) {
    EXPECT_NE(s.message().find(part), std::string::npos) << part << " in " << s.message();
  }
  const InputShapes small = {{"x", {1 << 10, 8}}};
  auto fits = a.EstimateOnnx("mm", small, 32 << 10);
  ASSERT_TRUE(fits.has_value());
  EXPECT_TRUE(a.CheckOnnx("mm", small, *fits).ok());
  Metrics metrics;
  MemoryAdmission::Declare(metrics);
  a.NoteOnnxAdmitted(metrics, "mm", *fits);
  const common::Json j = a.ToJson()["onnx_models"]["mm"];
  EXPECT_EQ(j["last_estimate_bytes"], 3 * (32 << 10));
  EXPECT_EQ(j["max_estimate_bytes"], 3 * (32 << 10));
  EXPECT_TRUE(j["last_estimate_complete"].get<bool>());
  EXPECT_EQ(BytesText(128), "128 B");
  EXPECT_EQ(BytesText(1536), "1.5 KiB");
  EXPECT_EQ(BytesText(runtime::kSaturatedBytes), "over 2 EiB (a size that overflows)");
}

}  // namespace
}  // namespace tg::server
