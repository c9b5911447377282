#include "sd/vae_tiling.h"

#include <algorithm>
#include <string>

namespace tg::sd {
namespace {

constexpr int kStride = kVaeTileLatent * 3 / 4;     // 48 latents between tile starts
constexpr int kBlend = kVaeTileLatent * 8 / 4;      // 128 px blended at each seam
constexpr int kKeep = kVaeTileLatent * 8 - kBlend;  // 384 px kept of each tile

struct Tile {
  int h = 0, w = 0;       // pixels
  std::vector<float> px;  // [3, h, w]
  float& at(int c, int y, int x) { return px[(static_cast<std::size_t>(c) * h + y) * w + x]; }
};

// b's first rows fade in over a's last rows (diffusers' blend_v).
void BlendV(Tile& a, Tile& b) {
  const int e = std::min({a.h, b.h, kBlend});
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < e; ++y) {
      const float t = static_cast<float>(y) / static_cast<float>(e);
      for (int x = 0; x < b.w; ++x) {
        b.at(c, y, x) = a.at(c, a.h - e + y, x) * (1.0f - t) + b.at(c, y, x) * t;
      }
    }
  }
}

// b's first columns fade in over a's last columns (diffusers' blend_h).
void BlendH(Tile& a, Tile& b) {
  const int e = std::min({a.w, b.w, kBlend});
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < b.h; ++y) {
      for (int x = 0; x < e; ++x) {
        const float t = static_cast<float>(x) / static_cast<float>(e);
        b.at(c, y, x) = a.at(c, y, a.w - e + x) * (1.0f - t) + b.at(c, y, x) * t;
      }
    }
  }
}

}  // namespace

int VaeTileCount(int lh, int lw) {
  return ((lh + kStride - 1) / kStride) * ((lw + kStride - 1) / kStride);
}

common::Status DecodeTiled(const float* z, int lh, int lw, const TileDecoder& decode,
                           std::vector<float>* out) {
  const int height = lh * 8, width = lw * 8;
  out->assign(static_cast<std::size_t>(3) * height * width, 0.0f);
  std::vector<Tile> above, row;  // the previous row's blended tiles, and this row's
  std::vector<float> zt;
  for (int i = 0; i < lh; i += kStride) {
    row.clear();
    for (int j = 0; j < lw; j += kStride) {
      const int th = std::min(kVaeTileLatent, lh - i), tw = std::min(kVaeTileLatent, lw - j);
      zt.resize(static_cast<std::size_t>(4) * th * tw);
      for (int c = 0; c < 4; ++c) {
        for (int y = 0; y < th; ++y) {
          const float* src = z + (static_cast<std::size_t>(c) * lh + i + y) * lw + j;
          std::copy(src, src + tw, zt.begin() + (static_cast<std::ptrdiff_t>(c) * th + y) * tw);
        }
      }
      Tile t;
      t.h = th * 8;
      t.w = tw * 8;
      TG_RETURN_IF_ERROR(decode(zt, th, tw, &t.px));
      if (t.px.size() != static_cast<std::size_t>(3) * t.h * t.w) {
        return common::Status::InvalidArg(
            "VAE tile decode returned " + std::to_string(t.px.size()) + " values for a " +
            std::to_string(th) + "x" + std::to_string(tw) + " latent tile; expected 3x" +
            std::to_string(t.h) + "x" + std::to_string(t.w));
      }
      const std::size_t col = row.size();
      if (i > 0) BlendV(above[col], t);
      if (j > 0) BlendH(row.back(), t);
      // Keep the top-left kKeep x kKeep of the blended tile at its place in the image.
      const int y0 = i * 8, x0 = j * 8;
      const int kh = std::min(kKeep, t.h), kw = std::min(kKeep, t.w);
      for (int c = 0; c < 3; ++c) {
        for (int y = 0; y < kh && y0 + y < height; ++y) {
          const float* src = &t.at(c, y, 0);
          float* dst = out->data() + (static_cast<std::size_t>(c) * height + y0 + y) * width + x0;
          std::copy(src, src + std::min(kw, width - x0), dst);
        }
      }
      row.push_back(std::move(t));
    }
    above.swap(row);
  }
  return common::Status::Ok();
}

}  // namespace tg::sd
