// The one reader and the one writer: the writer refuses devices, FIFOs, sockets and directories
// and never creates parent folders unless asked; the reader never blocks on a FIFO with no writer
// and refuses what is not a file.
#include "common/file_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "tests/support/test_util.h"

namespace tg::common {
namespace {

using ::testing::HasSubstr;

bool IsFifo(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

TEST(WriteFileAtomic, WritesNewFileAndReplacesRegularFile) {
  testing::TempDir d;
  ASSERT_TRUE(WriteFileAtomic(d / "a.txt", "one").ok());
  EXPECT_EQ(testing::ReadFile(d / "a.txt"), "one");
  ::chmod((d / "a.txt").c_str(), 0640);
  ASSERT_TRUE(WriteFileAtomic(d / "a.txt", "two").ok());
  EXPECT_EQ(testing::ReadFile(d / "a.txt"), "two");
  struct stat st {};
  ASSERT_EQ(::stat((d / "a.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u) << "the replaced file keeps its permissions";
}

TEST(WriteFileAtomic, RefusesFifoAndLeavesItInPlace) {
  testing::TempDir d;
  ASSERT_EQ(::mkfifo((d / "fifo").c_str(), 0600), 0);
  Status s = WriteFileAtomic(d / "fifo", "data");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArg);
  EXPECT_THAT(s.message(), HasSubstr("FIFO"));
  EXPECT_THAT(s.message(), HasSubstr(d / "fifo"));
  EXPECT_TRUE(IsFifo(d / "fifo")) << "the FIFO must not be replaced";
}

TEST(WriteFileAtomic, RefusesDirectory) {
  testing::TempDir d;
  ASSERT_EQ(::mkdir((d / "sub").c_str(), 0755), 0);
  Status s = WriteFileAtomic(d / "sub", "data");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("directory"));
  struct stat st {};
  ASSERT_EQ(::stat((d / "sub").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  // A path ending in "/" names a directory too.
  EXPECT_FALSE(WriteFileAtomic(d.path() + "/", "data").ok());
}

TEST(WriteFileAtomic, RefusesDeviceNodes) {
  // /dev/null and /dev/full: character devices that must never be replaced (as root, a rename
  // over them would succeed; the refusal comes before any rename).
  for (const char* dev : {"/dev/null", "/dev/full"}) {
    struct stat before {};
    if (::stat(dev, &before) != 0) continue;
    Status s = WriteFileAtomic(dev, "data");
    ASSERT_FALSE(s.ok()) << dev;
    EXPECT_THAT(s.message(), HasSubstr("character device")) << dev;
    struct stat after {};
    ASSERT_EQ(::stat(dev, &after), 0);
    EXPECT_TRUE(S_ISCHR(after.st_mode)) << dev << " was replaced";
  }
}

TEST(WriteFileAtomic, RefusesSymlinkToDeviceAndSocket) {
  testing::TempDir d;
  ASSERT_EQ(::symlink("/dev/null", (d / "link").c_str()), 0);
  Status s = WriteFileAtomic(d / "link", "data");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("character device"));

  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock = d / "s";
  if (sock.size() < sizeof(addr.sun_path)) {
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    Status t = WriteFileAtomic(sock, "data");
    ASSERT_FALSE(t.ok());
    EXPECT_THAT(t.message(), HasSubstr("socket"));
  }
  ::close(fd);
}

TEST(WriteFileAtomic, SymlinkToRegularFileWritesTheFile) {
  testing::TempDir d;
  testing::WriteFile(d / "real", "old");
  ASSERT_EQ(::symlink("real", (d / "link").c_str()), 0);
  ASSERT_TRUE(WriteFileAtomic(d / "link", "new").ok());
  EXPECT_EQ(testing::ReadFile(d / "real"), "new");
  struct stat st {};
  ASSERT_EQ(::lstat((d / "link").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the link itself stays a link";
}

TEST(WriteFileAtomic, NeverCreatesParentsUnlessAsked) {
  testing::TempDir d;
  Status s = WriteFileAtomic(d / "no/such/dir/x.png", "data");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("does not exist"));
  struct stat st {};
  EXPECT_NE(::stat((d / "no").c_str(), &st), 0) << "the missing folder was created";
  ASSERT_TRUE(WriteFileAtomic(d / "no/such/dir/x.png", "data", /*create_parents=*/true).ok());
  EXPECT_EQ(testing::ReadFile(d / "no/such/dir/x.png"), "data");
}

TEST(WriteFileAtomic, LeavesNoTemporaryBehind) {
  testing::TempDir d;
  ASSERT_EQ(::mkfifo((d / "f").c_str(), 0600), 0);
  ASSERT_FALSE(WriteFileAtomic(d / "f", "x").ok());
  ASSERT_TRUE(WriteFileAtomic(d / "g", "x").ok());
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(d.path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 2);  // f and g only
}

// Out of descriptors is this machine's failure, not the file's: UNAVAILABLE (exit 3), while a
// file that is not there stays NOT_FOUND and one that cannot be read INVALID_ARG.
TEST(ReadFileLimited, DescriptorLimitIsUnavailableNotInvalidInput) {
  testing::TempDir d;
  testing::WriteFile(d / "f.txt", "data\n");
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  const int lowest = ::dup(0);  // the lowest free descriptor: a limit there leaves none free
  ASSERT_GE(lowest, 0);
  ::close(lowest);
  rlimit low = old;
  low.rlim_cur = static_cast<rlim_t>(lowest);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  auto r = ReadFileLimited(d / "f.txt", 1024);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().message();
  EXPECT_THAT(r.status().message(), HasSubstr("f.txt: cannot open for reading"));
  EXPECT_THAT(r.status().message(), HasSubstr("not of the file"));
  auto ok = ReadFileLimited(d / "f.txt", 1024);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(*ok, "data\n");
  EXPECT_EQ(ReadFileLimited(d / "none.txt", 1024).status().code(), StatusCode::kNotFound);
}

TEST(ReadFileLimited, NamedFifoWithNoWriterIsAnErrorNotAHang) {
  testing::TempDir d;
  ASSERT_EQ(::mkfifo((d / "fifo").c_str(), 0600), 0);
  auto r = ReadFileLimited(d / "fifo", 1024);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("FIFO"));
}

TEST(ReadFileLimited, RefusesDirectoryAndDevice) {
  testing::TempDir d;
  auto r = ReadFileLimited(d.path(), 1024);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("directory"));
  auto z = ReadFileLimited("/dev/zero", 1024);
  ASSERT_FALSE(z.ok());
  EXPECT_THAT(z.status().message(), HasSubstr("character device"));
}

TEST(ReadFileLimited, SizeCapAndMissingFile) {
  testing::TempDir d;
  testing::WriteFile(d / "f", std::string(100, 'x'));
  EXPECT_TRUE(ReadFileLimited(d / "f", 100).ok());
  auto big = ReadFileLimited(d / "f", 99);
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(big.status().message(), HasSubstr("limit of 99 bytes"));
  auto missing = ReadFileLimited(d / "none", 10);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(ReadFileLimited, AnonymousPipeIsRead) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  ASSERT_EQ(::write(p[1], "hello", 5), 5);
  ::close(p[1]);
  auto r = ReadFileLimited("/proc/self/fd/" + std::to_string(p[0]), 100);
  ::close(p[0]);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "hello");
}

}  // namespace
}  // namespace tg::common
