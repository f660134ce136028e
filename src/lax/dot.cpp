// dot_general: tensor contraction with batch dimensions (XLA's DotGeneral). Float and
// complex products go to BLAS gemm, reading strided operands in place (with transpose
// flags) whenever their layout allows; other dtypes use a blocked loop.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#include "core/array_internal.h"
#include "core/convert.h"
#include "backend/cpu/blas.h"
#include "backend/cpu/thread_pool.h"
#include "jx/lax.h"
#include "lax/ad_rules.h"
#include "lax/batch_rules.h"
#include "lax/rules.h"

namespace jx::lax {
extern const Primitive dot_general_p;
namespace {

constexpr const char* kDot = "dot_general";

struct DotDims {
  std::vector<int64_t> lhs_contract, rhs_contract, lhs_batch, rhs_batch;
};

DotDims read_dims(const Params& p) {
  return {p.get_ints("lhs_contracting_dimensions"), p.get_ints("rhs_contracting_dimensions"),
          p.get_ints("lhs_batch_dimensions"), p.get_ints("rhs_batch_dimensions")};
}

// Dimensions of an operand that are neither batch nor contracting, in order.
std::vector<int64_t> free_dims(int64_t ndim, const std::vector<int64_t>& batch, const std::vector<int64_t>& contract) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < ndim; ++d)
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contract.begin(), contract.end(), d) == contract.end())
      out.push_back(d);
  return out;
}

void check_dims(const char* side, const Aval& a, const std::vector<int64_t>& batch,
                const std::vector<int64_t>& contract) {
  std::vector<int64_t> seen;
  for (const auto* dims : {&batch, &contract}) {
    for (int64_t d : *dims) {
      if (d < 0 || d >= a.ndim())
        detail::fail(kDot, side, " dimension ", d, " is out of bounds for ", side, " of shape ",
                     detail::shape_str(a.shape));
      if (std::find(seen.begin(), seen.end(), d) != seen.end())
        detail::fail(kDot, side, " dimension ", d, " is repeated in the batch and contracting dimensions (",
                     side, "_batch_dimensions=", detail::shape_str(batch), ", ", side,
                     "_contracting_dimensions=", detail::shape_str(contract), ")");
      seen.push_back(d);
    }
  }
}

// JAX's compatible (input, preferred_element_type) kinds.
bool preferred_type_ok(DType in, DType preferred) {
  const bool in_int = is_integer(in) || is_bool(in);
  if (in_int) return is_integer(preferred) || is_bool(preferred) || is_floating(preferred);
  if (is_floating(in)) return is_floating(preferred);
  return is_complex(preferred);
}

std::vector<Aval> dot_general_abstract_eval(std::span<const Aval> in, const Params& p) {
  rules::check_arity(kDot, in, 2);
  const Aval& lhs = in[0];
  const Aval& rhs = in[1];
  const DotDims d = read_dims(p);
  if (d.lhs_contract.size() != d.rhs_contract.size())
    detail::fail(kDot, "lhs_contracting_dimensions ", detail::shape_str(d.lhs_contract),
                 " and rhs_contracting_dimensions ", detail::shape_str(d.rhs_contract),
                 " must have the same length");
  if (d.lhs_batch.size() != d.rhs_batch.size())
    detail::fail(kDot, "lhs_batch_dimensions ", detail::shape_str(d.lhs_batch), " and rhs_batch_dimensions ",
                 detail::shape_str(d.rhs_batch), " must have the same length");
  check_dims("lhs", lhs, d.lhs_batch, d.lhs_contract);
  check_dims("rhs", rhs, d.rhs_batch, d.rhs_contract);
  for (size_t i = 0; i < d.lhs_batch.size(); ++i)
    if (lhs.shape[d.lhs_batch[i]] != rhs.shape[d.rhs_batch[i]])
      detail::fail(kDot, "batch dimensions must have equal sizes: lhs_batch_dimensions=",
                   detail::shape_str(d.lhs_batch), ", rhs_batch_dimensions=", detail::shape_str(d.rhs_batch),
                   " for shapes ", detail::shape_str(lhs.shape), " and ", detail::shape_str(rhs.shape));
  for (size_t i = 0; i < d.lhs_contract.size(); ++i)
    if (lhs.shape[d.lhs_contract[i]] != rhs.shape[d.rhs_contract[i]])
      detail::fail(kDot, "contracting dimensions must have equal sizes: lhs_contracting_dimensions=",
                   detail::shape_str(d.lhs_contract), ", rhs_contracting_dimensions=",
                   detail::shape_str(d.rhs_contract), " for shapes ", detail::shape_str(lhs.shape), " and ",
                   detail::shape_str(rhs.shape));
  if (lhs.dtype != rhs.dtype)
    detail::fail(kDot, "operands must have the same dtype, got ", lhs.str(), " and ", rhs.str());
  DType out_dtype = lhs.dtype;
  bool weak = lhs.weak_type && rhs.weak_type;
  if (p.has("preferred_element_type")) {
    DType preferred = p.get_dtype("preferred_element_type");
    if (!preferred_type_ok(lhs.dtype, preferred))
      detail::fail(kDot, "preferred_element_type ", dtype_name(preferred), " is incompatible with ",
                   dtype_name(lhs.dtype),
                   " operands; compatible kinds are (integer, integer), (integer, floating), "
                   "(floating, floating) and (complex, complex)");
    out_dtype = preferred;
    weak = false;
  }
  Shape out;
  for (int64_t b : d.lhs_batch) out.push_back(lhs.shape[b]);
  for (int64_t f : free_dims(lhs.ndim(), d.lhs_batch, d.lhs_contract)) out.push_back(lhs.shape[f]);
  for (int64_t f : free_dims(rhs.ndim(), d.rhs_batch, d.rhs_contract)) out.push_back(rhs.shape[f]);
  return {Aval{std::move(out), out_dtype, weak}};
}

