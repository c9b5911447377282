// Suppression files: the event reader of plain files gives exactly the entries the tree reader
// gives, and every other file still gets the tree reader's messages.
#include "audit/report/report_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tg::audit {
namespace {

using ::testing::HasSubstr;

constexpr const char* kPlain =
    "# kept for the migration\n"
    "suppressions:\n"
    "  - rule: k8s.image-digest\n"
    "    reason: pinned by tag until the registry mirror lands\n"
    "    expires: 2031-02-28\n"
    "  - {rule: dockerfile.user-root, reason: \"a quoted: reason\", path: deploy/}\n"
    "  - rule: k8s.run-as-non-root\n"
    "    reason: |\n"
    "      a block reason\n"
    "    expires: ~\n";

void ExpectSame(const Suppressions& a, const Suppressions& b) {
  ASSERT_EQ(a.entries.size(), b.entries.size());
  EXPECT_EQ(a.source, b.source);
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    EXPECT_EQ(a.entries[i].rule, b.entries[i].rule) << i;
    EXPECT_EQ(a.entries[i].reason, b.entries[i].reason) << i;
    EXPECT_EQ(a.entries[i].expires, b.entries[i].expires) << i;
    EXPECT_EQ(a.entries[i].path, b.entries[i].path) << i;
    EXPECT_EQ(a.entries[i].line, b.entries[i].line) << i;
  }
}

TEST(ParseSuppressions, PlainFileReadFromEvents) {
  auto s = ParseSuppressions(kPlain, "s.yaml");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->entries.size(), 3u);
  EXPECT_EQ(s->source, "s.yaml");
  EXPECT_EQ(s->entries[0].rule, "k8s.image-digest");
  EXPECT_EQ(s->entries[0].expires, "2031-02-28");
  EXPECT_EQ(s->entries[0].line, 3);
  EXPECT_EQ(s->entries[1].reason, "a quoted: reason");
  EXPECT_EQ(s->entries[1].path, "deploy/");
  EXPECT_EQ(s->entries[1].line, 6);
  EXPECT_EQ(s->entries[2].reason, "a block reason\n");
  EXPECT_EQ(s->entries[2].expires, "");
  EXPECT_EQ(s->entries[2].line, 7);
}

// An anchor is outside the plain shape, so the second text goes through the tree reader: both
// readers must agree on every field and line.
TEST(ParseSuppressions, EventAndTreeReadersAgree) {
  std::string anchored = kPlain;
  anchored.replace(anchored.find("reason: pinned"), 8, "reason: &a ");
  auto plain = ParseSuppressions(kPlain, "s.yaml");
  auto tree = ParseSuppressions(anchored, "s.yaml");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  ExpectSame(*plain, *tree);
}

TEST(ParseSuppressions, FaultsKeepTheTreeReadersMessages) {
  struct Bad {
    const char* text;
    const char* message;
  };
  const Bad cases[] = {
      {"suppressions:\n  - rule: a\n    reason: r\n    expire: 2030-01-01\n",
       "s.yaml:4:5: unknown field 'suppressions[].expire' (allowed here: expires, path, reason, "
       "rule)"},
      {"suppressions:\n  - rule: a\n",
       "s.yaml:2:5: missing required field 'suppressions[].reason'"},
      {"suppressions:\n  - rule: a\n    reason: ''\n", "field 'suppressions[].reason'"},
      {"suppressions:\n  - rule: a\n    reason: r\n    expires: 2031-02-29\n",
       "s.yaml:4:14: field 'suppressions[].expires': expected a real calendar date"},
      {"suppressions:\n  - just text\n", "s.yaml:2:5: field 'suppressions[]': expected a mapping"},
      {"suppressions: {}\n", "field 'suppressions': expected a list"},
      {"suppressions: []\nextra: 1\n", "s.yaml:2:1: unknown field 'extra'"},
      {"other: []\n", "missing required field 'suppressions'"},
      {"suppressions:\n  - rule: a\n    rule: b\n    reason: r\n", "duplicate key 'rule'"},
      {"", "document root: expected a mapping, found an empty document"},
  };
  for (const Bad& b : cases) {
    auto s = ParseSuppressions(b.text, "s.yaml");
    ASSERT_FALSE(s.ok()) << b.text;
    EXPECT_THAT(s.status().message(), HasSubstr(b.message)) << b.text;
  }
  EXPECT_TRUE(ParseSuppressions("suppressions: []\n", "s.yaml").ok());
}

