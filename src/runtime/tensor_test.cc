// Tensor values, fp16 conversion, .npy round trips, engine keys, the INT8 gate and the pure
// placement evaluation (no ORT needed).
#include "runtime/tensor.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "common/cpu_features.h"
#include "runtime/engines.h"
#include "runtime/session.h"

namespace tg::runtime {
namespace {

TEST(TensorTest, Fp16RoundTripAndSpecialValues) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(1e6f), 0x7c00);  // overflow -> +Inf
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  // Every finite half survives half -> float -> half.
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;
    ASSERT_EQ(FloatToHalf(HalfToFloat(static_cast<std::uint16_t>(h))), h) << h;
  }
  // Round to nearest even: 1 + 2^-11 is a tie between 1 and 1 + 2^-10.
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(TensorTest, Fp16SignallingNanIsQuieted) {
  // What vcvtph2ps returns: the payload kept, the quiet bit set.
  EXPECT_EQ(std::bit_cast<std::uint32_t>(HalfToFloat(0x7c01)), 0x7fc02000u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(HalfToFloat(0xfe00)), 0xffc00000u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(HalfToFloat(0x7c00)), 0x7f800000u);  // Inf stays Inf
}

// The bulk kernels against the scalar reference, element by element, over `in` (lengths that are
// not multiples of the vector width exercise the tails).
template <typename In, typename Out, typename Fn, typename Ref>
void ExpectKernelsMatch(const std::vector<In>& in, Fn bulk, Ref ref, const char* what) {
  for (Fp16Kernel k : {Fp16Kernel::kScalar, Fp16Kernel::kF16c, Fp16Kernel::kAuto}) {
    std::vector<Out> out(in.size(), Out{});
    bulk(in.data(), out.data(), in.size(), k);
    for (std::size_t i = 0; i < in.size(); ++i) {
      const Out want = ref(in[i]);
      ASSERT_EQ(std::memcmp(&out[i], &want, sizeof(Out)), 0)
          << what << " kernel " << static_cast<int>(k) << " index " << i << " input bits "
          << std::hex
          << +std::bit_cast<std::conditional_t<sizeof(In) == 4, std::uint32_t, std::uint16_t>>(
                 in[i]);
    }
  }
}

TEST(TensorTest, BulkHalfToFloatMatchesScalarForEveryHalf) {
  if (!common::CpuHasF16c())
    GTEST_LOG_(INFO) << "no F16C on this CPU: only the scalar kernel is checked";
  std::vector<std::uint16_t> all(0x10000 + 5);  // + 5: a tail after the last full vector
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
  ExpectKernelsMatch<std::uint16_t, float>(
      all,
      [](const std::uint16_t* s, float* d, std::size_t n, Fp16Kernel k) {
        HalfToFloatN(s, d, n, k);
      },
      HalfToFloat, "HalfToFloatN");
}