// ---- CPU implementation ----

// An operand seen as a batch of matrices: batch dims keep their own strides; the row
// dims and the column dims are each merged into one when the strides allow.
struct MatrixOperand {
  Shape batch_shape;
  std::vector<int64_t> batch_strides;
  int64_t rows = 1, cols = 1;
  std::optional<int64_t> row_stride, col_stride;  // nullopt: the dims do not merge
};

// Merges `dims` of x into one dimension with a single stride, if the layout allows.
std::optional<int64_t> merged_stride(const Shape& shape, const std::vector<int64_t>& strides,
                                     const std::vector<int64_t>& dims) {
  std::optional<int64_t> stride;
  int64_t span = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    const int64_t size = shape[dims[i]];
    if (size == 1) continue;
    const int64_t s = strides[dims[i]];
    if (!stride) stride = s;
    else if (s != *stride * span) return std::nullopt;
    span *= size;
  }
  return stride.value_or(0);  // all dims of size 1: any stride works
}

MatrixOperand matrix_operand(const Array& x, const std::vector<int64_t>& batch, const std::vector<int64_t>& row_dims,
                             const std::vector<int64_t>& col_dims) {
  const Shape& shape = x.shape();
  const auto& strides = detail::strides(x);
  MatrixOperand m;
  for (int64_t b : batch) {
    m.batch_shape.push_back(shape[b]);
    m.batch_strides.push_back(strides[b]);
  }
  for (int64_t r : row_dims) m.rows *= shape[r];
  for (int64_t c : col_dims) m.cols *= shape[c];
  m.row_stride = merged_stride(shape, strides, row_dims);
  m.col_stride = merged_stride(shape, strides, col_dims);
  return m;
}

// How BLAS can read a matrix in place: row-major (Op::None) or as the transpose of a
// row-major matrix (Op::Transpose), with its leading dimension.
struct BlasLayout {
  cpu::Op op;
  int64_t ld;
};

std::optional<BlasLayout> blas_layout(const MatrixOperand& m) {
  if (!m.row_stride || !m.col_stride) return std::nullopt;
  const int64_t rs = m.rows == 1 ? 0 : *m.row_stride;
  const int64_t cs = m.cols == 1 ? 0 : *m.col_stride;
  if ((m.cols == 1 || cs == 1) && (m.rows == 1 || rs >= std::max<int64_t>(1, m.cols)))
    return BlasLayout{cpu::Op::None, m.rows == 1 ? std::max<int64_t>(1, m.cols) : rs};
  if ((m.rows == 1 || rs == 1) && (m.cols == 1 || cs >= std::max<int64_t>(1, m.rows)))
    return BlasLayout{cpu::Op::Transpose, m.cols == 1 ? std::max<int64_t>(1, m.rows) : cs};
  return std::nullopt;
}

// Element offsets of every batch entry (row-major over the batch shape).
std::vector<int64_t> batch_offsets(const Shape& batch_shape, const std::vector<int64_t>& batch_strides) {
  std::vector<int64_t> offsets{0};
  for (size_t d = 0; d < batch_shape.size(); ++d) {
    std::vector<int64_t> next;
    next.reserve(offsets.size() * static_cast<size_t>(batch_shape[d]));
    for (int64_t base : offsets)
      for (int64_t i = 0; i < batch_shape[d]; ++i) next.push_back(base + i * batch_strides[d]);
    offsets = std::move(next);
  }
  return offsets;
}

