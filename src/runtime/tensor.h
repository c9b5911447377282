// Host tensors exchanged with runtime::Session (public API: no ONNX Runtime types).
//
// A Tensor owns one contiguous, row-major host buffer plus its element type and shape. It is a
// plain value type (copyable, movable); copies are deep. Not synchronised: share a Tensor between
// threads only for reading. Dimensions are >= 0 in a Tensor; -1 ("dynamic") appears only in
// TensorInfo, which describes a model's declared inputs and outputs.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/status.h"

namespace tg::runtime {

enum class DataType {
  kUnknown = 0,
  kFloat32,
  kFloat16,
  kFloat64,
  kBFloat16,
  kInt8,
  kUint8,
  kInt16,
  kUint16,
  kInt32,
  kInt64,
  kBool,
};

// "float32", "float16", ... ("unknown" for kUnknown).
std::string_view DataTypeName(DataType dtype);
// Bytes per element (0 for kUnknown).
std::size_t DataTypeSize(DataType dtype);
// Parses DataTypeName() output and numpy strings ("<f4", "<i8", "|b1" ...); else INVALID_ARG.
common::Result<DataType> ParseDataType(std::string_view name);

// The DataType that corresponds to a C++ element type (kFloat16 is uint16_t storage; use
// Tensor::data<uint16_t>() for fp16 and bf16 bits).
template <typename T>
constexpr DataType DataTypeOf() {
  if constexpr (std::is_same_v<T, float>) return DataType::kFloat32;
  if constexpr (std::is_same_v<T, double>) return DataType::kFloat64;
  if constexpr (std::is_same_v<T, std::int8_t>) return DataType::kInt8;
  if constexpr (std::is_same_v<T, std::uint8_t>) return DataType::kUint8;
  if constexpr (std::is_same_v<T, std::int16_t>) return DataType::kInt16;
  if constexpr (std::is_same_v<T, std::int32_t>) return DataType::kInt32;
  if constexpr (std::is_same_v<T, std::int64_t>) return DataType::kInt64;
  if constexpr (std::is_same_v<T, bool>) return DataType::kBool;
  return DataType::kUnknown;
}

// IEEE 754 binary16 conversions (round-to-nearest-even; Inf preserved; NaN stays NaN with its
// payload truncated/extended and the quiet bit set, as x86's F16C instructions do).
float HalfToFloat(std::uint16_t bits);
std::uint16_t FloatToHalf(float value);

// Bulk conversions of n values, bit-identical to the scalar functions above. kAuto uses the CPU's
// F16C instructions when common::CpuHasF16c() (checked once at run time) and the scalar code
// otherwise; kScalar / kF16c force one kernel (tests compare them; kF16c without
// common::CpuHasF16c() falls back to scalar). src and dst must not overlap. Thread-safe.
enum class Fp16Kernel { kAuto, kScalar, kF16c };
void HalfToFloatN(const std::uint16_t* src, float* dst, std::size_t n,
                  Fp16Kernel kernel = Fp16Kernel::kAuto);
void FloatToHalfN(const float* src, std::uint16_t* dst, std::size_t n,
                  Fp16Kernel kernel = Fp16Kernel::kAuto);

// "[1,4,64,64]"; -1 printed as "?".
std::string ShapeToString(const std::vector<std::int64_t>& shape);
// Product of dims (1 for a scalar); -1 if any dim is negative or the product overflows.
std::int64_t ElementCount(const std::vector<std::int64_t>& shape);

struct TensorInfo {
  std::string name;
  DataType dtype = DataType::kUnknown;
  std::vector<std::int64_t> shape;     // -1 for a dynamic dimension
  std::vector<std::string> dim_names;  // symbolic names of dynamic dims ("" when fixed/unnamed)
};

class Tensor {
 public:
  Tensor() = default;  // empty(): dtype kUnknown, no shape, no bytes
  // Zero-filled tensor. Invalid shapes (negative dims) give an empty tensor of that dtype; use
  // Create() to get an error instead.
  Tensor(DataType dtype, std::vector<std::int64_t> shape);

