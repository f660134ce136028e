// sort: sorts several operands of one shape along `dimension`, ordered
// lexicographically by the first `num_keys` of them (XLA's variadic sort; argsort is
// sort((x, iota)) with num_keys=1). Its CPU kernel: src/backend/cpu/kernels/sort.cpp.
//
// The order is JAX's total order: -inf < ... < -0 == 0 < ... < inf < NaN, every NaN
// equal to every other, complex numbers by real part then imaginary part.
#include <numeric>
#include <vector>

#include "jx/lax.h"
#include "lax/batch_rules.h"
#include "lax/rules.h"

namespace jx::lax {
namespace {

using jx::detail::fail;

std::vector<Aval> sort_rule(std::span<const Aval> in, const Params& params) {
  if (in.empty()) fail("sort", "needs at least one operand");
  const int64_t num_keys = params.get_int("num_keys");
  if (num_keys < 1 || num_keys > static_cast<int64_t>(in.size()))
    fail("sort", "num_keys=", num_keys, " must be between 1 and the number of operands (", in.size(), ")");
  for (const Aval& a : in)
    if (a.shape != in[0].shape) fail("sort", "operands must have the same shape, got ", rules::avals_str(in));
  rules::canonical_axis("sort", params.get_int("dimension"), in[0].ndim(), in[0].shape);
  (void)params.get_bool("is_stable");
  return std::vector<Aval>(in.begin(), in.end());
}

extern const Primitive sort_p;

// x[..., perm[...], ...] along `dim` (take_along_axis) as a gather: the index vector
// of every output element is its own position with `perm` substituted at `dim`.
Array take_along(const Array& x, const Array& perm, int64_t dim) {
  const Shape& shape = x.shape();
  const int64_t rank = x.ndim();
  Shape column_shape = shape;
  column_shape.push_back(1);
  std::vector<int64_t> keep(static_cast<size_t>(rank));
  std::iota(keep.begin(), keep.end(), int64_t{0});
  std::vector<Array> columns;
  for (int64_t d = 0; d < rank; ++d) {
    Array position = d == dim ? perm : broadcasted_iota(perm.dtype(), shape, static_cast<int>(d));
    columns.push_back(broadcast_in_dim(position, column_shape, keep));
  }
  GatherDimensionNumbers dn;
  dn.collapsed_slice_dims = keep;
  dn.start_index_map = keep;
  return gather(x, concatenate(columns, rank), dn, Shape(static_cast<size_t>(rank), 1));
}

// jvp: sort the operands together with an iota to learn the permutation, then apply
// it to the tangents with a gather (linear, so reverse mode can transpose it).
JvpResult sort_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
  const Shape& shape = primals[0].shape();
  const int64_t dim = rules::canonical_axis("sort", params.get_int("dimension"), primals[0].ndim(), shape);
  const DType index_dtype = shape[dim] <= INT32_MAX ? DType::Int32 : DType::Int64;
  std::vector<Array> operands(primals.begin(), primals.end());
  operands.push_back(broadcasted_iota(index_dtype, shape, static_cast<int>(dim)));
  std::vector<Array> sorted = jx::bind(sort_p, operands, params);
  const Array perm = sorted.back();
  sorted.pop_back();
  std::vector<Array> tangents_out(primals.size());
  for (size_t i = 0; i < primals.size(); ++i)
    if (tangents[i].valid()) tangents_out[i] = take_along(tangents[i], perm, dim);
  return {sorted, tangents_out};
}

// Batching: operands share one shape, so all get the batch axis in front (unmapped
// ones broadcast, a view) and the sorted dimension shifts by one.
BatchResult sort_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                       const BatchAxis& axis) {
  std::vector<Array> in;
  for (size_t i = 0; i < args.size(); ++i) in.push_back(batch_rules::batch_to_front(args[i], dims[i], axis.size));
  const int64_t rank = in[0].ndim() - 1;
  Shape inner(in[0].shape().begin() + 1, in[0].shape().end());
  Params batched = params;
  batched.set("dimension", rules::canonical_axis("sort", params.get_int("dimension"), rank, inner) + 1);
  std::vector<Array> out = jx::bind(sort_p, in, batched);
  return {out, std::vector<int64_t>(out.size(), 0)};
}

const Primitive sort_p("sort", {.traits = 0,
                                .num_outputs = -1,
                                .abstract_eval = sort_rule,
                                .jvp = sort_jvp,
                                .transpose = {},
                                .batch = sort_batch});

}  // namespace

std::vector<Array> sort(const std::vector<Array>& operands, int64_t dimension, bool is_stable, int num_keys) {
  if (!operands.empty()) {
    const int64_t nd = operands[0].ndim();
    if (dimension < 0 && dimension >= -nd) dimension += nd;  // canonical in the IR
  }
  return bind(sort_p, operands,
              {{"dimension", dimension}, {"is_stable", is_stable}, {"num_keys", static_cast<int64_t>(num_keys)}});
}

Array sort(const Array& x, int64_t dimension, bool is_stable) { return sort({x}, dimension, is_stable, 1)[0]; }

}  // namespace jx::lax