// A matrix operand ready for the kernel: a base pointer, per-batch offsets and layout.
template <class T>
struct PreparedOperand {
  Array keep_alive;
  const T* base = nullptr;
  std::vector<int64_t> offsets;
  BlasLayout layout{cpu::Op::None, 1};
};

// Reads x in place when it already has dtype T and a BLAS-readable layout (and, for the
// fallback loop, is row-major); otherwise packs it as contiguous (batch, rows, cols) of T.
template <class T>
PreparedOperand<T> prepare(const Array& x, const std::vector<int64_t>& batch, const std::vector<int64_t>& row_dims,
                           const std::vector<int64_t>& col_dims) {
  PreparedOperand<T> out;
  MatrixOperand m = matrix_operand(x, batch, row_dims, col_dims);
  const bool fits_blas = std::max(m.rows, m.cols) <= cpu::kMaxBlasDim;
  if (x.dtype() == dtype_of<T> && fits_blas) {
    auto layout = blas_layout(m);
    if (layout && layout->ld <= cpu::kMaxBlasDim && (cpu::is_blas_type_v<T> || layout->op == cpu::Op::None)) {
      out.keep_alive = x;
      out.base = detail::data<T>(x);
      out.offsets = batch_offsets(m.batch_shape, m.batch_strides);
      out.layout = *layout;
      return out;
    }
  }
  std::vector<int64_t> order = batch;
  order.insert(order.end(), row_dims.begin(), row_dims.end());
  order.insert(order.end(), col_dims.begin(), col_dims.end());
  Shape shape;
  std::vector<int64_t> strides;
  for (int64_t d : order) {
    shape.push_back(x.shape()[d]);
    strides.push_back(detail::strides(x)[d]);
  }
  Array view = detail::make_view(x, Aval{shape, x.dtype(), false}, strides, x.impl().offset);
  Array packed = detail::alloc_array(Aval{shape, dtype_of<T>, false});
  view.copy_to(detail::mutable_data<T>(packed), dtype_of<T>);
  out.keep_alive = packed;
  out.base = detail::data<T>(packed);
  const int64_t matrix = m.rows * m.cols;
  const int64_t nbatch = shape_size(m.batch_shape);
  out.offsets.resize(static_cast<size_t>(nbatch));
  for (int64_t b = 0; b < nbatch; ++b) out.offsets[b] = b * matrix;
  out.layout = BlasLayout{cpu::Op::None, std::max<int64_t>(1, m.cols)};
  return out;
}

// Computes the product in T (the BLAS type or the output's own type) into `c`.
template <class T>
void batched_product(const Array& lhs, const Array& rhs, const DotDims& d, int64_t m, int64_t n, int64_t k,
                     T* c) {
  const auto lhs_free = free_dims(lhs.ndim(), d.lhs_batch, d.lhs_contract);
  const auto rhs_free = free_dims(rhs.ndim(), d.rhs_batch, d.rhs_contract);
  PreparedOperand<T> a = prepare<T>(lhs, d.lhs_batch, lhs_free, d.lhs_contract);
  PreparedOperand<T> b = prepare<T>(rhs, d.rhs_batch, d.rhs_contract, rhs_free);
  const int64_t nbatch = static_cast<int64_t>(a.offsets.size());
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const T* ap = a.base + a.offsets[i];
      const T* bp = b.base + b.offsets[i];
      T* cp = c + i * m * n;
      if constexpr (cpu::is_blas_type_v<T>) {
        if (std::max({m, n, k, a.layout.ld, b.layout.ld}) <= cpu::kMaxBlasDim) {
          cpu::gemm<T>(a.layout.op, b.layout.op, m, n, k, ap, a.layout.ld, bp, b.layout.ld, cp, std::max<int64_t>(n, 1));
          continue;
        }
        // Beyond BLAS's 32-bit dimensions prepare() packed both operands row-major.
      }
      cpu::matmul<T>(m, n, k, ap, a.layout.ld, bp, b.layout.ld, cp, n);
    }
  };
  // Small matrices leave BLAS single-threaded, so spread the batch over threads instead.
  const int64_t flops = std::max<int64_t>(1, m * n * k);
  if (nbatch > 1 && flops < (int64_t{1} << 18)) cpu::parallel_for(nbatch, std::max<int64_t>(1, cpu::kParallelGrain / flops), run);
  else run(0, nbatch);
}

