// Tiled VAE decode: diffusers' AutoencoderKL.tiled_decode, so a large image's decode holds one
// tile's activations instead of the whole image's (the VAE's mid-block attention is T² in the
// latent pixels: ~2.4 GB at 1536x1024 for one image in fp32).
//
// Geometry (diffusers' defaults): tiles of kVaeTileLatent x kVaeTileLatent latents (512 px),
// starting every 48 latents (overlap 25 %); each decoded tile is blended into the tile above and
// the tile to its left over 128 px with linear weights (the earlier tile fading out as the later
// one fades in), then cropped to 384 px, its blended copy being what the next row and column
// blend against. Edge tiles are smaller. The seams are not exact: each tile sees only its own
// latents (docs/PERFORMANCE.md gives the measured difference against a whole decode).
//
// Thread safety: pure function of its inputs; `decode` is called on the calling thread.
#pragma once

#include <functional>
#include <vector>

#include "common/status.h"

namespace tg::sd {

inline constexpr int kVaeTileLatent = 64;

// Decodes one latent tile z [4, th, tw] (row major) into rgb [3, 8·th, 8·tw].
using TileDecoder = std::function<common::Status(const std::vector<float>& z, int th, int tw,
                                                 std::vector<float>* rgb)>;

// Decodes the latents z [4, lh, lw] of one image into out [3, 8·lh, 8·lw] tile by tile (see the
// file comment). Errors: the decoder's, or INVALID_ARG when it returns a buffer of another size.
[[nodiscard]] common::Status DecodeTiled(const float* z, int lh, int lw, const TileDecoder& decode,
                                         std::vector<float>* out);

// Tiles DecodeTiled runs for latents lh x lw (for estimates and tests).
int VaeTileCount(int lh, int lw);

}  // namespace tg::sd
