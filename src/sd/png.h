// PNG encoding of generated images (8-bit RGB) and decoding for verification.
//
// EncodePng uses libspng when the build found it (TG_HAVE_SPNG) and libpng otherwise; both are
// deterministic (same pixels -> same bytes), which the bit-identical-output guarantee relies on.
// DecodePng (libpng) fully decodes and CRC-checks a file; tests and `generate` use it to prove the
// written file is a valid PNG of the requested size.
//
// Errors: INVALID_ARG for an inconsistent image (size vs. pixel count, zero or > 16384 sides) or
// undecodable bytes (naming `source`); INTERNAL when the encoder library fails.
// Thread safety: stateless free functions, safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tg::sd {

// Row-major interleaved RGB, 3 bytes per pixel, no row padding.
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> pixels;  // width * height * 3
};

// "libspng" or "libpng": the encoder EncodePng uses in this build.
std::string_view PngEncoderName();

// Encodes `image` as an 8-bit RGB PNG with the build's encoder.
[[nodiscard]] common::Result<std::string> EncodePng(const RgbImage& image);
// Encodes with libpng regardless of TG_HAVE_SPNG (the fallback path, kept testable).
[[nodiscard]] common::Result<std::string> EncodePngLibpng(const RgbImage& image);
// Encodes and writes atomically to `path` (temp file + rename).
[[nodiscard]] common::Status WritePng(const std::string& path, const RgbImage& image);

// Decodes any PNG (palette, grey, 16-bit and alpha are converted) to 8-bit RGB.
[[nodiscard]] common::Result<RgbImage> DecodePng(const std::string& bytes,
                                                 const std::string& source);

}  // namespace tg::sd