std::vector<Array> dot_general_impl(std::span<const Array> in, const Params& p, std::span<const Aval> out_avals) {
  const Array& lhs = in[0];
  const Array& rhs = in[1];
  const DotDims d = read_dims(p);
  const Aval& out_aval = out_avals[0];
  Array out = detail::alloc_array(out_aval);
  if (out_aval.size() == 0) return {out};
  int64_t m = 1, n = 1, k = 1;
  for (int64_t f : free_dims(lhs.ndim(), d.lhs_batch, d.lhs_contract)) m *= lhs.shape()[f];
  for (int64_t f : free_dims(rhs.ndim(), d.rhs_batch, d.rhs_contract)) n *= rhs.shape()[f];
  for (int64_t c : d.lhs_contract) k *= lhs.shape()[c];
  const DType out_dtype = out_aval.dtype;
  if (k == 0) {
    // An empty sum: zeros (every dtype's zero is all-zero bytes).
    std::memset(detail::mutable_data<void>(out), 0, static_cast<size_t>(out.nbytes()));
    return {out};
  }
  // Halves accumulate in float32 through sgemm, then round once.
  const bool via_float = out_dtype == DType::Float16 || out_dtype == DType::BFloat16;
  const DType compute = via_float ? DType::Float32 : out_dtype;
  Array result = compute == out_dtype ? out : detail::alloc_array(Aval{out_aval.shape, compute, false});
  dispatch_dtype(compute, [&]<class T>() {
    if constexpr (!is_half_v<T>) batched_product<T>(lhs, rhs, d, m, n, k, detail::mutable_data<T>(result));
  });
  if (compute != out_dtype)
    detail::convert_buffer(detail::raw_data(result), compute, detail::mutable_data<void>(out), out_dtype, out.size());
  return {out};
}


// ---- transformation rules ----

Params with_dims(const Params& p, const DotDims& d) {
  Params q = p;
  q.set("lhs_contracting_dimensions", d.lhs_contract);
  q.set("rhs_contracting_dimensions", d.rhs_contract);
  q.set("lhs_batch_dimensions", d.lhs_batch);
  q.set("rhs_batch_dimensions", d.rhs_batch);
  return q;
}

std::vector<int64_t> argsort(const std::vector<int64_t>& v) {
  std::vector<int64_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return v[a] < v[b]; });
  return idx;
}

// Cotangent of lhs (x) given the other operand y (JAX's _dot_general_transpose_lhs):
// contract ct with y over y's free dims, then permute into x's dim order. With
// swap_ans the roles are mirrored (the rhs case: y's free dims come first in ct).
Array transpose_lhs(const Array& ct_in, const Aval& x, const Array& y, const DotDims& d, bool swap_ans) {
  const auto x_kept = free_dims(x.ndim(), d.lhs_batch, d.lhs_contract);
  const auto y_kept = free_dims(y.ndim(), d.rhs_batch, d.rhs_contract);
  const int64_t nb = static_cast<int64_t>(d.lhs_batch.size());
  const int64_t nx = static_cast<int64_t>(x_kept.size()), ny = static_cast<int64_t>(y_kept.size());
  std::vector<int64_t> ans_batch(static_cast<size_t>(nb)), ans_y(static_cast<size_t>(ny));
  std::iota(ans_batch.begin(), ans_batch.end(), 0);
  std::iota(ans_y.begin(), ans_y.end(), swap_ans ? nb : nb + nx);
  // The ct has the operands' dtype (a preferred_element_type only widened the output).
  Array ct = ct_in.dtype() == y.dtype() ? ct_in : convert_element_type(ct_in, y.dtype());
  Array prod = dot_general(ct, y, DotDimensionNumbers{ans_y, y_kept, ans_batch, d.rhs_batch});
  // prod's dims: x's batch, x's kept, x's contracting dims ordered as y's contracting.
  std::vector<int64_t> order = d.lhs_batch;
  order.insert(order.end(), x_kept.begin(), x_kept.end());
  for (int64_t i : argsort(d.rhs_contract)) order.push_back(d.lhs_contract[i]);
  Array out = transpose(prod, argsort(order));
  return out.dtype() == x.dtype ? out : convert_element_type(out, x.dtype);
}

DotDims swapped(const DotDims& d) { return {d.rhs_contract, d.lhs_contract, d.rhs_batch, d.lhs_batch}; }

