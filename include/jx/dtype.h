// Element types, their C++ counterparts and NumPy/JAX type promotion.
#pragma once

#include <complex>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "jx/error.h"

namespace jx {

enum class DType : uint8_t {
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt32,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Complex64,
  Complex128,
};
inline constexpr int kNumDTypes = 13;

// NumPy's spelling, usable as jx::float32 or jnp::float32.
inline constexpr DType bool_ = DType::Bool;
inline constexpr DType int8 = DType::Int8;
inline constexpr DType int16 = DType::Int16;
inline constexpr DType int32 = DType::Int32;
inline constexpr DType int64 = DType::Int64;
inline constexpr DType uint8 = DType::UInt8;
inline constexpr DType uint32 = DType::UInt32;
inline constexpr DType float16 = DType::Float16;
inline constexpr DType bfloat16 = DType::BFloat16;
inline constexpr DType float32 = DType::Float32;
inline constexpr DType float64 = DType::Float64;
inline constexpr DType complex64 = DType::Complex64;
inline constexpr DType complex128 = DType::Complex128;

// IEEE binary16, stored as bits; arithmetic goes through float.
struct float16_t {
  uint16_t bits = 0;
  float16_t() = default;
  float16_t(float f) : bits(from_float(f)) {}  // NOLINT: implicit like a numeric type
  operator float() const { return to_float(bits); }
  static float16_t from_bits(uint16_t b) {
    float16_t h;
    h.bits = b;
    return h;
  }
  static uint16_t from_float(float f);
  static float to_float(uint16_t h);
};

// bfloat16: the top half of a float32, rounded to nearest even.
struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  bfloat16_t(float f) : bits(from_float(f)) {}  // NOLINT
  operator float() const { return to_float(bits); }
  static bfloat16_t from_bits(uint16_t b) {
    bfloat16_t h;
    h.bits = b;
    return h;
  }
  static uint16_t from_float(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
  }
  static float to_float(uint16_t h) {
    uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

using complex64_t = std::complex<float>;
using complex128_t = std::complex<double>;

enum class DTypeKind : uint8_t { Bool, SignedInt, UnsignedInt, Float, Complex };

struct DTypeInfo {
  std::string_view name;  // NumPy's name: "float32"
  int itemsize;           // bytes
  DTypeKind kind;
};

const DTypeInfo& dtype_info(DType d);
inline std::string_view dtype_name(DType d) { return dtype_info(d).name; }
inline int itemsize(DType d) { return dtype_info(d).itemsize; }
inline bool is_bool(DType d) { return d == DType::Bool; }
inline bool is_integer(DType d) {
  auto k = dtype_info(d).kind;
  return k == DTypeKind::SignedInt || k == DTypeKind::UnsignedInt;
}
inline bool is_unsigned(DType d) { return dtype_info(d).kind == DTypeKind::UnsignedInt; }
inline bool is_floating(DType d) { return dtype_info(d).kind == DTypeKind::Float; }
inline bool is_complex(DType d) { return dtype_info(d).kind == DTypeKind::Complex; }
// Floating or complex: the dtypes that carry tangents.
inline bool is_inexact(DType d) { return is_floating(d) || is_complex(d); }
// Parses a NumPy dtype name ("float32", "int64", "bool"); throws jx::Error otherwise.
DType dtype_from_name(std::string_view name);
std::ostream& operator<<(std::ostream& os, DType d);

// The real dtype of a complex one (complex64 -> float32); identity otherwise.
DType real_dtype(DType d);
// The complex dtype holding a real one (float32 -> complex64).
DType complex_dtype(DType d);

// Defaults, as JAX without x64: literals without a dtype become these.
inline constexpr DType kDefaultFloat = DType::Float32;
inline constexpr DType kDefaultInt = DType::Int32;
inline constexpr DType kDefaultComplex = DType::Complex64;

// JAX's type promotion lattice. A weak dtype is that of a C++ scalar: it takes part
// only by kind (bool < int < float < complex) and yields to any strong dtype of the
// same or a higher kind, so `x * 2.0` keeps x's float32.
struct TypedDType {
  DType dtype;
  bool weak = false;
};
TypedDType promote_types(TypedDType a, TypedDType b);
inline DType promote_types(DType a, DType b) { return promote_types({a, false}, {b, false}).dtype; }

// C++ type <-> DType.
template <class T>
struct dtype_of_t;
#define JX_DTYPE_OF(T, D)                      \
  template <>                                  \
  struct dtype_of_t<T> {                       \
    static constexpr DType value = DType::D; \
  };
JX_DTYPE_OF(bool, Bool)
JX_DTYPE_OF(int8_t, Int8)
JX_DTYPE_OF(int16_t, Int16)
JX_DTYPE_OF(int32_t, Int32)
JX_DTYPE_OF(int64_t, Int64)
JX_DTYPE_OF(uint8_t, UInt8)
JX_DTYPE_OF(uint32_t, UInt32)
JX_DTYPE_OF(float16_t, Float16)
JX_DTYPE_OF(bfloat16_t, BFloat16)
JX_DTYPE_OF(float, Float32)
JX_DTYPE_OF(double, Float64)
JX_DTYPE_OF(complex64_t, Complex64)
JX_DTYPE_OF(complex128_t, Complex128)
#undef JX_DTYPE_OF
// `long long` differs from int64_t on LP64 but is the same width.
template <>
struct dtype_of_t<long long> {
  static constexpr DType value = sizeof(long long) == 8 ? DType::Int64 : DType::Int32;
};
template <class T>
inline constexpr DType dtype_of = dtype_of_t<std::remove_cvref_t<T>>::value;

template <class T>
concept Element = requires { dtype_of_t<std::remove_cvref_t<T>>::value; };

template <DType D>
struct cpp_type_t;
#define JX_CPP_TYPE(D, T) \
  template <>             \
  struct cpp_type_t<DType::D> { using type = T; };
JX_CPP_TYPE(Bool, bool)
JX_CPP_TYPE(Int8, int8_t)
JX_CPP_TYPE(Int16, int16_t)
JX_CPP_TYPE(Int32, int32_t)
JX_CPP_TYPE(Int64, int64_t)
JX_CPP_TYPE(UInt8, uint8_t)
JX_CPP_TYPE(UInt32, uint32_t)
JX_CPP_TYPE(Float16, float16_t)
JX_CPP_TYPE(BFloat16, bfloat16_t)
JX_CPP_TYPE(Float32, float)
JX_CPP_TYPE(Float64, double)
JX_CPP_TYPE(Complex64, complex64_t)
JX_CPP_TYPE(Complex128, complex128_t)
#undef JX_CPP_TYPE
template <DType D>
using cpp_type = typename cpp_type_t<D>::type;

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;
template <class T>
inline constexpr bool is_complex_v =
    std::is_same_v<T, complex64_t> || std::is_same_v<T, complex128_t>;

// Calls f.template operator()<T>() with T the C++ type of d: the one switch from a
// runtime dtype to compiled code. Keep what runs inside a loop over many elements.
template <class F>
decltype(auto) dispatch_dtype(DType d, F&& f) {
  switch (d) {
    case DType::Bool: return f.template operator()<bool>();
    case DType::Int8: return f.template operator()<int8_t>();
    case DType::Int16: return f.template operator()<int16_t>();
    case DType::Int32: return f.template operator()<int32_t>();
    case DType::Int64: return f.template operator()<int64_t>();
    case DType::UInt8: return f.template operator()<uint8_t>();
    case DType::UInt32: return f.template operator()<uint32_t>();
    case DType::Float16: return f.template operator()<float16_t>();
    case DType::BFloat16: return f.template operator()<bfloat16_t>();
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::Complex64: return f.template operator()<complex64_t>();
    case DType::Complex128: return f.template operator()<complex128_t>();
  }
  throw Error("[dtype] invalid dtype");
}

}  // namespace jx
