#include "jx/dtype.h"

#include <array>
#include <ostream>

namespace jx {
namespace {

constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {"bool", 1, DTypeKind::Bool},
    {"int8", 1, DTypeKind::SignedInt},
    {"int16", 2, DTypeKind::SignedInt},
    {"int32", 4, DTypeKind::SignedInt},
    {"int64", 8, DTypeKind::SignedInt},
    {"uint8", 1, DTypeKind::UnsignedInt},
    {"uint32", 4, DTypeKind::UnsignedInt},
    {"float16", 2, DTypeKind::Float},
    {"bfloat16", 2, DTypeKind::Float},
    {"float32", 4, DTypeKind::Float},
    {"float64", 8, DTypeKind::Float},
    {"complex64", 8, DTypeKind::Complex},
    {"complex128", 16, DTypeKind::Complex},
}};

// Nodes of JAX's promotion lattice: the dtypes plus the weak kinds i*, f*, c*.
enum Node : int { kB, kIW, kFW, kCW, kU8, kU32, kI8, kI16, kI32, kI64, kBF16, kF16, kF32, kF64, kC64, kC128, kNodes };

// Direct successors in the lattice. u32 + i32 -> i64 and i64 -> f* follow JAX.
constexpr std::array<std::array<int, 3>, kNodes> kUp = {{
    /*kB*/ {kIW, -1, -1},
    /*kIW*/ {kU8, kI8, -1},
    /*kFW*/ {kCW, kBF16, kF16},
    /*kCW*/ {kC64, -1, -1},
    /*kU8*/ {kI16, kU32, -1},
    /*kU32*/ {kI64, -1, -1},
    /*kI8*/ {kI16, -1, -1},
    /*kI16*/ {kI32, -1, -1},
    /*kI32*/ {kI64, -1, -1},
    /*kI64*/ {kFW, -1, -1},
    /*kBF16*/ {kF32, -1, -1},
    /*kF16*/ {kF32, -1, -1},
    /*kF32*/ {kF64, kC64, -1},
    /*kF64*/ {kC128, -1, -1},
    /*kC64*/ {kC128, -1, -1},
    /*kC128*/ {-1, -1, -1},
}};

using NodeSet = uint32_t;

constexpr NodeSet upper_set(int n) {
  NodeSet s = 1u << n;
  for (int next : kUp[n])
    if (next >= 0) s |= upper_set(next);
  return s;
}

int node_of(TypedDType t) {
  if (t.weak) {
    switch (dtype_info(t.dtype).kind) {
      case DTypeKind::Bool: return kB;
      case DTypeKind::SignedInt:
      case DTypeKind::UnsignedInt: return kIW;
      case DTypeKind::Float: return kFW;
      case DTypeKind::Complex: return kCW;
    }
  }
  switch (t.dtype) {
    case DType::Bool: return kB;
    case DType::Int8: return kI8;
    case DType::Int16: return kI16;
    case DType::Int32: return kI32;
    case DType::Int64: return kI64;
    case DType::UInt8: return kU8;
    case DType::UInt32: return kU32;
    case DType::Float16: return kF16;
    case DType::BFloat16: return kBF16;
    case DType::Float32: return kF32;
    case DType::Float64: return kF64;
    case DType::Complex64: return kC64;
    case DType::Complex128: return kC128;
  }
  return kB;
}

DType dtype_of_node(int n) {
  switch (n) {
    case kB: return DType::Bool;
    case kU8: return DType::UInt8;
    case kU32: return DType::UInt32;
    case kI8: return DType::Int8;
    case kI16: return DType::Int16;
    case kI32: return DType::Int32;
    case kI64: return DType::Int64;
    case kBF16: return DType::BFloat16;
    case kF16: return DType::Float16;
    case kF32: return DType::Float32;
    case kF64: return DType::Float64;
    case kC64: return DType::Complex64;
    case kC128: return DType::Complex128;
    default: return DType::Float32;
  }
}

}  // namespace

const DTypeInfo& dtype_info(DType d) {
  auto i = static_cast<size_t>(d);
  if (i >= kInfo.size()) throw Error("[dtype] invalid dtype value");
  return kInfo[i];
}

DType dtype_from_name(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (kInfo[i].name == name) return static_cast<DType>(i);
  if (name == "bool_") return DType::Bool;
  detail::fail("dtype", "unknown dtype name '", name, "'");
}

std::ostream& operator<<(std::ostream& os, DType d) { return os << dtype_name(d); }

DType real_dtype(DType d) {
  if (d == DType::Complex64) return DType::Float32;
  if (d == DType::Complex128) return DType::Float64;
  return d;
}

DType complex_dtype(DType d) {
  if (d == DType::Float64 || d == DType::Complex128) return DType::Complex128;
  return DType::Complex64;
}

TypedDType promote_types(TypedDType a, TypedDType b) {
  // Two weak values of one kind keep the wider of their concrete dtypes, so that
  // Array(0.1) + Array(0.2) stays in double precision.
  if (a.weak && b.weak && node_of(a) == node_of(b))
    return {itemsize(a.dtype) >= itemsize(b.dtype) ? a.dtype : b.dtype, true};
  if (!a.weak && !b.weak && a.dtype == b.dtype) return a;
  int na = node_of(a), nb = node_of(b);
  NodeSet common = upper_set(na) & upper_set(nb);
  // The least upper bound is the member of `common` whose upper set is `common`.
  for (int n = 0; n < kNodes; ++n) {
    if (!(common & (1u << n)) || upper_set(n) != common) continue;
    switch (n) {
      case kIW: return {a.weak ? a.dtype : b.dtype, true};  // bool with a weak int
      case kFW: {
        // A weak float meeting only ints/bools: the default float, still weak.
        TypedDType w = a.weak && is_floating(a.dtype) ? a : b;
        bool all_weak = a.weak && b.weak;
        return {all_weak ? w.dtype : kDefaultFloat, true};
      }
      case kCW: return {kDefaultComplex, true};
      default: return {dtype_of_node(n), false};
    }
  }
  detail::fail("promote_types", "no common dtype for ", dtype_name(a.dtype), " and ", dtype_name(b.dtype));
}

uint16_t float16_t::from_float(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u)  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (absx < 0x38800000u) {
    // Subnormal half (or zero): scale by 2^24 via float arithmetic, round to even.
    float af;
    std::memcpy(&af, &absx, 4);
    float scaled = af * 16777216.0f;  // 2^24: half subnormal unit
    uint32_t r = static_cast<uint32_t>(scaled);
    float rem = scaled - static_cast<float>(r);
    if (rem > 0.5f || (rem == 0.5f && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t mant = absx & 0x7fffffu;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // carries into exponent correctly
  return static_cast<uint16_t>(sign | h);
}

float float16_t::to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    float f = static_cast<float>(mant) * (1.0f / 16777216.0f);
    std::memcpy(&bits, &f, 4);
    bits |= sign;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

}  // namespace jx