std::vector<Array> dot_general_transpose(std::span<const Array> cts, std::span<const TransposeOperand> ops,
                                         const Params& p) {
  if (ops[0].is_linear() && ops[1].is_linear())
    detail::fail(kDot, "is not linear in both operands at once (", ops[0].aval.str(), " . ", ops[1].aval.str(), ")");
  std::vector<Array> out(2);
  if (!cts[0].valid()) return out;
  const DotDims d = read_dims(p);
  if (ops[0].is_linear()) out[0] = transpose_lhs(cts[0], ops[0].aval, ops[1].value, d, false);
  else out[1] = transpose_lhs(cts[0], ops[1].aval, ops[0].value, swapped(d), true);
  return out;
}

JvpResult dot_general_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& p) {
  std::vector<Array> out = jx::bind(dot_general_p, primals, p);
  Array t;
  if (tangents[0].valid()) t = jx::bind(dot_general_p, std::vector<Array>{tangents[0], primals[1]}, p)[0];
  if (tangents[1].valid())
    t = ad::add_tangents(t, jx::bind(dot_general_p, std::vector<Array>{primals[0], tangents[1]}, p)[0]);
  return {out, {t}};
}

// Renumbers an operand's dims around a batch axis inserted at `b`.
std::vector<int64_t> around(std::vector<int64_t> dims, int64_t b) {
  for (int64_t& x : dims)
    if (x >= b) ++x;
  return dims;
}

// vmap: the batch axes stay where they are. Both mapped: they become a new leading
// batch dimension of the product. One mapped: it is a free dim of that operand, and the
// output batch axis is wherever that free dim lands.
BatchResult dot_general_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& p,
                              const BatchAxis&) {
  const DotDims d = read_dims(p);
  const int64_t lb = dims[0], rb = dims[1];
  DotDims n = d;
  if (lb != kNotMapped) {
    n.lhs_contract = around(d.lhs_contract, lb);
    n.lhs_batch = around(d.lhs_batch, lb);
  }
  if (rb != kNotMapped) {
    n.rhs_contract = around(d.rhs_contract, rb);
    n.rhs_batch = around(d.rhs_batch, rb);
  }
  int64_t out_dim = 0;
  if (lb != kNotMapped && rb != kNotMapped) {
    n.lhs_batch.insert(n.lhs_batch.begin(), lb);
    n.rhs_batch.insert(n.rhs_batch.begin(), rb);
  } else if (lb != kNotMapped) {
    auto kept = free_dims(args[0].ndim(), n.lhs_batch, n.lhs_contract);
    out_dim = static_cast<int64_t>(n.lhs_batch.size() + (std::find(kept.begin(), kept.end(), lb) - kept.begin()));
  } else {
    auto lhs_kept = free_dims(args[0].ndim(), n.lhs_batch, n.lhs_contract);
    auto kept = free_dims(args[1].ndim(), n.rhs_batch, n.rhs_contract);
    out_dim = static_cast<int64_t>(n.lhs_batch.size() + lhs_kept.size() +
                                   (std::find(kept.begin(), kept.end(), rb) - kept.begin()));
  }
  std::vector<Array> in(args.begin(), args.end());
  return {jx::bind(dot_general_p, in, with_dims(p, n)), {out_dim}};
}

}  // namespace

const Primitive dot_general_p("dot_general", {.traits = kLinear,
                                              .abstract_eval = dot_general_abstract_eval,
                                              .impl = dot_general_impl,
                                              .jvp = dot_general_jvp,
                                              .transpose = dot_general_transpose,
                                              .batch = dot_general_batch});

Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dnums,
                  std::optional<DType> preferred_element_type) {
  Params p{{"lhs_contracting_dimensions", dnums.lhs_contracting},
           {"rhs_contracting_dimensions", dnums.rhs_contracting},
           {"lhs_batch_dimensions", dnums.lhs_batch},
           {"rhs_batch_dimensions", dnums.rhs_batch}};
  if (preferred_element_type) p.set("preferred_element_type", *preferred_element_type);
  return bind1(dot_general_p, {lhs, rhs}, p);
}

Array dot(const Array& lhs, const Array& rhs) {
  const int lr = lhs.ndim(), rr = rhs.ndim();
  if (lr < 1 || lr > 2 || rr < 1 || rr > 2)
    detail::fail("dot", "expects operands of rank 1 or 2, got ", lhs.aval().str(), " and ", rhs.aval().str());
  return dot_general(lhs, rhs, DotDimensionNumbers{{lr - 1}, {0}, {}, {}});
}

}  // namespace jx::lax
