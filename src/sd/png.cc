// PNG encode/decode. libpng reports errors through longjmp; every libpng call sits in a function
// with its own setjmp and no non-trivially-destructible locals live across the jump.
#include "sd/png.h"

#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#ifdef TG_HAVE_SPNG
#include <spng.h>
#endif

#include "common/file_util.h"

namespace tg::sd {
namespace {

using common::Result;
using common::Status;

constexpr int kMaxSide = 16384;

Status CheckImage(const RgbImage& image) {
  if (image.width <= 0 || image.height <= 0 || image.width > kMaxSide || image.height > kMaxSide) {
    return Status::InvalidArg("PNG image size " + std::to_string(image.width) + "x" +
                              std::to_string(image.height) + " is out of range 1.." +
                              std::to_string(kMaxSide));
  }
  const std::size_t want = static_cast<std::size_t>(image.width) * image.height * 3;
  if (image.pixels.size() != want) {
    return Status::InvalidArg("PNG image " + std::to_string(image.width) + "x" +
                              std::to_string(image.height) + " needs " + std::to_string(want) +
                              " RGB bytes, got " + std::to_string(image.pixels.size()));
  }
  return Status::Ok();
}

// Error text captured by the libpng error callback before it longjmps.
struct PngIo {
  std::string* out = nullptr;       // encode target
  const std::string* in = nullptr;  // decode source
  std::size_t pos = 0;
  char error[256] = {0};
};

void OnPngError(png_structp png, png_const_charp msg) {
  auto* io = static_cast<PngIo*>(png_get_error_ptr(png));
  std::snprintf(io->error, sizeof(io->error), "%s", msg);
  png_longjmp(png, 1);
}
void OnPngWarning(png_structp, png_const_charp) {}

void OnPngWrite(png_structp png, png_bytep data, png_size_t len) {
  auto* io = static_cast<PngIo*>(png_get_io_ptr(png));
  io->out->append(reinterpret_cast<const char*>(data), len);
}
void OnPngFlush(png_structp) {}

void OnPngRead(png_structp png, png_bytep data, png_size_t len) {
  auto* io = static_cast<PngIo*>(png_get_io_ptr(png));
  if (io->pos + len > io->in->size()) png_error(png, "truncated PNG data");
  std::memcpy(data, io->in->data() + io->pos, len);
  io->pos += len;
}

// Returns false (with io->error set) on a libpng error.
bool LibpngEncode(const RgbImage& image, PngIo* io) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, io, OnPngError, OnPngWarning);
  if (png == nullptr) {
    std::snprintf(io->error, sizeof(io->error), "png_create_write_struct failed");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    if (io->error[0] == 0) std::snprintf(io->error, sizeof(io->error), "libpng write failed");
    return false;
  }
  png_set_write_fn(png, io, OnPngWrite, OnPngFlush);
  png_set_IHDR(png, info, image.width, image.height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const std::size_t stride = static_cast<std::size_t>(image.width) * 3;
  for (int y = 0; y < image.height; ++y) {
    png_write_row(png, const_cast<png_bytep>(image.pixels.data() + y * stride));
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

// Decodes into `out`, whose pixel buffer is sized once the header is known.
bool LibpngDecode(PngIo* io, RgbImage* out) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, io, OnPngError, OnPngWarning);
  if (png == nullptr) {
    std::snprintf(io->error, sizeof(io->error), "png_create_read_struct failed");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    if (io->error[0] == 0) std::snprintf(io->error, sizeof(io->error), "libpng read failed");
    return false;
  }
  png_set_read_fn(png, io, OnPngRead);
  png_set_user_limits(png, kMaxSide, kMaxSide);
  png_read_info(png, info);
  png_uint_32 w = png_get_image_width(png, info);
  png_uint_32 h = png_get_image_height(png, info);
  int color = png_get_color_type(png, info);
  if (png_get_bit_depth(png, info) == 16) png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_expand_gray_1_2_4_to_8(png);
    png_set_gray_to_rgb(png);
  }
  if (color & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_strip_alpha(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != static_cast<png_size_t>(w) * 3) {
    png_error(png, "unexpected row size after conversion to RGB");
  }
  out->width = static_cast<int>(w);
  out->height = static_cast<int>(h);
  out->pixels.resize(static_cast<std::size_t>(w) * h * 3);
  // Row by row straight into the caller's buffer: no allocation that a longjmp could leak.
  for (int pass = 0; pass < passes; ++pass) {
    for (png_uint_32 y = 0; y < h; ++y) {
      png_read_row(png, out->pixels.data() + static_cast<std::size_t>(y) * w * 3, nullptr);
    }
  }
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

#ifdef TG_HAVE_SPNG
struct SpngDeleter {
  void operator()(spng_ctx* c) const { spng_ctx_free(c); }
};

Result<std::string> SpngEncode(const RgbImage& image) {
  std::unique_ptr<spng_ctx, SpngDeleter> ctx(spng_ctx_new(SPNG_CTX_ENCODER));
  if (!ctx) return Status::Internal("libspng: cannot create an encoder context");
  spng_set_option(ctx.get(), SPNG_ENCODE_TO_BUFFER, 1);
  spng_ihdr ihdr{};
  ihdr.width = static_cast<std::uint32_t>(image.width);
  ihdr.height = static_cast<std::uint32_t>(image.height);
  ihdr.bit_depth = 8;
  ihdr.color_type = SPNG_COLOR_TYPE_TRUECOLOR;
  int rc = spng_set_ihdr(ctx.get(), &ihdr);
  if (rc == 0) {
    rc = spng_encode_image(ctx.get(), image.pixels.data(), image.pixels.size(), SPNG_FMT_PNG,
                           SPNG_ENCODE_FINALIZE);
  }
  if (rc != 0) return Status::Internal(std::string("libspng encode failed: ") + spng_strerror(rc));
  std::size_t len = 0;
  int err = 0;
  void* buf = spng_get_png_buffer(ctx.get(), &len, &err);
  if (buf == nullptr || err != 0) {
    return Status::Internal(std::string("libspng: no output buffer: ") + spng_strerror(err));
  }
  std::string out(static_cast<const char*>(buf), len);
  std::free(buf);  // spng_get_png_buffer hands ownership to the caller (malloc'd)
  return out;
}
#endif

}  // namespace

std::string_view PngEncoderName() {
#ifdef TG_HAVE_SPNG
  return "libspng";
#else
  return "libpng";
#endif
}

Result<std::string> EncodePngLibpng(const RgbImage& image) {
  TG_RETURN_IF_ERROR(CheckImage(image));
  std::string out;
  out.reserve(image.pixels.size() / 2 + 1024);
  PngIo io;
  io.out = &out;
  if (!LibpngEncode(image, &io)) return Status::Internal(std::string("libpng: ") + io.error);
  return out;
}

Result<std::string> EncodePng(const RgbImage& image) {
#ifdef TG_HAVE_SPNG
  TG_RETURN_IF_ERROR(CheckImage(image));
  return SpngEncode(image);
#else
  return EncodePngLibpng(image);
#endif
}

Status WritePng(const std::string& path, const RgbImage& image) {
  TG_ASSIGN_OR_RETURN(std::string bytes, EncodePng(image));
  return common::WriteFileAtomic(path, bytes);
}

Result<RgbImage> DecodePng(const std::string& bytes, const std::string& source) {
  static constexpr unsigned char kSig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kSig, 8) != 0) {
    return Status::InvalidArg(source + ": not a PNG file (signature missing)");
  }
  PngIo io;
  io.in = &bytes;
  RgbImage image;
  if (!LibpngDecode(&io, &image)) {
    return Status::InvalidArg(source + ": invalid PNG: " + io.error);
  }
  return image;
}

}  // namespace tg::sd
