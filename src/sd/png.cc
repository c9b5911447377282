// PNG encode/decode. libpng reports errors through longjmp; every libpng call sits in a function
// with its own setjmp and no non-trivially-destructible locals live across the jump.
#include "sd/png.h"

#include <png.h>
#include <zlib.h>

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

// Encoder settings for speed (see png.h): zlib level 1, run-length matching, Sub filter on every
// row. Sub costs one subtraction per byte and lets RLE find the runs of smooth regions; adaptive
// filter choice and Paeth would double the time for a few percent of size.
constexpr int kZlibLevel = 1;
constexpr int kZlibStrategy = Z_RLE;

// PNG keyword rule (spec 11.3.4.2): 1-79 Latin-1 printable bytes, no leading, trailing or
// consecutive spaces.
Status CheckKeyword(const std::string& k) {
  bool ok = !k.empty() && k.size() <= 79 && k.front() != ' ' && k.back() != ' ' &&
            k.find("  ") == std::string::npos;
  for (unsigned char c : k) ok = ok && ((c >= 32 && c <= 126) || c >= 161);
  if (!ok) {
    return Status::InvalidArg("PNG text keyword '" + k +
                              "' is not allowed: 1-79 printable Latin-1 characters without "
                              "leading, trailing or double spaces are required");
  }
  return Status::Ok();
}

// tEXt holds Latin-1; printable ASCII and newlines are the same bytes in UTF-8.
bool IsPlainAscii(const std::string& t) {
  for (unsigned char c : t) {
    if (c != '\n' && (c < 32 || c > 126)) return false;
  }
  return true;
}

// Length of the valid UTF-8 sequence at s[i] (1-4), or 0 when it is not valid.
std::size_t Utf8SequenceLength(const std::string& s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
  if (n == 0 || c > 0xf4 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xc0) != 0x80) return 0;
  }
  // Overlong 3/4-byte forms, UTF-16 surrogates and code points above U+10FFFF.
  if ((c == 0xe0 && b(1) < 0xa0) || (c == 0xed && b(1) >= 0xa0) || (c == 0xf0 && b(1) < 0x90) ||
      (c == 0xf4 && b(1) >= 0x90)) {
    return 0;
  }
  return n;
}

// iTXt must be UTF-8 and no chunk text may hold NUL: invalid bytes become U+FFFD, NUL a space.
std::string CleanText(const std::string& t) {
  std::string out;
  out.reserve(t.size());
  for (std::size_t i = 0; i < t.size();) {
    const std::size_t n = Utf8SequenceLength(t, i);
    if (n == 0) {
      out += "\xef\xbf\xbd";
      ++i;
    } else {
      out.append(t, i, n);
      i += n;
    }
  }
  for (char& c : out) {
    if (c == '\0') c = ' ';
  }
  return out;
}

// Validated, cleaned copies of the caller's text chunks.
Result<std::vector<PngText>> PrepareText(const std::vector<PngText>& text) {
  std::vector<PngText> out;
  out.reserve(text.size());
  for (const PngText& t : text) {
    TG_RETURN_IF_ERROR(CheckKeyword(t.keyword));
    out.push_back({t.keyword, CleanText(t.text)});
  }
  return out;
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

// Returns false (with io->error set) on a libpng error. `texts` (png_text views of cleaned
// chunks) are written before the image data.
bool LibpngEncode(const RgbImage& image, png_textp texts, int num_text, PngIo* io) {
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
  png_set_compression_level(png, kZlibLevel);
  png_set_compression_strategy(png, kZlibStrategy);
  png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
  if (num_text > 0) png_set_text(png, info, texts, num_text);
  png_write_info(png, info);
  const std::size_t stride = static_cast<std::size_t>(image.width) * 3;
  for (int y = 0; y < image.height; ++y) {
    png_write_row(png, const_cast<png_bytep>(image.pixels.data() + y * stride));
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

// Latin-1 (tEXt, zTXt) to UTF-8.
std::string Latin1ToUtf8(const char* s, std::size_t n) {
  std::string out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      out += static_cast<char>(0xc0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3f));
    }
  }
  return out;
}

void CollectText(png_structp png, png_infop info, std::vector<PngText>* text) {
  png_textp t = nullptr;
  int n = 0;
  if (info == nullptr || png_get_text(png, info, &t, &n) <= 0) return;
  for (int i = 0; i < n; ++i) {
    const bool itxt = t[i].compression >= PNG_ITXT_COMPRESSION_NONE;
    const std::size_t len = itxt ? t[i].itxt_length : t[i].text_length;
    text->push_back({t[i].key, itxt ? std::string(t[i].text, len) : Latin1ToUtf8(t[i].text, len)});
  }
}

// Decodes into `out`, whose pixel buffer is sized once the header is known; with `text`, also
// collects the text chunks before and after the image data.
bool LibpngDecode(PngIo* io, RgbImage* out, std::vector<PngText>* text) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, io, OnPngError, OnPngWarning);
  if (png == nullptr) {
    std::snprintf(io->error, sizeof(io->error), "png_create_read_struct failed");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  png_infop end_info = info == nullptr ? nullptr : png_create_info_struct(png);
  if (end_info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, &end_info);
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
  png_read_end(png, end_info);
  if (text != nullptr) {
    CollectText(png, info, text);
    CollectText(png, end_info, text);
  }
  png_destroy_read_struct(&png, &info, &end_info);
  return true;
}

#ifdef TG_HAVE_SPNG
struct SpngDeleter {
  void operator()(spng_ctx* c) const { spng_ctx_free(c); }
};

