// DecodeTiled's geometry and blending against a decoder whose output at a pixel depends only on
// the latent under it: tiles then agree wherever they overlap, so any seam the blend leaves would
// show as a difference from the whole decode. The real VAE's seam difference is measured in
// tests/sd_vae_tiling_test.cc.
#include "sd/vae_tiling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tg::sd {
namespace {

// 8x nearest-neighbour upsampling of a pointwise function of the latent's 4 channels.
common::Status LocalDecode(const std::vector<float>& z, int th, int tw, std::vector<float>* rgb) {
  const int h = th * 8, w = tw * 8;
  rgb->assign(static_cast<std::size_t>(3) * h * w, 0.0f);
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        const std::size_t l = static_cast<std::size_t>(y / 8) * tw + x / 8;
        const float a = z[l], b = z[static_cast<std::size_t>(th) * tw * (c + 1) + l];
        (*rgb)[(static_cast<std::size_t>(c) * h + y) * w + x] =
            a * 0.5f - b + static_cast<float>(c);
      }
    }
  }
  return common::Status::Ok();
}

std::vector<float> Latents(int lh, int lw) {
  std::vector<float> z(static_cast<std::size_t>(4) * lh * lw);
  for (std::size_t i = 0; i < z.size(); ++i) z[i] = std::sin(static_cast<float>(i) * 0.37f);
  return z;
}

TEST(DecodeTiled, LocalDecoderGivesTheWholeDecodeExactly) {
  for (auto [lh, lw] : {std::pair{128, 192}, {96, 96}, {100, 70}, {64, 64}, {40, 200}}) {
    const std::vector<float> z = Latents(lh, lw);
    std::vector<float> whole, tiled;
    ASSERT_TRUE(LocalDecode(z, lh, lw, &whole).ok());
    int calls = 0;
    auto dec = [&calls](const std::vector<float>& zt, int th, int tw, std::vector<float>* px) {
      ++calls;
      EXPECT_LE(th, kVaeTileLatent);
      EXPECT_LE(tw, kVaeTileLatent);
      return LocalDecode(zt, th, tw, px);
    };
    ASSERT_TRUE(DecodeTiled(z.data(), lh, lw, dec, &tiled).ok());
    EXPECT_EQ(calls, VaeTileCount(lh, lw)) << lh << "x" << lw;
    ASSERT_EQ(tiled.size(), whole.size());
    double max_diff = 0;
    for (std::size_t i = 0; i < whole.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(whole[i] - tiled[i])));
    }
    EXPECT_LT(max_diff, 1e-5) << lh << "x" << lw;
  }
  EXPECT_EQ(VaeTileCount(128, 192), 3 * 4);  // 1024x1536: starts 0, 48, 96 and 0..144
}

TEST(DecodeTiled, SeamsBlendLinearlyFromTheEarlierTile) {
  // Each tile decodes to a constant: its index. Across the first vertical seam (x from 384 to
  // 511 of the first row), the image goes linearly from tile 0's value to tile 1's.
  const int lh = 64, lw = 112;
  const std::vector<float> z = Latents(lh, lw);
  int index = 0;
  auto dec = [&index](const std::vector<float>&, int th, int tw, std::vector<float>* px) {
    px->assign(static_cast<std::size_t>(3) * th * 8 * tw * 8, static_cast<float>(index++));
    return common::Status::Ok();
  };
  std::vector<float> out;
  ASSERT_TRUE(DecodeTiled(z.data(), lh, lw, dec, &out).ok());
  const int w = lw * 8;
  EXPECT_FLOAT_EQ(out[10], 0.0f);
  EXPECT_FLOAT_EQ(out[384], 0.0f);       // the blend starts at the second tile's edge
  EXPECT_FLOAT_EQ(out[384 + 64], 0.5f);  // halfway through the 128-pixel blend
  EXPECT_FLOAT_EQ(out[static_cast<std::size_t>(5) * w + 384 + 96], 0.75f);
  EXPECT_FLOAT_EQ(out[512 + 10], 1.0f);
}

TEST(DecodeTiled, ADecoderReturningTheWrongSizeIsAnError) {
  const std::vector<float> z = Latents(64, 64);
  std::vector<float> out;
  auto bad = [](const std::vector<float>&, int, int, std::vector<float>* px) {
    px->assign(12, 0.0f);
    return common::Status::Ok();
  };
  const common::Status s = DecodeTiled(z.data(), 64, 64, bad, &out);
  EXPECT_EQ(s.code(), common::StatusCode::kInvalidArg);
  EXPECT_NE(s.message().find("expected 3x512x512"), std::string::npos) << s.message();
  auto failing = [](const std::vector<float>&, int, int, std::vector<float>*) {
    return common::Status::Unavailable("session failed");
  };
  EXPECT_EQ(DecodeTiled(z.data(), 64, 64, failing, &out).message(), "session failed");
}

}  // namespace
}  // namespace tg::sd