TEST(TensorTest, BulkFloatToHalfMatchesScalarOnRoundingEdges) {
  std::vector<float> in;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;  // NaN/Inf inputs are added below
    const float f = HalfToFloat(static_cast<std::uint16_t>(h));
    in.push_back(f);
    // The tie with the next half up (round to even decides) and one float ulp either side.
    const float next = HalfToFloat(static_cast<std::uint16_t>(h + 1));
    if ((h & 0x7fff) == 0x7bff) continue;  // next is Inf: covered by the overflow values below
    if (std::signbit(f) != std::signbit(next) || std::isinf(next)) continue;
    const float tie = static_cast<float>((static_cast<double>(f) + next) / 2);
    in.push_back(tie);
    in.push_back(std::nextafter(tie, 0.0f));
    in.push_back(std::nextafter(tie, std::numeric_limits<float>::infinity() * (f < 0 ? -1 : 1)));
  }
  // Overflow threshold (65520 is the tie between 65504 and Inf), underflow below 2^-25,
  // float subnormals, Inf and NaNs with assorted payloads (signalling and quiet).
  for (float v : {65504.0f, 65519.996f, 65520.0f, 65536.0f, 1e30f, std::ldexp(1.0f, -25),
                  std::nextafter(std::ldexp(1.0f, -25), 1.0f), std::ldexp(1.0f, -26),
                  std::ldexp(3.0f, -26), std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::min(), std::numeric_limits<float>::infinity()}) {
    in.push_back(v);
    in.push_back(-v);
  }
  for (std::uint32_t bits : {0x7f800001u, 0x7fc00000u, 0x7fbfffffu, 0xffc01234u, 0x7f802000u}) {
    in.push_back(std::bit_cast<float>(bits));
  }
  // And pseudo-random bit patterns over the whole float range.
  std::uint64_t state = 42;
  for (int i = 0; i < (1 << 18); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    in.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(state >> 32)));
  }
  in.push_back(1.5f);  // odd total length: a scalar tail
  ExpectKernelsMatch<float, std::uint16_t>(
      in,
      [](const float* s, std::uint16_t* d, std::size_t n, Fp16Kernel k) {
        FloatToHalfN(s, d, n, k);
      },
      FloatToHalf, "FloatToHalfN");
}

TEST(TensorTest, CreateValidatesShapeAndSize) {
  EXPECT_FALSE(Tensor::Create(DataType::kFloat32, {2, -1}).ok());
  EXPECT_FALSE(Tensor::Create(DataType::kUnknown, {2}).ok());
  EXPECT_FALSE(Tensor::Create(DataType::kFloat32, {1 << 20, 1 << 20, 1 << 10}).ok());
  auto t = Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->byte_size(), 16u);
  EXPECT_EQ(t->data<float>()[3], 4.0f);
  EXPECT_EQ(t->data<std::int32_t>(), nullptr);  // dtype mismatch
  EXPECT_FALSE(Tensor::FromVector<float>({3}, {1, 2}).ok());
  EXPECT_FALSE(Tensor::FromBytes(DataType::kInt64, {2}, std::string(15, '\0')).ok());
}

TEST(TensorTest, ConversionsAndChecksum) {
  auto f = Tensor::FromVector<float>({3}, {0.5f, -1.25f, 3.0f});
  ASSERT_TRUE(f.ok());
  auto h = f->ToFloat16();
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->dtype(), DataType::kFloat16);
  auto back = h->ToFloat32();
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->BitwiseEquals(*f));
  EXPECT_NE(f->Checksum(), h->Checksum());
  auto f2 = *f;
  EXPECT_EQ(f->Checksum(), f2.Checksum());
  f2.data<float>()[0] = 0.75f;
  EXPECT_NE(f->Checksum(), f2.Checksum());
  EXPECT_FALSE(Tensor::FromVector<std::int64_t>({1}, {1})->ToFloat16().ok());
}

TEST(TensorTest, NpyRoundTripAndErrors) {
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64, DataType::kBool,
                      DataType::kUint8, DataType::kFloat64}) {
    auto t = RandomTensor(dt, {2, 3}, 7);
    ASSERT_TRUE(t.ok());
    auto back = DecodeNpy(EncodeNpy(*t), "mem");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(back->BitwiseEquals(*t)) << DataTypeName(dt);
  }
  auto scalar = RandomTensor(DataType::kFloat32, {}, 1);
  ASSERT_TRUE(DecodeNpy(EncodeNpy(*scalar), "s").ok());
  std::string npy = EncodeNpy(*RandomTensor(DataType::kFloat32, {4}, 1));
  auto truncated = DecodeNpy(npy.substr(0, npy.size() - 3), "t.npy");
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("t.npy"), std::string::npos);
  EXPECT_FALSE(DecodeNpy("garbage", "g.npy").ok());
  std::string be = npy;
  be.replace(be.find("<f4"), 3, ">f4");
  auto big = DecodeNpy(be, "be.npy");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("big-endian"), std::string::npos);
}

