// Admission by memory of KServe requests in `truegreen serve` (dev policy) under a 1 GiB budget,
// on a generic model built here whose activations grow with the square of its symbolic input dim:
// x [N, 1] -> Transpose -> [1, N]; MatMul(x, xt) -> [N, N]; ReduceSum -> y [1, 1] (= (sum x)^2).
// Its estimate at N is 4·N² + 8·N bytes (x, xt and the N x N product alive at once), so N = 20000
// (1.6 GB) cannot fit and is refused before it queues (400 in the KServe shape, naming the model,
// the need, the budget and what is held) while the server stays ready; N = 100 is served, and
// /v1/capabilities and /metrics show its estimate.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "runtime/onnx_builder.h"
#include "tests/server_harness.h"

namespace tg::testing {
namespace {

using Json = nlohmann::json;
namespace ob = ::tg::runtime::onnx;

std::string OuterProductModel() {
  ob::Graph g;
  g.name = "outer";
  g.nodes.push_back({"Transpose", {"x"}, {"xt"}, {ob::IntsAttr("perm", {1, 0})}});
  g.nodes.push_back({"MatMul", {"x", "xt"}, {"o"}, {}});
  g.nodes.push_back({"ReduceSum", {"o"}, {"y"}, {ob::IntAttr("keepdims", 1)}});
  g.inputs.push_back({"x", ob::ElemType::kFloat, {-1, 1}});
  g.outputs.push_back({"y", ob::ElemType::kFloat, {1, 1}});
  return ob::SerializeModel(g);
}

class ServerKserveMemoryTest : public SharedServerTest<ServerKserveMemoryTest> {
 public:
  static void MakeRepo(const std::string& dir) {
    std::filesystem::create_directories(dir + "/outer");
    WriteFile(dir + "/outer/model.onnx", OuterProductModel());
  }
  static std::vector<std::string> ServeArgs(const std::string& dir) {
    return {"--models", dir, "--memory-budget", "1GiB", "--deadline-ms", "600000"};
  }

 protected:
  // N rows of ones.
  static HttpResult Infer(int n) {
    std::string data = "[";
    for (int i = 0; i < n; ++i) data += i ? ",1" : "1";
    data += "]";
    return Request(port_, "POST", "/v2/models/outer/infer",
                   R"({"inputs":[{"name":"x","datatype":"FP32","shape":[)" + std::to_string(n) +
                       R"(,1],"data":)" + data + "}]}");
  }
  static double Metric(const std::string& series) {
    const std::string body = Request(port_, "GET", "/metrics").body;
    const auto p = body.find("\n" + series + " ");
    return p == std::string::npos ? -1 : std::stod(body.substr(p + series.size() + 2));
  }
};

TEST_F(ServerKserveMemoryTest, ARequestThatCannotFitIsRefusedBeforeItQueues) {
  const HttpResult r = Infer(20000);
  ASSERT_EQ(r.status, 400) << r.body.substr(0, 400);
  const Json body = Json::parse(r.body);
  ASSERT_TRUE(body["error"].is_string()) << r.body;  // the KServe (OIP) error shape
  const std::string msg = body["error"].get<std::string>();
  for (const char* part : {"model 'outer': this request needs an estimated 1.49 GiB", "x[20000,1]",
                           "the memory budget is 1.00 GiB (--memory-budget)",
                           "held by the loaded models", "one run may use at most"}) {
    EXPECT_NE(msg.find(part), std::string::npos) << part << " in " << msg;
  }
  EXPECT_GE(Metric("truegreen_memory_refused_total{model=\"outer\"}"), 1);
  EXPECT_EQ(Metric("truegreen_memory_in_use_bytes"), 0);
  EXPECT_EQ(Request(port_, "GET", "/readyz").status, 200);
}

TEST_F(ServerKserveMemoryTest, ARequestThatFitsIsServedAndItsEstimateShown) {
  const HttpResult r = Infer(100);
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 400);
  const Json out = Json::parse(r.body)["outputs"][0];
  EXPECT_EQ(out["shape"], Json::parse("[1,1]"));
  EXPECT_FLOAT_EQ(out["data"][0].get<float>(), 10000.f);  // (sum of 100 ones)^2
  constexpr std::int64_t kEstimate = 4 * 100 * 100 + 8 * 100;
  const Json caps = Json::parse(Request(port_, "GET", "/v1/capabilities").body);
  const Json& m = caps["memory"]["onnx_models"]["outer"];
  EXPECT_EQ(m["last_estimate_bytes"], kEstimate) << caps["memory"].dump();
  EXPECT_GE(m["max_estimate_bytes"].get<std::int64_t>(), kEstimate);
  EXPECT_TRUE(m["last_estimate_complete"].get<bool>()) << m.dump();
  EXPECT_EQ(Metric("truegreen_memory_onnx_last_estimate_bytes{model=\"outer\"}"),
            static_cast<double>(kEstimate));
  EXPECT_EQ(Metric("truegreen_memory_in_use_bytes"), 0);
}

}  // namespace
}  // namespace tg::testing