Result<std::string> SpngEncode(const RgbImage& image, const std::vector<PngText>& text) {
  std::unique_ptr<spng_ctx, SpngDeleter> ctx(spng_ctx_new(SPNG_CTX_ENCODER));
  if (!ctx) return Status::Unavailable("libspng: cannot create an encoder context");
  spng_set_option(ctx.get(), SPNG_ENCODE_TO_BUFFER, 1);
  spng_set_option(ctx.get(), SPNG_IMG_COMPRESSION_LEVEL, kZlibLevel);
  spng_set_option(ctx.get(), SPNG_IMG_COMPRESSION_STRATEGY, kZlibStrategy);
  spng_set_option(ctx.get(), SPNG_FILTER_CHOICE, SPNG_FILTER_CHOICE_SUB);
  // spng_set_text copies the chunks; the views below only need to live until that call.
  std::vector<spng_text> chunks(text.size());
  char empty[1] = {0};
  for (std::size_t i = 0; i < text.size(); ++i) {
    spng_text& c = chunks[i];
    std::snprintf(c.keyword, sizeof(c.keyword), "%s", text[i].keyword.c_str());
    c.type = IsPlainAscii(text[i].text) ? SPNG_TEXT : SPNG_ITXT;
    c.length = text[i].text.size();
    c.text = const_cast<char*>(text[i].text.data());
    c.language_tag = empty;
    c.translated_keyword = empty;
  }
  if (!chunks.empty()) {
    const int rc =
        spng_set_text(ctx.get(), chunks.data(), static_cast<std::uint32_t>(chunks.size()));
    if (rc != 0)
      return Status::Unavailable(std::string("libspng text chunk: ") + spng_strerror(rc));
  }
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
  if (rc != 0)
    return Status::Unavailable(std::string("libspng encode failed: ") + spng_strerror(rc));
  std::size_t len = 0;
  int err = 0;
  void* buf = spng_get_png_buffer(ctx.get(), &len, &err);
  if (buf == nullptr || err != 0) {
    return Status::Unavailable(std::string("libspng: no output buffer: ") + spng_strerror(err));
  }
  std::string out(static_cast<const char*>(buf), len);
  std::free(buf);  // spng_get_png_buffer hands ownership to the caller (malloc'd)
  return out;
}
#endif

Status CheckSignature(const std::string& bytes, const std::string& source) {
  static constexpr unsigned char kSig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kSig, 8) != 0) {
    return Status::InvalidArg(source + ": not a PNG file (signature missing)");
  }
  return Status::Ok();
}

}  // namespace

std::string_view PngEncoderName() {
#ifdef TG_HAVE_SPNG
  return "libspng";
#else
  return "libpng";
#endif
}

Result<std::string> EncodePngLibpng(const RgbImage& image, const std::vector<PngText>& text) {
  TG_RETURN_IF_ERROR(CheckImage(image));
  TG_ASSIGN_OR_RETURN(std::vector<PngText> clean, PrepareText(text));
  // Views for libpng (which copies them in png_set_text), built before the setjmp scope.
  std::vector<png_text> views(clean.size());
  for (std::size_t i = 0; i < clean.size(); ++i) {
    png_text& v = views[i];
    v.compression =
        IsPlainAscii(clean[i].text) ? PNG_TEXT_COMPRESSION_NONE : PNG_ITXT_COMPRESSION_NONE;
    v.key = clean[i].keyword.data();
    v.text = clean[i].text.data();
    v.text_length = v.compression == PNG_TEXT_COMPRESSION_NONE ? clean[i].text.size() : 0;
    v.itxt_length = v.compression == PNG_TEXT_COMPRESSION_NONE ? 0 : clean[i].text.size();
  }
  std::string out;
  out.reserve(image.pixels.size() + 1024);
  PngIo io;
  io.out = &out;
  if (!LibpngEncode(image, views.data(), static_cast<int>(views.size()), &io)) {
    return Status::Unavailable(std::string("libpng: ") + io.error);
  }
  return out;
}

Result<std::string> EncodePng(const RgbImage& image, const std::vector<PngText>& text) {
#ifdef TG_HAVE_SPNG
  TG_RETURN_IF_ERROR(CheckImage(image));
  TG_ASSIGN_OR_RETURN(std::vector<PngText> clean, PrepareText(text));
  return SpngEncode(image, clean);
#else
  return EncodePngLibpng(image, text);
#endif
}

Status WritePng(const std::string& path, const RgbImage& image, const std::vector<PngText>& text) {
  TG_ASSIGN_OR_RETURN(std::string bytes, EncodePng(image, text));
  return common::WriteFileAtomic(path, bytes);
}

Result<RgbImage> DecodePng(const std::string& bytes, const std::string& source) {
  TG_RETURN_IF_ERROR(CheckSignature(bytes, source));
  PngIo io;
  io.in = &bytes;
  RgbImage image;
  if (!LibpngDecode(&io, &image, nullptr)) {
    return Status::InvalidArg(source + ": invalid PNG: " + io.error);
  }
  return image;
}

Result<std::vector<PngText>> ReadPngText(const std::string& bytes, const std::string& source) {
  TG_RETURN_IF_ERROR(CheckSignature(bytes, source));
  PngIo io;
  io.in = &bytes;
  RgbImage image;
  std::vector<PngText> text;
  if (!LibpngDecode(&io, &image, &text)) {
    return Status::InvalidArg(source + ": invalid PNG: " + io.error);
  }
  return text;
}

}  // namespace tg::sd
