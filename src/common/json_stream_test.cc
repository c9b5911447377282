// WriteJsonStreamed must write exactly what WriteJson writes for the filled-in document: the same
// bytes, compact and indented, with the array at the top, nested in objects and in arrays, empty,
// and with invalid UTF-8 in the head, in the elements or in keys (the notice first, counting
// both).
#include "common/json_stream.h"

#include <gtest/gtest.h>

#include <random>

namespace tg::common {
namespace {

std::string Streamed(const Json& head, const JsonPath& path, const std::vector<Json>& elems,
                     int indent, JsonNotice notice = JsonNotice::kInline) {
  std::string out;
  WriteJsonStreamed(
      StringSink(&out), head, path, elems.size(), [&](std::size_t i) { return elems[i]; }, indent,
      notice);
  return out;
}

// `head` with the array at `path` filled in, the whole-document way.
std::string Whole(Json head, const JsonPath& path, const std::vector<Json>& elems, int indent,
                  JsonNotice notice = JsonNotice::kInline) {
  Json* v = &head;
  for (const std::string& step : path) {
    v = v->is_array() ? &(*v)[std::stoul(step)] : &(*v)[step];
  }
  *v = Json(elems);
  return WriteJson(head, indent, notice);
}

Json Finding(int i, const std::string& text) {
  Json f = {{"rule", "k8s.image-digest"}, {"line", i}, {"message", "m " + text}};
  if (i % 2) f["fix"] = {{"nested", Json::array({1, "two", Json::object()})}, {"empty", {}}};
  if (i % 3 == 0) f["bytes"] = 1.5;
  return f;
}

void ExpectSame(const Json& head, const JsonPath& path, const std::vector<Json>& elems) {
  for (int indent : {-1, 0, 2, 4}) {
    for (JsonNotice n : {JsonNotice::kInline, JsonNotice::kNone}) {
      EXPECT_EQ(Streamed(head, path, elems, indent, n), Whole(head, path, elems, indent, n))
          << "indent " << indent << "\n"
          << Whole(head, path, elems, indent, n);
    }
  }
}

TEST(JsonStream, TopLevelMemberIsTheWholeDocument) {
  Json head = {{"documents", 3},
               {"audited", Json::array({{{"file", "a"}}})},
               {"findings", {}},
               {"verdict", "fail"},
               {"warnings", Json::array()}};
  std::vector<Json> elems;
  for (int i = 0; i < 5; ++i) elems.push_back(Finding(i, "x"));
  ExpectSame(head, {"findings"}, elems);
  ExpectSame(head, {"findings"}, {});  // empty: "[]"
  ExpectSame(head, {"findings"}, {Finding(1, "only")});
}

TEST(JsonStream, NestedInObjectsAndArraysLikeSarifResults) {
  Json run = {{"tool", {{"driver", {{"name", "truegreen"}, {"rules", Json::array()}}}}},
              {"results", Json::array()},
              {"automationDetails", {{"id", "audit k8s/"}}}};
  Json head = {{"$schema", "s"}, {"version", "2.1.0"}, {"runs", Json::array({run, run})}};
  std::vector<Json> elems;
  for (int i = 0; i < 4; ++i) elems.push_back(Finding(i, "y"));
  ExpectSame(head, {"runs", "0", "results"}, elems);
  ExpectSame(head, {"runs", "1", "results"}, elems);
  ExpectSame(head, {"runs", "0", "results"}, {});
}

TEST(JsonStream, TopLevelArray) {
  std::vector<Json> elems = {Finding(1, "a"), Finding(2, "b")};
  ExpectSame(Json::array(), {}, elems);
}

TEST(JsonStream, InvalidUtf8InHeadElementsAndKeysGivesTheNoticeFirst) {
  const std::string bad = "p\xff\xfe q \xc3";
  Json head = {{"documents", 1}, {"matrix", bad}, {"findings", {}}};
  head["k" + bad] = "v";
  std::vector<Json> elems = {Finding(1, bad), Finding(2, "ok"), Finding(3, bad + bad)};
  elems[1]["key\xff"] = 1;
  ExpectSame(head, {"findings"}, elems);
  const std::string out = Streamed(head, {"findings"}, elems, 2);
  EXPECT_EQ(out.rfind("{\n  \"invalid_utf8\": {", 0), 0u) << out;
  EXPECT_NE(out.find("\"strings_replaced\": 5"), std::string::npos) << out;
  EXPECT_TRUE(IsValidUtf8(out));
  // Only the elements hold invalid bytes: still counted, still first.
  Json clean = {{"documents", 1}, {"findings", {}}};
  ExpectSame(clean, {"findings"}, {Finding(1, bad)});
  // A head that already has the member gets no second one (WriteJson's rule).
  Json own = {{"invalid_utf8", "mine"}, {"findings", {}}};
  ExpectSame(own, {"findings"}, {Finding(1, bad)});
}

TEST(JsonStream, RandomDocumentsMatchTheOneWriter) {
  std::mt19937 rng(19);
  auto text = [&] {
    std::string s;
    for (int n = 1 + rng() % 12; n > 0; --n) {
      s.push_back(static_cast<char>(rng() % 3 == 0 ? 0x80 + rng() % 128 : 0x20 + rng() % 95));
    }
    return s;
  };
  for (int round = 0; round < 50; ++round) {
    Json head = Json::object();
    for (int m = rng() % 5; m > 0; --m) head[text()] = text();
    head["findings"] = Json::array();
    std::vector<Json> elems;
    for (int i = rng() % 6; i > 0; --i)
      elems.push_back(Finding(static_cast<int>(rng() % 9), text()));
    ExpectSame(head, {"findings"}, elems);
  }
}

TEST(JsonStream, BadPathWritesTheHeadAsItIs) {
  Json head = {{"a", 1}};
  std::string out;
  WriteJsonStreamed(
      StringSink(&out), head, {"missing"}, 2, [](std::size_t) { return Json(1); }, 2);
  EXPECT_EQ(out, WriteJson(head, 2));
}

}  // namespace
}  // namespace tg::common
