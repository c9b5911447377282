#include "common/yaml_stream.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/config.h"

namespace tg::common {
namespace {

// Same shape, scalars, tags and marks (line and column), recursively.
void ExpectSameNode(const YAML::Node& a, const YAML::Node& b, const std::string& where) {
  ASSERT_EQ(a.Type(), b.Type()) << where;
  EXPECT_EQ(a.Mark().line, b.Mark().line) << where;
  EXPECT_EQ(a.Mark().column, b.Mark().column) << where;
  EXPECT_EQ(a.Tag(), b.Tag()) << where;
  if (a.IsScalar()) {
    EXPECT_EQ(a.Scalar(), b.Scalar()) << where;
    return;
  }
  if (!a.IsMap() && !a.IsSequence()) return;
  ASSERT_EQ(a.size(), b.size()) << where;
  auto ib = b.begin();
  for (auto ia = a.begin(); ia != a.end(); ++ia, ++ib) {
    if (a.IsMap()) {
      ExpectSameNode(ia->first, ib->first, where + " key");
      ExpectSameNode(ia->second, ib->second, where + "." + ia->first.Scalar());
    } else {
      ExpectSameNode(*ia, *ib, where + "[]");
    }
  }
}

// Every document of `text`, read in batches, equals the one LoadAll reads from the whole text.
void ExpectSameAsLoadAll(const std::string& text, std::size_t batch_bytes = 0) {
  auto all = ParseYamlDocuments(text, "m.yaml");
  ASSERT_TRUE(all.ok()) << all.status().message();
  std::vector<int> indices;
  Status s = ForEachYamlDocument(
      text, "m.yaml",
      [&](const YAML::Node& d, int index) {
        indices.push_back(index);
        if (index < 1 || index > static_cast<int>(all->size())) return Status::Internal("index");
        ExpectSameNode(d, (*all)[index - 1], "document " + std::to_string(index));
        return Status::Ok();
      },
      batch_bytes);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(indices.size(), all->size());
  for (std::size_t i = 0; i < indices.size(); ++i) EXPECT_EQ(indices[i], static_cast<int>(i + 1));
}

// A Deployment of about 400 bytes; `k` makes its names and values distinct.
std::string Deployment(int k) {
  const std::string n = std::to_string(k);
  return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-" + n +
         "\n  labels: {app: a" + n + "}\nspec:\n  template:\n    spec:\n      containers:\n" +
         "        - name: main\n          image: img:" + n +
         "\n          env:\n            - {name: A, value: \"" + n + "\"}\n";
}

// Documents of every shape that ends or starts a document: explicit and implicit ends, empty
// documents, comments between them, block scalars (kept trailing lines, an indented `---`), flow
// documents on the `---` line, CRLF line ends, anchors and tags (at most 2 documents an entry).
std::string MixedStream(unsigned seed, int entries) {
  std::mt19937 rng(seed);
  std::string s;
  for (int k = 0; k < entries; ++k) {
    switch (rng() % 9) {
      case 0:
        s += "---\n" + Deployment(k);
        break;
      case 1:
        s += "---\n" + Deployment(k) + "...\n";
        break;
      case 2:
        s += "---\n---\n# between\n";
        break;
      case 3:
        s += "--- |+\n  text " + std::to_string(k) + "\n  ---\n\n\n";
        break;
      case 4:
        s += "--- {kind: ConfigMap, metadata: {name: c" + std::to_string(k) + "}}\n";
        break;
      case 5:
        s += "---\r\nkind: Pod\r\nmetadata: {name: p}\r\n";
        break;
      case 6:
        s += "---\nkind: X\nbase: &b {a: 1}\nuse: *b\ntagged: !t " + std::to_string(k) + "\n";
        break;
      case 7:
        s += "--- >\n  folded\n  " + std::to_string(k) + "\n";
        break;
      default:
        s += "---\n# only a comment\n";
        break;
    }
  }
  return s;
}

TEST(YamlStreamTest, BatchesReadTheSameDocumentsWithTheSameMarksAsLoadAll) {
  for (unsigned seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    // Small batches cut the stream next to every shape; 0 is the production size.
    for (std::size_t batch : {1, 700, 4096}) ExpectSameAsLoadAll(MixedStream(seed, 600), batch);
    ExpectSameAsLoadAll(MixedStream(seed, 4500), 0);
  }
}

TEST(YamlStreamTest, StreamsThatAreNotCutStillReadEveryDocument) {
  std::string many;
  for (int k = 0; k < 2000; ++k) many += "---\n" + Deployment(k);
  // A directive belongs to the document after it; a byte-order mark shifts the parser's positions.
  ExpectSameAsLoadAll("%YAML 1.2\n" + many, 1);
  ExpectSameAsLoadAll(many + "...\n%TAG !e! tag:example.com,2000:\n--- !e!x {a: 1}\n" + many, 1);
  ExpectSameAsLoadAll("\xEF\xBB\xBF" + many, 1);
  ExpectSameAsLoadAll(Deployment(1));  // one implicit document
  ExpectSameAsLoadAll("");
  ExpectSameAsLoadAll("# nothing\n");
}

TEST(YamlStreamTest, ErrorsAndTheDocumentCapAreThoseOfParseYamlDocuments) {
  std::string many;
  for (int k = 0; k < 2000; ++k) many += "---\n" + Deployment(k);
  for (const std::string& bad :
       {many + "---\na: [1\n", many + "---\na: 1\na: 2\n", many + "---\nx: &L [*L]\n"}) {
    auto whole = ParseYamlDocuments(bad, "m.yaml");
    ASSERT_FALSE(whole.ok());
    int visited = 0;
    Status s = ForEachYamlDocument(bad, "m.yaml", [&](const YAML::Node&, int) {
      ++visited;
      return Status::Ok();
    });
    EXPECT_EQ(s.message(), whole.status().message());
    EXPECT_EQ(visited, 0) << "nothing is visited before the whole stream is checked";
  }
  std::string over;
  for (int k = 0; k < 10001; ++k) over += "---\n{}\n";
  Status s =
      ForEachYamlDocument(over, "m.yaml", [](const YAML::Node&, int) { return Status::Ok(); });
  EXPECT_NE(s.message().find("more than 10000 YAML documents"), std::string::npos) << s.message();
}

TEST(YamlStreamTest, TheVisitorStopsTheWalk) {
  std::string many;
  for (int k = 0; k < 2000; ++k) many += "---\n" + Deployment(k);
  int visited = 0;
  Status s = ForEachYamlDocument(many, "m.yaml", [&](const YAML::Node&, int index) {
    ++visited;
    return index == 1500 ? Status::InvalidArg("stop") : Status::Ok();
  });
  EXPECT_EQ(s.message(), "stop");
  EXPECT_EQ(visited, 1500);
}

}  // namespace
}  // namespace tg::common
