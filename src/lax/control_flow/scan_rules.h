// The scan primitive's parameters and its transformation rules (scan_rules.cpp), shared
// with its registration block (scan.cpp).
//
//   scan[body num_consts num_carry length reverse unroll] consts... init... xs...
//     body: [consts..., carry..., x slices...] -> [new carry..., y slices...]
//     outputs: [final carry..., ys...] (each y stacked along a new axis 0 of size length)
#pragma once

#include <span>
#include <vector>

#include "jx/jaxpr.h"
#include "jx/primitive.h"

namespace jx::detail {

extern const Primitive scan_p;

// A scan equation's params, decoded.
struct ScanParams {
  JaxprRef body;
  int64_t num_consts = 0, num_carry = 0, length = 0;
  bool reverse = false;
  int64_t unroll = 1;

  // Raises "[scan] ..." when the body is missing or the counts do not fit it.
  static ScanParams from(const Params& params);
  Params to_params() const;
  size_t consts() const { return static_cast<size_t>(num_consts); }
  size_t carry() const { return static_cast<size_t>(num_carry); }
  size_t xs() const { return body->jaxpr.invars.size() - consts() - carry(); }
  size_t ys() const { return body->jaxpr.outvars.size() - carry(); }
  // The same loop over another body.
  ScanParams with(JaxprRef new_body, size_t new_consts, size_t new_carry) const;
};

std::vector<Array> bind_scan(std::span<const Array> operands, const ScanParams& p);

// ---- the rules (each the jaxpr-level transformation applied to the body, with a
// fixpoint over the carries where the carry's role is decided by the body itself) ----
JvpResult scan_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params);
BatchResult scan_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                       const BatchAxis& axis);
PartialEvalSplit scan_partial_eval(const std::vector<bool>& unknowns, const Params& params);
std::vector<Array> scan_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                  const Params& params);
DceEquationResult scan_dce(const std::vector<bool>& used_outputs, Equation& eqn);

}  // namespace jx::detail
