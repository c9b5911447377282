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

}  // namespace
}  // namespace tg::sd
