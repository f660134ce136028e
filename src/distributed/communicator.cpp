#include "distributed/communicator.h"

#include <algorithm>
#include <sstream>
#include <type_traits>

#include "jx/array.h"
#include "jx/error.h"

namespace jx::detail {

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
  }
  return "?";
}

std::string CollectiveSignature::operand_str() const {
  std::string s = Aval{shape, dtype}.str();
  if (!params.empty()) s += " (" + params + ")";
  return s;
}

namespace {

template <class T>
void reduce_typed(ReduceOp op, T* dst, const T* src, size_t count) {
  if constexpr (std::is_same_v<T, bool>) {
    // Sum of bools saturates (logical or), as a bool psum does; max is or, min is and.
    for (size_t k = 0; k < count; ++k) dst[k] = op == ReduceOp::kMin ? (dst[k] && src[k]) : (dst[k] || src[k]);
  } else if constexpr (is_half_v<T>) {
    for (size_t k = 0; k < count; ++k) {
      const float a = static_cast<float>(dst[k]), b = static_cast<float>(src[k]);
      const float r = op == ReduceOp::kSum ? a + b : op == ReduceOp::kMax ? std::max(a, b) : std::min(a, b);
      dst[k] = T(r);
    }
  } else if constexpr (is_complex_v<T>) {
    if (op != ReduceOp::kSum) fail("collectives", "max and min are not defined for complex values");
    for (size_t k = 0; k < count; ++k) dst[k] += src[k];
  } else {
    switch (op) {
      case ReduceOp::kSum:
        if constexpr (std::is_integral_v<T>) {
          // Integers wrap, as XLA's do (in unsigned arithmetic: signed overflow is UB).
          using U = std::make_unsigned_t<T>;
          for (size_t k = 0; k < count; ++k)
            dst[k] = static_cast<T>(static_cast<U>(static_cast<U>(dst[k]) + static_cast<U>(src[k])));
        } else {
          for (size_t k = 0; k < count; ++k) dst[k] = static_cast<T>(dst[k] + src[k]);
        }
        break;
      case ReduceOp::kMax:
        // NaN propagates, as lax.max does.
        for (size_t k = 0; k < count; ++k) dst[k] = (dst[k] != dst[k] || dst[k] > src[k]) ? dst[k] : src[k];
        break;
      case ReduceOp::kMin:
        for (size_t k = 0; k < count; ++k) dst[k] = (dst[k] != dst[k] || dst[k] < src[k]) ? dst[k] : src[k];
        break;
    }
  }
}

}  // namespace

void reduce_into(ReduceOp op, DType dtype, void* dst, const void* src, size_t count) {
  if (count == 0) return;
  dispatch_dtype(dtype, [&]<class T>() { reduce_typed(op, static_cast<T*>(dst), static_cast<const T*>(src), count); });
}

void raise_signature_mismatch(const Communicator& comm, const CollectiveSignature& a, int member_a,
                              const CollectiveSignature& b, int member_b) {
  if (a.collective != b.collective || a.axis != b.axis)
    fail(a.collective, "over axis '", a.axis, "': members disagree on the collective: ", comm.member_name(member_a),
         " runs ", a.collective, " over '", a.axis, "' but ", comm.member_name(member_b), " runs ", b.collective,
         " over '", b.axis, "'");
  fail(a.collective, "over axis '", a.axis, "': members disagree on the operand: ", comm.member_name(member_a),
       " has ", a.operand_str(), " but ", comm.member_name(member_b), " has ", b.operand_str());
}

void raise_timeout(std::span<const std::string> member_names, const CollectiveSignature& sig, double timeout_s,
                   std::span<const int> missing) {
  std::ostringstream who;
  for (size_t i = 0; i < missing.size(); ++i) who << (i ? ", " : "") << member_names[missing[i]];
  fail(sig.collective, "over axis '", sig.axis, "': timed out after ", timeout_s, " s waiting for ", who.str(),
       " (", missing.size(), " of ", member_names.size(), " members did not arrive; JX_COLLECTIVE_TIMEOUT_S sets the limit)");
}

}  // namespace jx::detail