  // Zero-filled tensor; INVALID_ARG for kUnknown, negative dims or sizes over 16 GiB.
  static common::Result<Tensor> Create(DataType dtype, std::vector<std::int64_t> shape);
  // Takes `bytes` as the buffer; INVALID_ARG when its size does not match dtype x shape.
  static common::Result<Tensor> FromBytes(DataType dtype, std::vector<std::int64_t> shape,
                                          std::string bytes);
  // Typed constructor; INVALID_ARG when values.size() != product(shape).
  template <typename T>
  static common::Result<Tensor> FromVector(std::vector<std::int64_t> shape,
                                           const std::vector<T>& values) {
    auto t = Create(DataTypeOf<T>(), std::move(shape));
    if (!t.ok()) return t.status();
    if (static_cast<std::int64_t>(values.size()) != t->element_count()) {
      return common::Status::InvalidArg("tensor of shape " + ShapeToString(t->shape()) + " needs " +
                                        std::to_string(t->element_count()) + " values, got " +
                                        std::to_string(values.size()));
    }
    if constexpr (std::is_same_v<T, bool>) {
      for (std::size_t i = 0; i < values.size(); ++i) t->bytes_[i] = values[i] ? 1 : 0;
    } else if (!values.empty()) {
      std::memcpy(t->bytes_.data(), values.data(), values.size() * sizeof(T));
    }
    return t;
  }
  // fp16 tensor from float values (FloatToHalf each); INVALID_ARG as FromVector.
  static common::Result<Tensor> Float16FromFloats(std::vector<std::int64_t> shape,
                                                  const std::vector<float>& values);
  // Accessors; element_count() is ElementCount(shape()), byte_size() the buffer's length.
  DataType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  std::int64_t element_count() const { return ElementCount(shape_); }
  std::size_t byte_size() const { return bytes_.size(); }
  bool empty() const { return dtype_ == DataType::kUnknown; }
  // The buffer, owned by the tensor: valid until the tensor is assigned to, moved or destroyed.
  void* raw_data() { return bytes_.data(); }
  const void* raw_data() const { return bytes_.data(); }
  const std::string& bytes() const { return bytes_; }

  // Typed element access; the caller must match dtype (uint16_t for fp16/bf16 bits, uint8_t or
  // bool for kBool). Mismatch is a programming error (asserted in debug builds, nullptr in
  // release).
  template <typename T>
  T* data() {
    return TypeMatches<T>() ? reinterpret_cast<T*>(bytes_.data()) : nullptr;
  }
  template <typename T>
  const T* data() const {
    return TypeMatches<T>() ? reinterpret_cast<const T*>(bytes_.data()) : nullptr;
  }

  // Values widened to float (fp32, fp16, bf16, fp64, integer and bool tensors).
  std::vector<float> ToFloatVector() const;
  // Converted copies: fp16 -> fp32 and fp32 -> fp16 (others: UNSUPPORTED).
  common::Result<Tensor> ToFloat32() const;
  common::Result<Tensor> ToFloat16() const;

  // Lowercase hex SHA-256 over dtype name, shape and bytes (the `run` output checksum).
  std::string Checksum() const;
  // Bitwise equality of dtype, shape and buffer.
  bool BitwiseEquals(const Tensor& other) const {
    return dtype_ == other.dtype_ && shape_ == other.shape_ && bytes_ == other.bytes_;
  }

 private:
  template <typename T>
  bool TypeMatches() const {
    if constexpr (std::is_same_v<T, std::uint16_t>) {
      return dtype_ == DataType::kFloat16 || dtype_ == DataType::kBFloat16 ||
             dtype_ == DataType::kUint16;
    } else if constexpr (std::is_same_v<T, std::uint8_t>) {
      return dtype_ == DataType::kUint8 || dtype_ == DataType::kBool;
    } else {
      return DataTypeOf<T>() == dtype_;
    }
  }

  DataType dtype_ = DataType::kUnknown;
  std::vector<std::int64_t> shape_;
  std::string bytes_;  // std::string: contiguous, value semantics, cheap moves
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// Deterministic pseudo-random tensor (seeded splitmix64): floats uniform in [-1, 1), integers in
// [0, 10), bools 0/1. INVALID_ARG for unknown dtypes or invalid shapes.
common::Result<Tensor> RandomTensor(DataType dtype, const std::vector<std::int64_t>& shape,
                                    std::uint64_t seed);

// Reads a .npy file (v1/v2/v3 headers, C order, little-endian) into a Tensor. Errors name the
// file and what was found (fortran order, big-endian, unsupported dtype, truncated data). At most
// `max_data_bytes` of tensor data (plus a 64 KiB header allowance) is read: pass the input's
// expected byte size when it is known, so /dev/zero-like or oversized files stop early.
common::Result<Tensor> LoadNpy(const std::string& path, std::uint64_t max_data_bytes = 0);
// Serialises a Tensor as .npy (v1 header).
std::string EncodeNpy(const Tensor& tensor);
// Parses .npy bytes; `source` names the origin in messages.
common::Result<Tensor> DecodeNpy(const std::string& bytes, const std::string& source);

}  // namespace tg::runtime
