#include "common/strings.h"

#include <gtest/gtest.h>

#include <string>

namespace tg::common {
namespace {

TEST(StringsTest, LowerAndUpperTouchAsciiOnly) {
  EXPECT_EQ(Lower("CUDAExecutionProvider"), "cudaexecutionprovider");
  EXPECT_EQ(Upper("run apt-get"), "RUN APT-GET");
  // UTF-8 bytes pass through unchanged.
  EXPECT_EQ(Lower("\xC3\x89t\xC3\xA9"), "\xC3\x89t\xC3\xA9");
  EXPECT_EQ(Lower(""), "");
}

TEST(StringsTest, TrimRemovesAsciiWhitespaceAtBothEnds) {
  EXPECT_EQ(Trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(Trim("\v\fx"), "x");
  EXPECT_EQ(Trim(" \t "), "");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(Trim("nothing"), "nothing");
}

TEST(StringsTest, PinnedByDigestNeedsSha256AndSixtyFourLowerHex) {
  const std::string hex(64, 'a');
  EXPECT_TRUE(IsPinnedByDigest("nvcr.io/nvidia/cuda:13.0-runtime@sha256:" + hex));
  EXPECT_TRUE(IsPinnedByDigest("debian@sha256:" + hex));
  EXPECT_FALSE(IsPinnedByDigest("debian:12"));
  EXPECT_FALSE(IsPinnedByDigest("debian@sha256:" + std::string(63, 'a')));
  EXPECT_FALSE(IsPinnedByDigest("debian@sha256:" + std::string(64, 'A')));
  EXPECT_FALSE(IsPinnedByDigest("debian@sha512:" + hex));
  EXPECT_FALSE(IsPinnedByDigest("@sha256:" + hex));  // no name
  EXPECT_FALSE(IsPinnedByDigest(std::string(1 << 16, '@')));
}

TEST(StringsTest, EditDistanceCountsSingleCharacterEdits) {
  EXPECT_EQ(EditDistance("doctor", "doctor"), 0u);
  EXPECT_EQ(EditDistance("docter", "doctor"), 1u);
  EXPECT_EQ(EditDistance("admt", "admit"), 1u);
  EXPECT_EQ(EditDistance("", "probe"), 5u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

TEST(StringsTest, XmlEscapeEscapesMarkupAndDropsForbiddenControls) {
  EXPECT_EQ(XmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
  EXPECT_EQ(XmlEscape(std::string("x\x01y\tz\n", 6)), "xy\tz\n");
  EXPECT_EQ(XmlEscape(""), "");
}

}  // namespace
}  // namespace tg::common
