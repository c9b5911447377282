#include "bench/bench_file.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tg::bench {
namespace {

TEST(BenchFileTest, EveryKeyIsRead) {
  auto f = ParseBenchFile(
      "slo: [\"p95<8s\", \"errors<1%\"]\napi: kserve\nmodel: mm\n"
      "body: {inputs: [{name: x, datatype: FP32, shape: [1, 2], data: [1, 2.5]}]}\n",
      "bench.yaml");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->slos, (std::vector<std::string>{"p95<8s", "errors<1%"}));
  EXPECT_EQ(f->api, "kserve");
  EXPECT_EQ(f->model, "mm");
  ASSERT_TRUE(f->body.has_value());
  const auto body = nlohmann::json::parse(*f->body);
  EXPECT_EQ(body["inputs"][0]["shape"], nlohmann::json::parse("[1,2]"));
  EXPECT_EQ(body["inputs"][0]["data"][1], 2.5);
  EXPECT_EQ(body["inputs"][0]["name"], "x");
}

TEST(BenchFileTest, AbsentKeysStayUnsetAndAnEmptyFileSetsNothing) {
  auto f = ParseBenchFile("slo: [\"p95<8s\"]\n", "b.yaml");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_FALSE(f->api || f->model || f->body);
  auto e = ParseBenchFile("", "b.yaml");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE(e->slos.empty());
}

TEST(BenchFileTest, BadInputNamesTheFileLineAndField) {
  struct Case {
    const char* text;
    const char* want;
  };
  for (const Case& c : {
           Case{"slo: [\"p95<8s\"]\napai: kserve\n", "b.yaml:2:1: unknown field 'apai'"},
           Case{"api: grpc\n", "field 'api'"},
           Case{"api: kserve\nmodel: \"\"\n", "field 'model'"},
           Case{"slo: [\"p95<<8s\"]\n", "field slo"},
           Case{"slo: [[1]]\n", "field slo[0]"},
           Case{"slo: p95<8s\n", "slo"},
           Case{"body: \"{}\"\n", "body"},
           Case{"- a\n- b\n", "b.yaml"},
           // Numbers a JSON body cannot hold: refused before any request, naming line and field.
           Case{"body:\n  data: [1, 1e999]\n",
                "b.yaml:2:13: field body.data[1]: found 1e999; "
                "required a finite number"},
           Case{"body: {x: .nan}\n", "field body.x: found .nan"},
           Case{"body: {x: -.Inf}\n", "field body.x: found -.Inf"},
           Case{"body: {x: {y: nan}}\n", "field body.x.y: found nan"},
       }) {
    auto f = ParseBenchFile(c.text, "b.yaml");
    ASSERT_FALSE(f.ok()) << c.text;
    EXPECT_EQ(f.status().code(), common::StatusCode::kInvalidArg) << c.text;
    EXPECT_NE(f.status().message().find(c.want), std::string::npos)
        << c.text << " -> " << f.status().message();
  }
}

TEST(BenchFileTest, AQuotedNonFiniteWordIsAString) {
  auto f = ParseBenchFile("body: {x: \"1e999\", y: \".nan\", z: 1e300}\n", "b.yaml");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const auto body = nlohmann::json::parse(*f->body);
  EXPECT_EQ(body["x"], "1e999");
  EXPECT_EQ(body["y"], ".nan");
  EXPECT_EQ(body["z"], 1e300);
}

}  // namespace
}  // namespace tg::bench
