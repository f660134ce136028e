// CPU kernel of dot_general (the primitive's rules: src/lax/dot.cpp). Float and complex
// products go to BLAS gemm, reading strided operands in place (with transpose flags)
// whenever their layout allows; other dtypes use a blocked loop.
#include <algorithm>
#include <cstring>
#include <optional>

#include "backend/cpu/blas.h"
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/thread_pool.h"
#include "core/array_internal.h"
#include "core/convert.h"
#include "lax/dot_params.h"

namespace jx::cpu {
namespace {

using lax::dot_params::DotDims;
using lax::dot_params::free_dims;
using lax::dot_params::read_dims;

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

}  // namespace

void add_dot_kernels(detail::KernelTable& table) { table.add("dot_general", dot_general_impl); }

}  // namespace jx::cpu
