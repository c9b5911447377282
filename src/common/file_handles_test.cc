#include "common/file_handles.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include "common/file_util.h"

namespace tg::common {
namespace {

bool FdIsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

std::string TempPath(const ScopedTempDir& dir, const char* name) { return dir.path() + "/" + name; }

TEST(FileHandlesTest, UniqueFileClosesItsStreamOnceWhereverItsOwnerEnds) {
  auto dir = ScopedTempDir::Create("tg-handles");
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  const std::string path = TempPath(*dir, "a.txt");
  int fd = -1;
  {
    UniqueFile f(std::fopen(path.c_str(), "w"));
    ASSERT_TRUE(f);
    fd = ::fileno(f.get());
    EXPECT_TRUE(FdIsOpen(fd));
    UniqueFile moved(std::move(f));  // the move leaves the source empty: one fclose only
    EXPECT_FALSE(f);
    std::fputs("x", moved.get());
  }
  EXPECT_FALSE(FdIsOpen(fd));
  // Close reports fclose's result and leaves the owner empty; Release hands the stream over.
  UniqueFile g(std::fopen(path.c_str(), "r"));
  ASSERT_TRUE(g);
  EXPECT_EQ(g.Close(), 0);
  EXPECT_FALSE(g);
  EXPECT_EQ(g.Close(), 0);
  UniqueFile h(std::fopen(path.c_str(), "r"));
  std::FILE* raw = h.Release();
  ASSERT_NE(raw, nullptr);
  EXPECT_TRUE(FdIsOpen(::fileno(raw)));
  std::fclose(raw);
  // Move-assignment closes what the target held.
  UniqueFile a(std::fopen(path.c_str(), "r"));
  const int a_fd = ::fileno(a.get());
  a = UniqueFile(std::fopen(path.c_str(), "r"));
  EXPECT_TRUE(a);
  EXPECT_TRUE(FdIsOpen(::fileno(a.get())));
  if (::fileno(a.get()) != a_fd) {
    EXPECT_FALSE(FdIsOpen(a_fd));
  }
}

TEST(FileHandlesTest, UniqueDirClosesItsStreamAndSaysWhenOpenFailed) {
  auto dir = ScopedTempDir::Create("tg-handles");
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  int fd = -1;
  {
    UniqueDir d(dir->path());
    ASSERT_TRUE(d);
    fd = ::dirfd(d.get());
    EXPECT_TRUE(FdIsOpen(fd));
  }
  EXPECT_FALSE(FdIsOpen(fd));
  UniqueDir missing(TempPath(*dir, "nope"));
  EXPECT_FALSE(missing);
  EXPECT_EQ(errno, ENOENT);
}

TEST(FileHandlesTest, MappedFileOutlivesItsDescriptorAndUnmapsOnDestruction) {
  auto dir = ScopedTempDir::Create("tg-handles");
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  const std::string path = TempPath(*dir, "m.bin");
  ASSERT_TRUE(WriteFileAtomic(path, "hello, mapping").ok());
  const void* where = nullptr;
  const long page = ::sysconf(_SC_PAGESIZE);
  {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_GE(fd.get(), 0);
    auto m = MappedFile::Map(fd.get(), 14, "test file m.bin");
    ASSERT_TRUE(m.ok()) << m.status().message();
    fd.Close();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(m->data()), m->size()), "hello, mapping");
    where = m->data();
    unsigned char resident = 0;
    EXPECT_EQ(::mincore(const_cast<void*>(where), static_cast<std::size_t>(page), &resident), 0);
    MappedFile moved = std::move(*m);
    EXPECT_EQ(m->data(), nullptr);
    EXPECT_EQ(moved.data(), where);
  }
  // mincore answers ENOMEM for an address range that is no longer mapped.
  unsigned char resident = 0;
  EXPECT_EQ(::mincore(const_cast<void*>(where), static_cast<std::size_t>(page), &resident), -1);
  EXPECT_EQ(errno, ENOMEM);
  auto bad = MappedFile::Map(-1, 14, "test file m.bin");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(bad.status().message().rfind("cannot map test file m.bin: ", 0), 0u)
      << bad.status().message();
}

}  // namespace
}  // namespace tg::common
