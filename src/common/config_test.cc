#include "common/config.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstddef>
#include <string>

namespace tg::common {
namespace {

TEST(ConfigTest, JsonSyntaxErrorNamesSourceLineAndColumn) {
  auto j = ParseJson("{\n  \"a\": 1,\n  \"b\": ]\n}", "snap.json");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kInvalidArg);
  EXPECT_NE(j.status().message().find("snap.json:3:"), std::string::npos) << j.status().message();
}

TEST(ConfigTest, JsonNumberOutOfRangeIsAnErrorNotACrash) {
  // Regression from the snapshot fuzzer: nlohmann throws out_of_range, not parse_error, here.
  auto j = ParseJson("1111e11111111111111111111111", "fuzz.json");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kInvalidArg);
  EXPECT_NE(j.status().message().find("fuzz.json"), std::string::npos);
}

TEST(ConfigTest, JsonDuplicateKeyAndDepthAreRefusedWithAPosition) {
  auto dup = ParseJson("[{}, {\"a\": 1,\n \"a\": 2}]", "d.json");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("d.json:2:"), std::string::npos) << dup.status().message();
  EXPECT_NE(dup.status().message().find("duplicate key 'a'"), std::string::npos);
  auto deep = ParseJson(std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']'),
                        "deep.json");
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nesting deeper than"), std::string::npos);
  // The same key in two sibling objects, and nesting just at the limit, are fine.
  EXPECT_TRUE(ParseJson("[{\"a\": 1}, {\"a\": {\"a\": [1, 2.5, \"x\", null, true]}}]", "ok").ok());
  auto at_limit = ParseJson(std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']'), "l");
  EXPECT_TRUE(at_limit.ok()) << at_limit.status().message();
}

TEST(ConfigTest, JsonParseBuildsTheSameDocumentAsNlohmann) {
  const std::string text =
      R"({"b": [1, -2, 3.5e3, "s\u00e9", {"x": null}], "a": {"t": true, "f": false}, "u": 18446744073709551615})";
  auto j = ParseJson(text, "same.json");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ(*j, Json::parse(text));
}

// Heap allocations this thread makes while `t_counting` is set: the measure of the linear-parse
// test below. Only operator new(size_t) is replaced, and it forwards to the one it replaces
// (RTLD_NEXT: libstdc++'s, or ASan's in the sanitizer build), so every delete still pairs with the
// real new and ASan keeps checking the pairing. std::allocator, and with it every nlohmann value
// and standard container, allocates through this function.
thread_local bool t_counting = false;
thread_local std::size_t t_allocations = 0;
thread_local std::size_t t_allocated_bytes = 0;

struct Allocations {
  std::size_t count = 0;
  std::size_t bytes = 0;
};

// What ParseJson allocates for "[{},{},...]" with n elements (the document's own text aside; its
// destruction is not counted).
Allocations ParseAllocations(int n) {
  std::string text = "[";
  for (int i = 0; i < n; ++i) text += i ? ",{}" : "{}";
  text += "]";
  t_allocations = t_allocated_bytes = 0;
  t_counting = true;
  auto j = ParseJson(text, "big.json");
  t_counting = false;
  const Allocations a{t_allocations, t_allocated_bytes};
  EXPECT_TRUE(j.ok() && j->size() == static_cast<std::size_t>(n)) << n;
  return a;
}

// Whether f(10 x) / f(x) is what linear work gives: 10, within `slack` either way.
bool TenfoldIsLinear(double small, double large, double slack) {
  const double ratio = large / small;
  return ratio >= 10 / slack && ratio <= 10 * slack;
}

// Parsing is linear in the number of elements, checked on a count instead of a clock (a timed
// ratio fails on a loaded machine): the heap allocations and allocated bytes of parsing 10k,
// 100k and 1M empty objects must grow tenfold per step, as linear work does. Quadratic work (an
// array copied or re-allocated per element) gives a hundredfold; the last lines show the check
// catches that. A scan that neither allocates nor copies (nlohmann's callback parser re-walks
// the enclosing array after each object) shows only in time: benchmarks/json_parse_bench.cc
// measures that and fits its complexity (docs/PERFORMANCE.md).
TEST(ConfigTest, JsonArrayOfObjectsParsesInLinearWork) {
  const Allocations a10k = ParseAllocations(10'000), a100k = ParseAllocations(100'000),
                    a1m = ParseAllocations(1'000'000);
  // Each object is a map on the heap, so the counter must see at least one allocation each.
  ASSERT_GE(a10k.count, 10'000u) << "the allocation counter does not see the parse";
  EXPECT_TRUE(TenfoldIsLinear(a10k.count, a100k.count, 1.1)) << a10k.count << " " << a100k.count;
  EXPECT_TRUE(TenfoldIsLinear(a100k.count, a1m.count, 1.1)) << a100k.count << " " << a1m.count;
  // The array's storage doubles as it grows, so its share of the bytes steps by powers of two.
  EXPECT_TRUE(TenfoldIsLinear(a10k.bytes, a100k.bytes, 1.5)) << a10k.bytes << " " << a100k.bytes;
  EXPECT_TRUE(TenfoldIsLinear(a100k.bytes, a1m.bytes, 1.5)) << a100k.bytes << " " << a1m.bytes;
  // The check itself: building an array by copying it once per element is caught.
  auto copying_build = [](int n) {
    t_allocations = 0;
    t_counting = true;
    Json built = Json::array();
    for (int i = 0; i < n; ++i) {
      Json next = built;
      next.push_back(Json::object());
      built = std::move(next);
    }
    t_counting = false;
    return static_cast<double>(t_allocations);
  };
  EXPECT_FALSE(TenfoldIsLinear(copying_build(100), copying_build(1000), 1.5));
}

TEST(ConfigTest, YamlMapRejectsUnknownFieldsAndWrongTypes) {
  auto node = ParseYaml("cuda:\n  runtime: [1, 2]\nextra: 1\n", "m.yaml");
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  auto root = YamlMap::From(*node, "m.yaml", "");
  ASSERT_TRUE(root.ok());
  auto cuda = root->GetMap("cuda", true);
  ASSERT_TRUE(cuda.ok());
  std::string runtime;
  Status s = (*cuda)->Get("runtime", &runtime, true);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArg);
  EXPECT_NE(s.message().find("m.yaml:2:"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("cuda.runtime"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("a sequence"), std::string::npos) << s.message();
  Status fin = root->Finish();
  EXPECT_NE(fin.message().find("unknown field 'extra'"), std::string::npos) << fin.message();
  EXPECT_NE(fin.message().find("m.yaml:3:"), std::string::npos) << fin.message();
}

}  // namespace
}  // namespace tg::common

void* operator new(std::size_t size) {
  using New = void* (*)(std::size_t);
  static const New next = reinterpret_cast<New>(dlsym(RTLD_NEXT, "_Znwm"));
  if (tg::common::t_counting) {
    ++tg::common::t_allocations;
    tg::common::t_allocated_bytes += size;
  }
  return next(size);
}