TEST(TensorTest, RandomTensorIsDeterministic) {
  auto a = RandomTensor(DataType::kFloat32, {16}, 3);
  auto b = RandomTensor(DataType::kFloat32, {16}, 3);
  auto c = RandomTensor(DataType::kFloat32, {16}, 4);
  EXPECT_TRUE(a->BitwiseEquals(*b));
  EXPECT_FALSE(a->BitwiseEquals(*c));
  for (float v : a->ToFloatVector()) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
}

// --- engine keys ------------------------------------------------------------------------------

TEST(EngineKeyTest, ChangesWithEveryInputAndOnlyThen) {
  const std::map<std::string, std::vector<std::int64_t>> shapes = {{"sample", {1, 4, 64, 64}}};
  auto base =
      MakeEngineKeyInputs("fp-a", {"NVIDIA H200", "9.0"}, "sha-a", "fp16", shapes, shapes, shapes);
  const std::string k = EngineKey(base);
  EXPECT_EQ(k.size(), 32u);
  EXPECT_EQ(k, EngineKey(MakeEngineKeyInputs("fp-a", {"NVIDIA H200", "9.0"}, "sha-a", "fp16",
                                             shapes, shapes, shapes)));
  auto vary = [&](auto mutate) {
    EngineKeyInputs in = base;
    mutate(in);
    return EngineKey(in);
  };
  EXPECT_NE(k, vary([](EngineKeyInputs& in) { in.matrix_fingerprint = "fp-b"; }));
  EXPECT_NE(k, vary([](EngineKeyInputs& in) { in.gpu.name = "NVIDIA L4"; }));
  EXPECT_NE(k, vary([](EngineKeyInputs& in) { in.gpu.compute_capability = "8.9"; }));
  EXPECT_NE(k, vary([](EngineKeyInputs& in) { in.model_sha256 = "sha-b"; }));
  EXPECT_NE(k, vary([](EngineKeyInputs& in) { in.precision = "int8"; }));
  EXPECT_NE(k, vary([](EngineKeyInputs& in) { in.profile_shapes["sample"][2] = {2, 4, 64, 64}; }));
  EXPECT_NE(k, vary([](EngineKeyInputs& in) { in.profile_shapes["timestep"] = {{1}, {1}, {1}}; }));
}

TEST(EngineKeyTest, ShapeListsParseAndFormat) {
  auto s = ParseShapeList("sample:1x4x64x64,encoder_hidden_states:1x77x768");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->at("sample"), (std::vector<std::int64_t>{1, 4, 64, 64}));
  EXPECT_EQ(FormatShapeList(*s), "encoder_hidden_states:1x77x768,sample:1x4x64x64");
  EXPECT_FALSE(ParseShapeList("sample").ok());
  EXPECT_FALSE(ParseShapeList("sample:1xx4").ok());
  EXPECT_FALSE(ParseShapeList("sample:-1x4").ok());
}

// --- INT8 gate ---------------------------------------------------------------------------------

TEST(Int8GateTest, AcceptsWithinToleranceRejectsBeyond) {
  auto ref = RandomTensor(DataType::kFloat32, {64}, 11);
  ASSERT_TRUE(ref.ok());
  std::vector<float> v = ref->ToFloatVector();
  std::vector<float> close = v, far = v;
  for (std::size_t i = 0; i < v.size(); ++i) close[i] += (i % 2 ? 1e-3f : -1e-3f);
  far[17] += 0.5f;
  auto close_t = Tensor::FromVector<float>({64}, close);
  auto far_t = Tensor::FromVector<float>({64}, far);
  Int8Gate gate;  // max_abs 0.05, rel rms 0.02
  EXPECT_TRUE(CheckInt8Gate({*ref}, {*close_t}, gate).ok());
  common::Status s = CheckInt8Gate({*ref}, {*far_t}, gate);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), common::StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("max abs error"), std::string::npos) << s.message();
  // fp16 candidates are compared after widening.
  auto close_h = close_t->ToFloat16();
  EXPECT_TRUE(CheckInt8Gate({*ref}, {*close_h}, gate).ok());
  // A tighter gate rejects what the default accepts.
  Int8Gate tight{1e-4, 1e-4};
  EXPECT_FALSE(CheckInt8Gate({*ref}, {*close_t}, tight).ok());
  // Shape and count mismatches are usage errors.
  EXPECT_EQ(CheckInt8Gate({*ref}, {}, gate).code(), common::StatusCode::kInvalidArg);
  auto other = RandomTensor(DataType::kFloat32, {8, 8}, 1);
  EXPECT_EQ(CheckInt8Gate({*ref}, {*other}, gate).code(), common::StatusCode::kInvalidArg);
}

