// The streaming writer: pieces of any size (smaller and larger than its buffer) arrive in order;
// nothing is visible at the target before Commit; a writer dropped without Commit leaves the old
// file and no temporary; the refusals are WriteFileAtomic's (a FIFO is never opened).
#include "common/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "tests/support/test_util.h"

namespace tg::common {
namespace {

std::size_t FilesIn(const std::string& dir) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.is_regular_file() ? 1 : 0;
  return n;
}

TEST(AtomicFileWriter, PiecesOfEverySizeArriveInOrderAtCommit) {
  testing::TempDir d;
  testing::WriteFile(d / "r.txt", "old");
  auto w = AtomicFileWriter::Open(d / "r.txt");
  ASSERT_TRUE(w.ok()) << w.status().message();
  std::string expected;
  for (int i = 0; i < 2000; ++i) {
    const std::string piece = std::to_string(i) + std::string(i % 7 == 0 ? 1000 : 3, 'x');
    (*w)->Write(piece);
    expected += piece;
  }
  const std::string big(1 << 20, 'b');  // larger than the buffer: written through
  (*w)->Write(big);
  expected += big;
  (*w)->Write("end");
  expected += "end";
  EXPECT_EQ(testing::ReadFile(d / "r.txt"), "old") << "nothing is visible before Commit";
  ASSERT_TRUE((*w)->Commit().ok());
  EXPECT_EQ(testing::ReadFile(d / "r.txt"), expected);
  EXPECT_EQ(FilesIn(d.path()), 1u) << "no temporary is left";
}

TEST(AtomicFileWriter, DroppedWithoutCommitLeavesTheOldFile) {
  testing::TempDir d;
  testing::WriteFile(d / "r.txt", "old");
  {
    auto w = AtomicFileWriter::Open(d / "r.txt");
    ASSERT_TRUE(w.ok());
    (*w)->Write("half a report");
  }
  EXPECT_EQ(testing::ReadFile(d / "r.txt"), "old");
  EXPECT_EQ(FilesIn(d.path()), 1u);
}

TEST(AtomicFileWriter, RefusesAFifoAndAMissingFolderNamingThem) {
  testing::TempDir d;
  ASSERT_EQ(::mkfifo((d / "p").c_str(), 0600), 0);
  auto fifo = AtomicFileWriter::Open(d / "p");
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.status().message().find("FIFO"), std::string::npos) << fifo.status().message();
  auto missing = AtomicFileWriter::Open(d / "no/r.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("does not exist"), std::string::npos);
  EXPECT_TRUE(AtomicFileWriter::Open(d / "new/r.txt", true).ok());
}

}  // namespace
}  // namespace tg::common
