#include "common/dynlib.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/test_util.h"

namespace tg::common {
namespace {

TEST(DynlibTest, MissingLibraryIsNotFoundWithLoaderText) {
  LibraryLoader loader({"/nonexistent-dir"});
  auto lib = loader.Load("libtruegreen-does-not-exist.so.7");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kNotFound);
  EXPECT_NE(lib.status().message().find("cannot open shared object file"), std::string::npos)
      << lib.status().message();
}

TEST(DynlibTest, SearchDirWinsAndResolvedPathIsRecorded) {
  tg::testing::TempDir dir;
  // A real system library copied under a new name stands in for a GPU library.
  std::filesystem::copy_file("/lib/x86_64-linux-gnu/libz.so.1", dir / "libfakez.so.1");
  LibraryLoader loader({dir.path()});
  auto lib = loader.Load("libfakez.so.1");
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  EXPECT_EQ(lib->resolved_path(), std::filesystem::canonical(dir / "libfakez.so.1").string());
  EXPECT_NE(lib->Function<void (*)()>("zlibVersion"), nullptr);
  auto missing = lib->Symbol("no_such_symbol");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no_such_symbol"), std::string::npos);
}

TEST(DynlibTest, BrokenFileInSearchDirIsUnavailableNotSkipped) {
  tg::testing::TempDir dir;
  tg::testing::WriteFile(dir / "libz.so.1", "this is not an ELF file");
  LibraryLoader loader({dir.path()});
  auto lib = loader.Load("libz.so.1");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(lib.status().message().find(dir.path()), std::string::npos) << lib.status().message();
}

}  // namespace
}  // namespace tg::common
