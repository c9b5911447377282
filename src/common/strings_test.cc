#include "common/strings.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <random>

#include <string>
#include <vector>

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

TEST(StringsTest, TrimTakesTheSetToRemove) {
  EXPECT_EQ(Trim(" \ta\t\n", " \t"), "a\t\n");
  EXPECT_EQ(TrimLeft("  a  "), "a  ");
  EXPECT_EQ(TrimRight("  a \r\n"), "  a");
  EXPECT_EQ(TrimLeft("\r a", " \t"), "\r a");
  EXPECT_EQ(Trim("xxaxx", "x"), "a");
  EXPECT_EQ(Trim("abc", ""), "abc");
}

using Pieces = std::vector<std::string>;

TEST(StringsTest, SplitKeepEmptyKeepsEveryPiece) {
  EXPECT_EQ(Split("", ',', SplitMode::kKeepEmpty), Pieces{""});
  EXPECT_EQ(Split(",", ',', SplitMode::kKeepEmpty), (Pieces{"", ""}));
  EXPECT_EQ(Split("a,,b,", ',', SplitMode::kKeepEmpty), (Pieces{"a", "", "b", ""}));
  EXPECT_EQ(Split("/usr/lib:", ':', SplitMode::kKeepEmpty), (Pieces{"/usr/lib", ""}));
  EXPECT_EQ(Split(" a , b ", ',', SplitMode::kKeepEmpty), (Pieces{" a ", " b "}));
}

TEST(StringsTest, SplitSkipEmptyDropsOnlyEmptyPieces) {
  EXPECT_EQ(Split("", ',', SplitMode::kSkipEmpty), Pieces{});
  EXPECT_EQ(Split(",,", ',', SplitMode::kSkipEmpty), Pieces{});
  EXPECT_EQ(Split(":a::b:", ':', SplitMode::kSkipEmpty), (Pieces{"a", "b"}));
  EXPECT_EQ(Split(" , ", ',', SplitMode::kSkipEmpty), (Pieces{" ", " "}));
}

TEST(StringsTest, SplitTrimSkipEmptyTrimsThenDrops) {
  EXPECT_EQ(Split(" a , ,\tb\n,", ',', SplitMode::kTrimSkipEmpty), (Pieces{"a", "b"}));
  EXPECT_EQ(Split(" ", ',', SplitMode::kTrimSkipEmpty), Pieces{});
  EXPECT_EQ(Split("x y", ',', SplitMode::kTrimSkipEmpty), Pieces{"x y"});
}

TEST(StringsTest, BasenameAndDirnameSplitAtTheLastSlash) {
  EXPECT_EQ(Basename("/usr/lib/libcuda.so.1"), "libcuda.so.1");
  EXPECT_EQ(Dirname("/usr/lib/libcuda.so.1"), "/usr/lib");
  EXPECT_EQ(Basename("truegreen"), "truegreen");
  EXPECT_EQ(Dirname("truegreen"), "");
  EXPECT_EQ(Basename("dir/"), "");
  EXPECT_EQ(Dirname("dir/"), "dir");
  EXPECT_EQ(Basename("/x"), "x");
  EXPECT_EQ(Dirname("/x"), "");
  EXPECT_EQ(Basename(""), "");
}

TEST(StringsTest, JoinPutsTheSeparatorBetweenEachTwoPieces) {
  EXPECT_EQ(Join({}, ", "), "");
  EXPECT_EQ(Join({"a"}, ", "), "a");
  EXPECT_EQ(Join({"compute", "utility", "video"}, ","), "compute,utility,video");
  EXPECT_EQ(Join({"a", "", "b"}, ", "), "a, , b");
  const Pieces v = {"x", "", "y", ""};
  EXPECT_EQ(Split(Join(v, ","), ',', SplitMode::kKeepEmpty), v);
}

TEST(StringsTest, SplitWordsSplitsOnRunsOfAsciiWhitespace) {
  EXPECT_EQ(SplitWords(""), Pieces{});
  EXPECT_EQ(SplitWords(" \t\n "), Pieces{});
  EXPECT_EQ(SplitWords("kustomize  build\t--enable-helm\n"),
            (Pieces{"kustomize", "build", "--enable-helm"}));
  EXPECT_EQ(SplitWords("\xC3\xA9 x"), (Pieces{"\xC3\xA9", "x"}));
}

TEST(StringsTest, HexLowerEncodesEveryByte) {
  EXPECT_EQ(HexLower("", 0), "");
  const unsigned char bytes[] = {0x00, 0x0f, 0x10, 0xa5, 0xff};
  EXPECT_EQ(HexLower(bytes, sizeof bytes), "000f10a5ff");
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  const std::string hex = HexLower(all.data(), all.size());
  ASSERT_EQ(hex.size(), 512u);
  for (int i = 0; i < 256; ++i) {
    EXPECT_EQ(std::stoi(hex.substr(2 * i, 2), nullptr, 16), i) << i;
  }
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

TEST(StringsTest, Base64MatchesRfc4648Vectors) {
  auto b64 = [](std::string_view s) {
    std::string out = "prefix:";
    AppendBase64(s, &out);
    return out;
  };
  EXPECT_EQ(b64(""), "prefix:");
  EXPECT_EQ(b64("f"), "prefix:Zg==");
  EXPECT_EQ(b64("fo"), "prefix:Zm8=");
  EXPECT_EQ(b64("foo"), "prefix:Zm9v");
  EXPECT_EQ(b64("foob"), "prefix:Zm9vYg==");
  EXPECT_EQ(b64("fooba"), "prefix:Zm9vYmE=");
  EXPECT_EQ(b64("foobar"), "prefix:Zm9vYmFy");
  EXPECT_EQ(b64(std::string("\xfb\xff\x00", 3)), "prefix:+/8A");
}

TEST(StringsTest, Base64AgreesWithOpenSslOnRandomBytes) {
  std::mt19937 rng(7);
  for (std::size_t n : {1u, 2u, 3u, 4u, 5u, 47u, 48u, 49u, 1000u, 65537u}) {
    std::string in(n, '\0');
    for (char& c : in) c = static_cast<char>(rng());
    std::string want(4 * ((n + 2) / 3) + 1, '\0');
    const int len =
        EVP_EncodeBlock(reinterpret_cast<unsigned char*>(want.data()),
                        reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(n));
    want.resize(static_cast<std::size_t>(len));
    std::string got;
    AppendBase64(in, &got);
    EXPECT_EQ(got, want) << n << " bytes";
  }
}

}  // namespace
}  // namespace tg::common
