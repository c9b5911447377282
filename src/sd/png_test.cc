// PNG encode/decode round trips with both encoders, determinism, and bad input.
#include "sd/png.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sd/pipeline.h"

namespace tg::sd {
namespace {

RgbImage Gradient(int w, int h) {
  RgbImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(static_cast<std::size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      auto* p = &img.pixels[(static_cast<std::size_t>(y) * w + x) * 3];
      p[0] = static_cast<std::uint8_t>(x * 7);
      p[1] = static_cast<std::uint8_t>(y * 3);
      p[2] = static_cast<std::uint8_t>((x ^ y) & 0xff);
    }
  }
  return img;
}

TEST(PngTest, BuildEncoderRoundTripsNonSquare) {
  RgbImage img = Gradient(40, 24);
  auto png = EncodePng(img);
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  auto back = DecodePng(*png, "mem");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->width, 40);
  EXPECT_EQ(back->height, 24);
  EXPECT_EQ(back->pixels, img.pixels);
}

TEST(PngTest, LibpngFallbackRoundTrips) {
  RgbImage img = Gradient(17, 9);
  auto png = EncodePngLibpng(img);
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  auto back = DecodePng(*png, "mem");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->pixels, img.pixels);
}

TEST(PngTest, EncodingIsDeterministic) {
  RgbImage img = Gradient(64, 64);
  auto a = EncodePng(img);
  auto b = EncodePng(img);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  img.pixels[5] ^= 1;
  auto c = EncodePng(img);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(*a, *c);
}

TEST(PngTest, InconsistentImageIsRejected) {
  RgbImage img = Gradient(8, 8);
  img.pixels.pop_back();
  auto r = EncodePng(img);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), common::StatusCode::kInvalidArg);
  EXPECT_NE(r.status().message().find("needs 192 RGB bytes, got 191"), std::string::npos)
      << r.status().message();
  RgbImage empty;
  EXPECT_FALSE(EncodePng(empty).ok());
}

TEST(PngTest, GarbageAndTruncatedDataAreRejected) {
  auto r = DecodePng("not a png at all", "garbage.png");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("garbage.png"), std::string::npos);
  auto png = EncodePng(Gradient(32, 32));
  ASSERT_TRUE(png.ok());
  auto t = DecodePng(png->substr(0, png->size() / 2), "half.png");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("half.png: invalid PNG"), std::string::npos)
      << t.status().message();
}

TEST(PngTest, DecodedToRgbClipsAndRoundsLikeNumpy) {
  // Planar [3,1,5]: -1 → 0, 1 → 255, 0 → 127.5 rounds half to even → 128, 3 clips, NaN → 0.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> chw = {-1.f, 1.f,  0.f,   3.f, nan,   // R
                            -5.f, 0.5f, -0.5f, 1.f, 0.f,   // G
                            0.f,  0.f,  0.f,   0.f, 0.f};  // B
  RgbImage img = DecodedToRgb(chw.data(), 5, 1);
  ASSERT_EQ(img.pixels.size(), 15u);
  EXPECT_EQ(img.pixels[0 * 3 + 0], 0);
  EXPECT_EQ(img.pixels[1 * 3 + 0], 255);
  EXPECT_EQ(img.pixels[2 * 3 + 0], 128);
  EXPECT_EQ(img.pixels[3 * 3 + 0], 255);
  EXPECT_EQ(img.pixels[4 * 3 + 0], 0);
  EXPECT_EQ(img.pixels[0 * 3 + 1], 0);
  EXPECT_EQ(img.pixels[1 * 3 + 1], 191);  // 0.75 * 255 = 191.25
  EXPECT_EQ(img.pixels[2 * 3 + 1], 64);   // 0.25 * 255 = 63.75
}

// 512x512 of pseudo-random bytes: the incompressible case (random-weight pipelines produce it).
RgbImage Noise(int w, int h) {
  RgbImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(static_cast<std::size_t>(w) * h * 3);
  std::uint32_t x = 12345;
  for (auto& p : img.pixels) {
    x = x * 1664525u + 1013904223u;
    p = static_cast<std::uint8_t>(x >> 24);
  }
  return img;
}

TEST(PngTest, FastSettingsStayBitExactOnNoiseAndGradients) {
  for (const RgbImage& img : {Noise(512, 512), Gradient(512, 384)}) {
    for (bool libpng : {false, true}) {
      auto png = libpng ? EncodePngLibpng(img) : EncodePng(img);
      ASSERT_TRUE(png.ok()) << png.status().ToString();
      auto back = DecodePng(*png, "mem");
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      EXPECT_EQ(back->width, img.width);
      EXPECT_EQ(back->pixels, img.pixels) << (libpng ? "libpng" : PngEncoderName());
      // Still compressed where there is something to compress.
      if (img.height == 384) {
        EXPECT_LT(png->size(), img.pixels.size() / 2);
      }
    }
  }
}

TEST(PngTest, TextChunksReadBackWithLibpng) {
  const std::string ascii = "a cat\nNegative prompt: dog\nSteps: 2, Sampler: Euler a";
  const std::string utf8 = "caf\xc3\xa9 \xe2\x98\x95";
  for (bool libpng : {false, true}) {
    std::vector<PngText> text = {{"parameters", ascii}, {"comment", utf8}};
    auto png = libpng ? EncodePngLibpng(Gradient(16, 8), text) : EncodePng(Gradient(16, 8), text);
    ASSERT_TRUE(png.ok()) << png.status().ToString();
    // ASCII goes into tEXt (PIL and A1111 read it as Latin-1), anything else into iTXt (UTF-8).
    EXPECT_NE(png->find(std::string("tEXtparameters\0", 15)), std::string::npos);
    EXPECT_NE(png->find(std::string("iTXtcomment\0", 12)), std::string::npos);
    EXPECT_LT(png->find("tEXt"), png->find("IDAT"));
    auto back = ReadPngText(*png, "mem");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ASSERT_EQ(back->size(), 2u);
    EXPECT_EQ((*back)[0].keyword, "parameters");
    EXPECT_EQ((*back)[0].text, ascii);
    EXPECT_EQ((*back)[1].keyword, "comment");
    EXPECT_EQ((*back)[1].text, utf8);
  }
}

TEST(PngTest, TextIsCleanedAndKeywordsChecked) {
  std::vector<PngText> text = {{"k", std::string("a\0b\xff", 4)}};
  auto png = EncodePng(Gradient(4, 4), text);
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  auto back = ReadPngText(*png, "mem");
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].text, "a b\xef\xbf\xbd");  // NUL → space, invalid byte → U+FFFD
  for (const char* bad : {"", " lead", "trail ", "dou  ble", "tab\there"}) {
    auto r = EncodePng(Gradient(4, 4), {{bad, "x"}});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), common::StatusCode::kInvalidArg);
    EXPECT_NE(r.status().message().find("keyword"), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(EncodePng(Gradient(4, 4), {{std::string(80, 'k'), "x"}}).ok());
  EXPECT_FALSE(ReadPngText("junk", "junk.png").ok());
}

}  // namespace
}  // namespace tg::sd