// One rule and path twice is refused by both readers (the anchor sends the second text through
// the tree reader); the same rule under two paths is two scopes and stays.
TEST(ParseSuppressions, OneRuleAndPathTwiceIsRefused) {
  const std::string twice =
      "suppressions:\n  - {rule: k8s.image-digest, reason: r}\n"
      "  - {rule: k8s.image-digest, reason: again}\n";
  std::string anchored = twice;
  anchored.replace(anchored.find("reason: r}"), 9, "reason: &a r");
  for (const std::string& text : {twice, anchored}) {
    auto s = ParseSuppressions(text, "s.yaml");
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_THAT(s.status().message(),
                HasSubstr("s.yaml:3: field 'rule': found 'k8s.image-digest' again (first at line "
                          "2); required at most one entry per rule and path"))
        << text;
  }
  auto paths = ParseSuppressions(
      "suppressions:\n  - {rule: k8s.image-digest, reason: r, path: dev/}\n"
      "  - {rule: k8s.image-digest, reason: r, path: test/}\n"
      "  - {rule: k8s.image-digest, reason: r, path: dev/}\n",
      "s.yaml");
  ASSERT_FALSE(paths.ok());
  EXPECT_THAT(paths.status().message(), HasSubstr("s.yaml:4: field 'rule': found "
                                                  "'k8s.image-digest' with path 'dev/' again"));
  EXPECT_TRUE(ParseSuppressions("suppressions:\n  - {rule: k8s.image-digest, reason: r, path: a/}\n"
                                "  - {rule: k8s.image-digest, reason: r, path: b/}\n",
                                "s.yaml")
                  .ok());
}

// Every fault of an entry, read from the events, gets exactly the tree reader's message: the
// anchor on the root key sends the second text through the tree reader (its columns on line 1
// shift, no entry's do).
TEST(ParseSuppressions, EntryFaultsFromEventsMatchTheTreeReader) {
  const std::vector<std::string> entries = {
      "  - rule: a\n    reason: r\n    expire: 2030-01-01\n",
      "  - rule: a\n",
      "  - reason: r\n",
      "  - rule: ~\n    reason: r\n",
      "  - rule: a\n    reason: ''\n",
      "  - rule: ''\n    reason: r\n",
      "  - rule: a\n    reason: r\n    expires: 2031-02-29\n",
      "  - rule: a\n    reason: r\n    expires: soon\n",
      "  - rule: [a, b]\n    reason: r\n",
      "  - rule: a\n    reason: {x: y}\n",
      "  - rule: a\n    reason: r\n    path: [p]\n",
      "  - rule: a\n    reason: r\n    expires: {d: 1}\n",
      "  - just text\n",
      "  - ~\n",
      "  - [a, b]\n",
      "  - {rule: a, reason: r}\n  - {rule: b, reason: r, extra: 1, more: 2}\n",
      "  - {rule: a, reason: r}\n  - 7\n  - {rule: ''}\n",
      "  - {rule: a, reason: r, other: x, rule2: y}\n",
      "  - rule: a\n    other: [deep, {x: [1]}]\n    reason: r\n",
      std::string("  - rule: ") + std::string(100, 'x') +
          "\n    reason: r\n    expires: " + std::string(90, 'y') + "\n",
  };
  for (const std::string& e : entries) {
    const std::string text = "suppressions:\n" + e;
    auto events = ParseSuppressions(text, "s.yaml");
    auto tree = ParseSuppressions("&r " + text, "s.yaml");
    ASSERT_FALSE(tree.ok()) << text;
    ASSERT_FALSE(events.ok()) << text;
    EXPECT_EQ(events.status().code(), tree.status().code()) << text;
    EXPECT_EQ(events.status().message(), tree.status().message()) << text;
  }
}

}  // namespace
}  // namespace tg::audit
