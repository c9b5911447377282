// PNG encoding of generated images (8-bit RGB) and decoding for verification.
//
// EncodePng uses libspng when the build found it (TG_HAVE_SPNG) and libpng otherwise; both are
// deterministic (same pixels + text -> same bytes), which the bit-identical-output guarantee relies
// on. Both encode for speed, not size: zlib level 1 with the run-length strategy and the Sub row
// filter (about 10x faster than zlib's defaults, files ~10 % larger on smooth images, equal on
// noise; benchmarks/png_bench.cc and docs/PERFORMANCE.md).
// Text chunks: a value that is pure printable ASCII (plus newline) is written as tEXt, anything
// else as uncompressed iTXt (UTF-8), as PIL does, so A1111-style readers find either.
// DecodePng (libpng) fully decodes and CRC-checks a file; tests and `generate` use it to prove the
// written file is a valid PNG of the requested size.
//
// Errors: INVALID_ARG for an inconsistent image (size vs. pixel count, zero or > 16384 sides) or
// undecodable bytes (naming `source`); UNAVAILABLE when the encoder library fails (out of memory).
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

// One text chunk. `keyword`: 1-79 Latin-1 printable characters, no leading/trailing/double
// spaces (PNG's rule; INVALID_ARG otherwise). `text`: UTF-8; NUL bytes are replaced by spaces
// (neither tEXt nor iTXt can hold them).
struct PngText {
  std::string keyword;
  std::string text;
};

// "libspng" or "libpng": the encoder EncodePng uses in this build.
std::string_view PngEncoderName();

// Encodes `image` as an 8-bit RGB PNG with the build's encoder; `text` chunks precede the image
// data (readers that stop early still see them).
[[nodiscard]] common::Result<std::string> EncodePng(const RgbImage& image,
                                                    const std::vector<PngText>& text = {});
// Encodes with libpng regardless of TG_HAVE_SPNG (the fallback path, kept testable).
[[nodiscard]] common::Result<std::string> EncodePngLibpng(const RgbImage& image,
                                                          const std::vector<PngText>& text = {});
// Encodes and writes atomically to `path` (temp file + rename).
[[nodiscard]] common::Status WritePng(const std::string& path, const RgbImage& image,
                                      const std::vector<PngText>& text = {});

// Decodes any PNG (palette, grey, 16-bit and alpha are converted) to 8-bit RGB.
[[nodiscard]] common::Result<RgbImage> DecodePng(const std::string& bytes,
                                                 const std::string& source);
// The tEXt, zTXt and iTXt chunks of a PNG (read with libpng, every chunk CRC-checked), in file
// order; tEXt/zTXt values are converted from Latin-1 to UTF-8. INVALID_ARG naming `source` for
// undecodable bytes.
[[nodiscard]] common::Result<std::vector<PngText>> ReadPngText(const std::string& bytes,
                                                               const std::string& source);

}  // namespace tg::sd
