#include "runtime/tensor.h"

#include <algorithm>
#include <cctype>

#include <bit>
#include <cmath>
#include <limits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "common/cpu_features.h"
#include "common/file_util.h"

namespace tg::runtime {
namespace {

// A tensor larger than this is refused rather than allocated (a hostile .npy header or a typo in a
// shape must not exhaust memory).
constexpr std::uint64_t kMaxTensorBytes = 16ull << 30;

struct DtypeEntry {
  DataType dtype;
  std::string_view name;
  std::size_t size;
  std::string_view npy;  // numpy descr without the byte-order character
};

constexpr DtypeEntry kDtypes[] = {
    {DataType::kFloat32, "float32", 4, "f4"}, {DataType::kFloat16, "float16", 2, "f2"},
    {DataType::kFloat64, "float64", 8, "f8"}, {DataType::kBFloat16, "bfloat16", 2, ""},
    {DataType::kInt8, "int8", 1, "i1"},       {DataType::kUint8, "uint8", 1, "u1"},
    {DataType::kInt16, "int16", 2, "i2"},     {DataType::kUint16, "uint16", 2, "u2"},
    {DataType::kInt32, "int32", 4, "i4"},     {DataType::kInt64, "int64", 8, "i8"},
    {DataType::kBool, "bool", 1, "b1"},
};

const DtypeEntry* Find(DataType d) {
  for (const auto& e : kDtypes) {
    if (e.dtype == d) return &e;
  }
  return nullptr;
}

}  // namespace

std::string_view DataTypeName(DataType dtype) {
  const DtypeEntry* e = Find(dtype);
  return e ? e->name : "unknown";
}

std::size_t DataTypeSize(DataType dtype) {
  const DtypeEntry* e = Find(dtype);
  return e ? e->size : 0;
}

common::Result<DataType> ParseDataType(std::string_view name) {
  std::string_view n = name;
  if (!n.empty() && (n[0] == '<' || n[0] == '|' || n[0] == '=')) n.remove_prefix(1);
  for (const auto& e : kDtypes) {
    if (n == e.name || (!e.npy.empty() && n == e.npy)) return e.dtype;
  }
  if (n == "float") return DataType::kFloat32;
  if (n == "half") return DataType::kFloat16;
  return common::Status::InvalidArg("unsupported data type '" + std::string(name) + "'");
}

float HalfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | (static_cast<std::uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {  // Inf, or NaN made quiet (what vcvtph2ps returns)
    bits = sign | 0x7f800000u | (mant << 13) | (mant != 0 ? 0x400000u : 0u);
  } else {
    bits = sign | ((exp + (127 - 15)) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

std::uint16_t FloatToHalf(float value) {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(value);
  const std::uint16_t sign = static_cast<std::uint16_t>((f >> 16) & 0x8000u);
  const std::uint32_t exp = (f >> 23) & 0xffu;
  std::uint32_t mant = f & 0x7fffffu;
  if (exp == 0xff) {  // Inf / NaN (keep NaN quiet and non-zero)
    return static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
  }
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow -> Inf
  if (e <= 0) {
    if (e < -10) return sign;  // underflow -> signed zero
    mant |= 0x800000u;         // implicit bit
    const int shift = 14 - e;
    std::uint32_t half_mant = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<std::uint16_t>(sign | half_mant);
  }
  std::uint32_t half = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  const std::uint32_t rem = mant & 0x1fffu;
  // Round to nearest even; a carry into the exponent is the correct result (may become Inf).
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<std::uint16_t>(sign | half);
}

// ---------------------------------------------------------------------------------------------
// Bulk fp16 conversion. The F16C kernels are compiled for that instruction set only (the rest of
// the binary stays baseline x86-64) and chosen after a cpuid check, so one binary runs everywhere.
// vcvtps2ph with rounding immediate 0 rounds to nearest even and ignores MXCSR's FTZ/DAZ, which is
// exactly the scalar FloatToHalf; vcvtph2ps is exact. tensor_test checks every half value and the
// rounding ties against the scalar code.

namespace {

#if defined(__x86_64__) || defined(__i386__)
#define TG_HAVE_F16C_KERNELS 1

__attribute__((target("avx,f16c"))) void HalfToFloatF16c(const std::uint16_t* src, float* dst,
                                                         std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = HalfToFloat(src[i]);
}

__attribute__((target("avx,f16c"))) void FloatToHalfF16c(const float* src, std::uint16_t* dst,
                                                         std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = FloatToHalf(src[i]);
}
#else
#define TG_HAVE_F16C_KERNELS 0
#endif

}  // namespace

void HalfToFloatN(const std::uint16_t* src, float* dst, std::size_t n, Fp16Kernel kernel) {
#if TG_HAVE_F16C_KERNELS
  if (kernel != Fp16Kernel::kScalar && common::CpuHasF16c()) return HalfToFloatF16c(src, dst, n);
#endif
  for (std::size_t i = 0; i < n; ++i) dst[i] = HalfToFloat(src[i]);
}

void FloatToHalfN(const float* src, std::uint16_t* dst, std::size_t n, Fp16Kernel kernel) {
#if TG_HAVE_F16C_KERNELS
  if (kernel != Fp16Kernel::kScalar && common::CpuHasF16c()) return FloatToHalfF16c(src, dst, n);
#endif
  for (std::size_t i = 0; i < n; ++i) dst[i] = FloatToHalf(src[i]);
}

std::string ShapeToString(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += shape[i] < 0 ? "?" : std::to_string(shape[i]);
  }
  return s + "]";
}

std::int64_t ElementCount(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

Tensor::Tensor(DataType dtype, std::vector<std::int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)) {
  const std::int64_t n = ElementCount(shape_);
  const std::uint64_t bytes = n < 0 ? 0 : static_cast<std::uint64_t>(n) * DataTypeSize(dtype_);
  if (n >= 0 && bytes <= kMaxTensorBytes) bytes_.assign(static_cast<std::size_t>(bytes), '\0');
}

common::Result<Tensor> Tensor::Create(DataType dtype, std::vector<std::int64_t> shape) {
  if (DataTypeSize(dtype) == 0) return common::Status::InvalidArg("tensor of unknown data type");
  const std::int64_t n = ElementCount(shape);
  if (n < 0) {
    const auto neg = std::find_if(shape.begin(), shape.end(), [](auto d) { return d < 0; });
    // The dimensions as given: ShapeToString writes a negative (dynamic) one as "?".
    std::string dims;
    for (std::int64_t d : shape) {
      if (!dims.empty()) dims += ',';
      dims += std::to_string(d);
    }
    return common::Status::InvalidArg(
        "invalid tensor shape [" + dims + "]" +
        (neg != shape.end() ? " (dimension " + std::to_string(neg - shape.begin()) + " is " +
                                  std::to_string(*neg) + "; dimensions must be >= 0)"
                            : " (the product of the dimensions overflows a 64-bit element count)"));
  }
  // Divided, not multiplied: n * size can itself wrap past 2^64.
  if (static_cast<std::uint64_t>(n) > kMaxTensorBytes / DataTypeSize(dtype)) {
    return common::Status::InvalidArg("tensor of shape " + ShapeToString(shape) +
                                      " exceeds the 16 GiB limit");
  }
  return Tensor(dtype, std::move(shape));
}

common::Result<Tensor> Tensor::FromBytes(DataType dtype, std::vector<std::int64_t> shape,
                                         std::string bytes) {
  auto t = Create(dtype, std::move(shape));
  if (!t.ok()) return t.status();
  if (bytes.size() != t->bytes_.size()) {
    return common::Status::InvalidArg(
        "tensor " + std::string(DataTypeName(dtype)) + ShapeToString(t->shape_) + " needs " +
        std::to_string(t->bytes_.size()) + " bytes, got " + std::to_string(bytes.size()));
  }
  t->bytes_ = std::move(bytes);
  return t;
}

common::Result<Tensor> Tensor::Float16FromFloats(std::vector<std::int64_t> shape,
                                                 const std::vector<float>& values) {
  auto t = Create(DataType::kFloat16, std::move(shape));
  if (!t.ok()) return t.status();
  if (static_cast<std::int64_t>(values.size()) != t->element_count()) {
    return common::Status::InvalidArg("fp16 tensor of shape " + ShapeToString(t->shape()) +
                                      " needs " + std::to_string(t->element_count()) +
                                      " values, got " + std::to_string(values.size()));
  }
  FloatToHalfN(values.data(), t->data<std::uint16_t>(), values.size());
  return t;
}

std::vector<float> Tensor::ToFloatVector() const {
  const std::int64_t n = element_count();
  std::vector<float> v(n < 0 ? 0 : static_cast<std::size_t>(n));
  const char* p = bytes_.data();
  for (std::size_t i = 0; i < v.size(); ++i) {
    switch (dtype_) {
#define TG_CASE(DT, T)                             \
  case DT: {                                       \
    T x;                                           \
    std::memcpy(&x, p + i * sizeof(T), sizeof(T)); \
    v[i] = static_cast<float>(x);                  \
    break;                                         \
  }
      TG_CASE(DataType::kFloat32, float)
      TG_CASE(DataType::kFloat64, double)
      TG_CASE(DataType::kInt8, std::int8_t)
      TG_CASE(DataType::kUint8, std::uint8_t)
      TG_CASE(DataType::kInt16, std::int16_t)
      TG_CASE(DataType::kUint16, std::uint16_t)
      TG_CASE(DataType::kInt32, std::int32_t)
      TG_CASE(DataType::kInt64, std::int64_t)
      TG_CASE(DataType::kBool, std::uint8_t)
#undef TG_CASE
      case DataType::kFloat16: {
        std::uint16_t h;
        std::memcpy(&h, p + i * 2, 2);
        v[i] = HalfToFloat(h);
        break;
      }
      case DataType::kBFloat16: {
        std::uint16_t h;
        std::memcpy(&h, p + i * 2, 2);
        v[i] = std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
        break;
      }
      case DataType::kUnknown:
        break;
    }
  }
  return v;
}

common::Result<Tensor> Tensor::ToFloat32() const {
  if (dtype_ == DataType::kFloat32) return *this;
  if (dtype_ != DataType::kFloat16 && dtype_ != DataType::kBFloat16 &&
      dtype_ != DataType::kFloat64) {
    return common::Status::Unsupported("cannot convert " + std::string(DataTypeName(dtype_)) +
                                       " tensor to float32");
  }
  return FromVector<float>(shape_, ToFloatVector());
}

common::Result<Tensor> Tensor::ToFloat16() const {
  if (dtype_ == DataType::kFloat16) return *this;
  if (dtype_ != DataType::kFloat32) {
    return common::Status::Unsupported("cannot convert " + std::string(DataTypeName(dtype_)) +
                                       " tensor to float16");
  }
  return Float16FromFloats(shape_, ToFloatVector());
}

std::string Tensor::Checksum() const {
  std::string header = std::string(DataTypeName(dtype_)) + ShapeToString(shape_) + ":";
  std::string all = header + bytes_;
  return common::Sha256Hex(all.data(), all.size());
}

common::Result<Tensor> RandomTensor(DataType dtype, const std::vector<std::int64_t>& shape,
                                    std::uint64_t seed) {
  auto t = Tensor::Create(dtype, shape);
  if (!t.ok()) return t.status();
  std::uint64_t state = seed;
  auto next = [&state] {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  const std::int64_t n = t->element_count();
  char* p = static_cast<char*>(t->raw_data());
  const std::size_t es = DataTypeSize(dtype);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t r = next();
    const float f = static_cast<float>(static_cast<double>(r >> 11) * 0x1.0p-53 * 2.0 - 1.0);
    char* dst = p + i * es;
    switch (dtype) {
      case DataType::kFloat32:
        std::memcpy(dst, &f, 4);
        break;
      case DataType::kFloat64: {
        const double d = f;
        std::memcpy(dst, &d, 8);
        break;
      }
      case DataType::kFloat16: {
        const std::uint16_t h = FloatToHalf(f);
        std::memcpy(dst, &h, 2);
        break;
      }
      case DataType::kBFloat16: {
        const std::uint16_t h = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(f) >> 16);
        std::memcpy(dst, &h, 2);
        break;
      }
      case DataType::kBool:
        *dst = static_cast<char>(r & 1);
        break;
      default: {  // integers: small non-negative values (valid indices for most models)
        const std::int64_t v = static_cast<std::int64_t>(r % 10);
        std::memcpy(dst, &v, es);  // little-endian: low bytes carry the value
        break;
      }
    }
  }
  return t;
}

// ---------------------------------------------------------------------------------------------
// .npy

std::string EncodeNpy(const Tensor& t) {
  const DtypeEntry* e = Find(t.dtype());
  std::string descr(e && !e->npy.empty() ? e->npy
                                         : std::string_view("u2"));  // bf16 has no numpy dtype
  std::string prefix = (descr == "b1" || descr == "i1" || descr == "u1") ? "|" : "<";
  std::string shape = "(";
  for (std::size_t i = 0; i < t.shape().size(); ++i) {
    shape += std::to_string(t.shape()[i]);
    if (t.shape().size() == 1 || i + 1 < t.shape().size()) shape += ",";
    if (i + 1 < t.shape().size()) shape += " ";
  }
  shape += ")";
  std::string dict =
      "{'descr': '" + prefix + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so the data starts on a 64-byte boundary (magic 6 + version 2 + length 2 = 10).
  std::size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  out += dict;
  out += t.bytes();
  return out;
}

namespace {

// Value of 'key' in the npy header dict (text up to the next top-level ',' or '}').
std::string DictValue(const std::string& dict, const std::string& key) {
  std::size_t k = dict.find("'" + key + "'");
  if (k == std::string::npos) k = dict.find("\"" + key + "\"");
  if (k == std::string::npos) return "";
  std::size_t colon = dict.find(':', k);
  if (colon == std::string::npos) return "";
  std::size_t i = colon + 1;
  while (i < dict.size() && dict[i] == ' ') ++i;
  std::size_t end = i;
  int depth = 0;
  for (; end < dict.size(); ++end) {
    char c = dict[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  std::string v = dict.substr(i, end - i);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"')) v = v.substr(1, v.size() - 2);
  return v;
}

// The header's shape, a Python tuple literal of non-negative integers: "()", "(3,)", "(1, 4)".
// Anything else (an expression such as (1+2,), a sign, a float) is refused, not read in part.
common::Result<std::vector<std::int64_t>> ParseNpyShape(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return common::Status::InvalidArg("shape " + text + ": " + why);
  };
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') {
    return bad("not a tuple of integers such as (1, 4)");
  }
  std::vector<std::int64_t> shape;
  std::size_t i = 1;
  const std::size_t end = text.size() - 1;
  auto skip = [&] {
    while (i < end && text[i] == ' ') ++i;
  };
  for (skip(); i < end;) {
    const std::size_t start = i;
    if (text[i] == '-' || text[i] == '+') ++i;
    while (i < end && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    const std::string dim = text.substr(start, i - start);
    if (i < end && text[i] == 'L') ++i;  // Python 2 long literal
    skip();
    if (dim.empty() || !std::isdigit(static_cast<unsigned char>(dim.back())) ||
        (i < end && text[i] != ',')) {
      return bad("element " + std::to_string(shape.size()) + " is not an integer literal (found '" +
                 text.substr(start, i - start + 1) + "')");
    }
    if (dim[0] == '-') return bad("dimension " + dim + " is negative; dimensions are >= 0");
    const std::string digits = dim[0] == '+' ? dim.substr(1) : dim;
    if (digits.size() > 18) {
      return bad("dimension " + digits + " overflows a 64-bit dimension");
    }
    shape.push_back(std::stoll(digits));
    if (i < end) ++i;  // the comma
    skip();
  }
  if (shape.size() > 32) return bad("more than 32 dimensions");
  return shape;
}

}  // namespace

common::Result<Tensor> DecodeNpy(const std::string& bytes, const std::string& source) {
  auto bad = [&](const std::string& why) {
    return common::Status::InvalidArg(source + ": not a valid .npy file: " + why);
  };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return bad("missing magic");
  const int major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_len;
  std::size_t offset;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) |
                 (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad("truncated header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) {
      header_len |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    }
    offset = 12;
  } else {
    return bad("unsupported version " + std::to_string(major));
  }
  if (bytes.size() < offset + header_len) return bad("truncated header");
  const std::string dict = bytes.substr(offset, header_len);
  const std::string descr = DictValue(dict, "descr");
  if (descr.empty()) return bad("header has no 'descr'");
  if (descr[0] == '>') return bad("big-endian data ('" + descr + "') is not supported");
  if (DictValue(dict, "fortran_order") == "True") return bad("fortran_order arrays not supported");
  auto dtype = ParseDataType(descr);
  if (!dtype.ok()) return bad("unsupported dtype '" + descr + "'");
  std::string shape_text = DictValue(dict, "shape");
  if (shape_text.size() < 2 || shape_text.front() != '(' || shape_text.back() != ')') {
    return bad("malformed shape '" + shape_text + "'");
  }
  auto shape = ParseNpyShape(shape_text);
  if (!shape.ok()) return bad(shape.status().message());
  auto t = Tensor::Create(*dtype, *shape);
  if (!t.ok()) return t.status().WithPrefix(source);
  const std::size_t data_off = offset + header_len;
  if (bytes.size() - data_off != t->byte_size()) {
    return bad("data has " + std::to_string(bytes.size() - data_off) + " bytes, shape " +
               ShapeToString(*shape) + " of " + std::string(DataTypeName(*dtype)) + " needs " +
               std::to_string(t->byte_size()));
  }
  return Tensor::FromBytes(*dtype, *shape, bytes.substr(data_off));
}

common::Result<Tensor> LoadNpy(const std::string& path, std::uint64_t max_data_bytes) {
  const std::uint64_t cap =
      max_data_bytes == 0 || max_data_bytes > kMaxTensorBytes ? kMaxTensorBytes : max_data_bytes;
  auto data = common::ReadFileLimited(path, cap + (64u << 10));
  if (!data.ok()) return data.status();
  return DecodeNpy(*data, path);
}

}  // namespace tg::runtime
