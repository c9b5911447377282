#include "policy/snapshot_diff.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"

namespace tg::policy {
namespace {

using common::Json;

// Entries point at the values in the two documents; nothing is copied, so a diff of whole
// devices costs a path per difference, not a second copy of each device.
TEST(SnapshotDiff, EntriesPointIntoTheComparedDocuments) {
  const Json a = Json::parse(R"({"x": 1, "gone": {"big": [1, 2, 3]}, "l": [{"name": "p"}]})");
  const Json b = Json::parse(R"({"x": 2, "new": "v", "l": [{"name": "p"}, {"name": "q"}]})");
  const std::vector<DiffEntry> d = DiffJson(a, b, {});
  ASSERT_EQ(d.size(), 4u);  // in key order: gone, l, x; then what only b has
  EXPECT_EQ(d[0].path, "gone");
  EXPECT_EQ(d[0].before, &a["gone"]);
  EXPECT_EQ(d[0].after, nullptr);
  EXPECT_EQ(d[1].path, "l[q]");
  EXPECT_EQ(d[1].before, nullptr);
  EXPECT_EQ(d[1].after, &b["l"][1]);
  EXPECT_EQ(d[2].path, "x");
  EXPECT_EQ(d[2].before, &a["x"]);
  EXPECT_EQ(d[2].after, &b["x"]);
  EXPECT_EQ(d[3].path, "new");
  EXPECT_EQ(d[3].after, &b["new"]);
  EXPECT_EQ(DiffEntryToJson(d[0]),
            Json({{"kind", "removed"}, {"path", "gone"}, {"before", a["gone"]}}));
  // The text is its lines, in order.
  std::string lines;
  for (const DiffEntry& e : d) lines += DiffLine(e);
  EXPECT_EQ(DiffToText(d), lines);
  EXPECT_EQ(DiffLine(d[2]), "~ x: 1 -> 2\n");
  EXPECT_EQ(DiffLine(d[1]), "+ l[q]: {\"name\":\"q\"}\n");
}

// A SnapshotDiff holds the documents its entries point into, and stays valid when moved.
TEST(SnapshotDiff, FileDiffOwnsItsDocumentsAcrossAMove) {
  testing::TempDir dir;
  const std::string a = dir / "a.json", b = dir / "b.json";
  testing::WriteFile(a, R"({"schema_version": "truegreen.snapshot/v1", "env": {"A": "x"}})");
  testing::WriteFile(b, R"({"schema_version": "truegreen.snapshot/v1", "env": {"A": "y"}})");
  auto r = DiffSnapshotFiles(a, b, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  SnapshotDiff moved = std::move(r).value();
  ASSERT_EQ(moved.entries.size(), 1u);
  EXPECT_EQ(moved.entries[0].path, "env.A");
  EXPECT_EQ(moved.entries[0].before, &(*moved.a)["env"]["A"]);
  EXPECT_EQ(*moved.entries[0].after, "y");
}

}  // namespace
}  // namespace tg::policy