// --- placement evaluation (pure) ---------------------------------------------------------------

TEST(PlacementEvalTest, RulesAndShapeOpExemption) {
  PlacementPolicy pol;
  pol.gpu_required_ops = {"MatMul", "Softmax"};
  pol.max_cpu_node_share = 0.25;
  pol.max_memcpy_nodes = 1;
  std::vector<NodePlacement> gpu_ok = {{"mm", "MatMul", "CUDAExecutionProvider"},
                                       {"sm", "Softmax", "CUDAExecutionProvider"},
                                       {"shape", "Shape", "CPUExecutionProvider"},
                                       {"gather", "Gather", "CPUExecutionProvider"},
                                       {"cp", "MemcpyToHost", "CUDAExecutionProvider"}};
  auto r = EvaluatePlacement(gpu_ok, pol, true);
  EXPECT_TRUE(r.ok) << (r.violations.empty() ? "" : r.violations[0]);
  EXPECT_EQ(r.cpu_nodes, 2);
  EXPECT_EQ(r.cpu_shape_nodes, 2);
  EXPECT_EQ(r.memcpy_nodes, 1);
  EXPECT_EQ(r.nodes_per_provider["CUDAExecutionProvider"], 3);

  auto bad = gpu_ok;
  bad[1].provider = "CPUExecutionProvider";
  bad.push_back({"cp2", "MemcpyFromHost", "CUDAExecutionProvider"});
  r = EvaluatePlacement(bad, pol, true);
  EXPECT_FALSE(r.ok);
  ASSERT_EQ(r.cpu_compute_ops.size(), 1u);
  EXPECT_EQ(r.cpu_compute_ops[0], "sm (Softmax)");
  EXPECT_EQ(r.violations.size(), 2u);  // compute op on CPU, 2 memcpy > 1
  // Not enforced: same report, but ok.
  auto advisory = EvaluatePlacement(bad, pol, false);
  EXPECT_TRUE(advisory.ok);
  EXPECT_EQ(advisory.violations.size(), 2u);
}

TEST(PlacementEvalTest, VerboseLogParserAndMemcpyWarnings) {
  const std::vector<std::string> log = {
      "Node placements",
      " Node(s) placed on [CUDAExecutionProvider]. Number of nodes: 2\n  MatMul (mm1)\n"
      "  Softmax (softmax)",
      " Node(s) placed on [CPUExecutionProvider]. Number of nodes: 1\n  Shape (shape)",
      "Something else entirely",
      "3 Memcpy nodes are added to the graph main_graph for CUDAExecutionProvider. It might "
      "have negative impact on performance"};
  auto nodes = ParseNodePlacementLog(log);
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0].op_type, "MatMul");
  EXPECT_EQ(nodes[0].name, "mm1");
  EXPECT_EQ(nodes[0].provider, "CUDAExecutionProvider");
  EXPECT_EQ(nodes[2].provider, "CPUExecutionProvider");
  EXPECT_EQ(CountMemcpyFromLog(log), 3);
  auto all = ParseNodePlacementLog(
      {"Node placements", " All nodes placed on [CPUExecutionProvider]. Number of nodes: 4"});
  EXPECT_EQ(all.size(), 4u);
}

}  // namespace
}  // namespace tg::runtime
