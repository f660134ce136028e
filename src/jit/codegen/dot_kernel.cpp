// The "dot" kernel: a dot_general of two kernel inputs (2-d, no batch dims, f32 or f64)
// through the BLAS, then the fused elementwise epilogue over its result, compiled as a
// loop kernel that reads the product as one more input.
#include <algorithm>
#include <vector>
#include <memory>
#include <optional>

#include "backend/cpu/blas.h"
#include "backend/cpu/packed_gemm.h"
#include "backend/cpu/thread_pool.h"
#include "jit/codegen/loop_kernel.h"
#include "jx/array.h"
#include "jx/device.h"
#include "jx/error.h"
#include "lax/primitives.h"

namespace jx::compiler::codegen {
namespace {

using jx::detail::fail;
using jx::detail::shape_str;

class DotKernel final : public Kernel {
 public:
  DotKernel(std::shared_ptr<const CompiledLoop> epilogue, DType dtype, int lhs, int rhs, bool lhs_t, bool rhs_t,
            int64_t m, int64_t n, int64_t k, size_t num_inputs)
      : epilogue_(std::move(epilogue)), dtype_(dtype), lhs_(lhs), rhs_(rhs), lhs_t_(lhs_t), rhs_t_(rhs_t), m_(m),
        n_(n), k_(k), num_inputs_(num_inputs) {}

  void run(const void* const* inputs, void* const* outputs) const override {
    if (dtype_ == DType::Float32)
      run_typed<float>(inputs, outputs);
    else
      run_typed<double>(inputs, outputs);
  }

 private:
  template <class T>
  void run_typed(const void* const* inputs, void* const* outputs) const {
    if (m_ == 0 || n_ == 0) return;
    // The product goes into the output when nothing follows it, else into this thread's
    // scratch, kept between calls (a loop body's product allocates nothing per
    // iteration); a large one is allocated for the call, so the scratch stays small.
    // The large one comes from the host allocator (huge pages, recycled blocks): from
    // operator new, each call faulted in a fresh product (clear_page was a quarter of
    // the time of gelu(A @ B + b) at n = 4096, the epilogue cost 105 ms over the product
    // against 16 ms as a kernel of its own).
    constexpr int64_t kScratchElements = int64_t{1} << 16;
    thread_local std::vector<T> scratch;
    std::optional<jx::detail::Storage> large;
    T* product = nullptr;
    if (!epilogue_) {
      product = static_cast<T*>(outputs[0]);
    } else if (m_ * n_ <= kScratchElements) {
      if (scratch.size() < static_cast<size_t>(m_ * n_)) scratch.resize(static_cast<size_t>(m_ * n_));
      product = scratch.data();
    } else {
      static const Device host = local_devices().front();  // every CPU device shares one allocator
      large.emplace(static_cast<size_t>(m_ * n_) * sizeof(T), host);
      product = static_cast<T*>(large->data);
    }
    const T* a = static_cast<const T*>(inputs[lhs_]);
    const T* b = static_cast<const T*>(inputs[rhs_]);
    // op(A) is m x k: A is [m, k] (lda k) or, transposed, [k, m] (lda m); likewise B.
    const int64_t lda = std::max<int64_t>(1, lhs_t_ ? m_ : k_), ldb = std::max<int64_t>(1, rhs_t_ ? k_ : n_);
    const void* stack_ins[16];
    std::vector<const void*> heap_ins;
    const void** ins = stack_ins;
    if (num_inputs_ + 1 > std::size(stack_ins)) {
      heap_ins.resize(num_inputs_ + 1);
      ins = heap_ins.data();
    }
    std::copy_n(inputs, num_inputs_, ins);
    ins[num_inputs_] = product;
    // One BLAS call (OpenBLAS or, for small float32 products, oneDNN threads it:
    // onednn.h) over the whole product, then the epilogue in parallel over the thread
    // pool. Measured on the 2-core Zen 4 against row blocks
    // (gemm on 64 or 256 rows, then the epilogue on that block while it is in cache),
    // gelu-like epilogue: n=256 the same (380 vs 376-460 us), n=1024 one call faster
    // (54-71 ms vs 61-74 ms): each block call repacks all of B, which costs more than
    // the epilogue's second pass over C saves. Row blocks run by one thread each would
    // fight OpenBLAS's own threads.
    if (epilogue_ && k_ > 0 && run_fused<T>(a, lda, b, ldb, product, ins, outputs)) return;
    if (k_ == 0)
      std::fill(product, product + m_ * n_, T(0));
    else
      cpu::gemm<T>(lhs_t_ ? cpu::Op::Transpose : cpu::Op::None, rhs_t_ ? cpu::Op::Transpose : cpu::Op::None, m_, n_,
                   k_, a, lda, b, ldb, product, n_);
    if (!epilogue_) return;
    // A cheap epilogue runs on this thread: waking the pool costs more than it saves (the
    // measurement below predates OpenBLAS's short spin, blas_threads.h, when its workers
    // also competed with the pool after every GEMM). The work is
    // points x the epilogue's cost (LoopSchedule::cost: 1 + 7 per transcendental),
    // doubled per doubling of the element size (vectors hold half as many). Measured on
    // the 2-core Zen 1, gelu(A @ B + b) at n = 256: float32 (work 0.5M) 0.74-0.82 ms here
    // against 0.81-0.88 pooled; float64 (1.0M; its tanh is inline since) 1.50-1.52
    // against 1.37-1.40 pooled; at n = 512 the pool is level or ahead in both.
    constexpr double kSerialEpilogueWork = 7.5e5;
    const double work = static_cast<double>(m_) * static_cast<double>(n_) *
                        static_cast<double>(std::max<int64_t>(1, epilogue_->schedule().cost)) *
                        static_cast<double>(std::max<size_t>(1, sizeof(T) / 4));
    if (work <= kSerialEpilogueWork)
      epilogue_->run_units(ins, outputs, 0, epilogue_->schedule().units);
    else
      epilogue_->run(ins, outputs);
  }

  // The product on jx's own kernel (packed_gemm.h) where it takes these sizes, each
  // thread running the epilogue over its rows of the product as soon as they are final,
  // while they are in its cache: no second pass over C, no second wake of the threads,
  // and no other library's threads spinning beside the pool's (oneDNN's OpenMP workers
  // did, after a float32 product, while the epilogue ran). The epilogue's units must
  // tile the rows (a row is a whole number of units). The threads split the product by
  // rows for it, each packing all of B, which costs more than the epilogue's second pass
  // saves on large products: up to 2^26 multiply-adds (as oneDNN's share of float32).
  // gelu(A @ B + b) on the 2-core Xeon, fused against after, interleaved in one process
  // (best / median us): float32 n = 256 106.6 / 113.6 against 103.6 / 155.6 (oneDNN's
  // workers beside the pool's spread the times), float64 219.4 / 230.1 against 219.9 /
  // 230.4; past the cap, n = 512 float32 723 / 807 against 707 / 791, 1024 5657 / 5913
  // against 5324 / 5771.
  template <class T>
  bool run_fused(const T* a, int64_t lda, const T* b, int64_t ldb, T* product, const void* const* ins,
                 void* const* outputs) const {
    const LoopSchedule& s = epilogue_->schedule();
    const int64_t per_unit = std::max<int64_t>(1, s.elements_per_unit);
    constexpr double kMaxFusedWork = double(int64_t{1} << 26);
    if (s.mode != LoopSchedule::Mode::Elementwise || n_ % per_unit != 0 || s.units * per_unit != m_ * n_ ||
        double(m_) * double(n_) * double(k_) > kMaxFusedWork || !cpu::packed_gemm_takes<T>(m_, n_, k_))
      return false;
    const int64_t units_per_row = n_ / per_unit;
    const cpu::RowsDone rows_done = [&](int64_t row_begin, int64_t row_end) {
      epilogue_->run_units(ins, outputs, row_begin * units_per_row, row_end * units_per_row);
    };
    return cpu::packed_gemm_any_size(lhs_t_ ? cpu::Op::Transpose : cpu::Op::None,
                                     rhs_t_ ? cpu::Op::Transpose : cpu::Op::None, m_, n_, k_, a, lda, b, ldb, product,
                                     n_, &rows_done);
  }

  std::shared_ptr<const CompiledLoop> epilogue_;
  DType dtype_;
  int lhs_, rhs_;
  bool lhs_t_, rhs_t_;
  int64_t m_, n_, k_;
  size_t num_inputs_;
};

int input_index(const Jaxpr& fused, const Atom& a) {
  if (a.is_var())
    for (size_t i = 0; i < fused.invars.size(); ++i)
      if (fused.invars[i].id == a.var().id) return static_cast<int>(i);
  return -1;
}

// The product of a dot fusion as a matrix product, and its epilogue: the fused program
// without the dot, whose result becomes the last input.
struct DotFusion {
  DType dtype;
  int lhs = -1, rhs = -1;
  bool lhs_t = false, rhs_t = false;
  int64_t m = 0, n = 0, k = 0;
  Jaxpr epilogue;
  bool lone = false;  // the product is the fusion's only output: no epilogue
};

DotFusion analyze(const Jaxpr& fused) {
  const Equation* dot = nullptr;
  for (const Equation& e : fused.eqns)
    if (e.primitive == &lax::dot_general_p) {
      if (dot) fail("jit", "a dot fusion must hold exactly one dot_general, found more");
      dot = &e;
    }
  if (!dot) fail("jit", "a dot fusion must hold a dot_general");
  const Aval& la = dot->inputs[0].aval();
  const Aval& ra = dot->inputs[1].aval();
  const Aval& out = dot->outputs[0].aval;
  const std::string what = "dot_general of " + la.str() + " and " + ra.str();
  DotFusion d{.dtype = la.dtype};
  d.lhs = input_index(fused, dot->inputs[0]);
  d.rhs = input_index(fused, dot->inputs[1]);
  if (d.lhs < 0 || d.rhs < 0) fail("jit", "a dot kernel multiplies two kernel inputs, but the ", what, " reads computed values");
  if (la.ndim() < 1 || la.ndim() > 2 || ra.ndim() < 1 || ra.ndim() > 2)
    fail("jit", "a dot kernel handles 1-d or 2-d operands only, got ", what);
  if (!dot->params.get_ints("lhs_batch_dimensions").empty() || !dot->params.get_ints("rhs_batch_dimensions").empty())
    fail("jit", "a dot kernel handles no batch dimensions, got ", what);
  const auto& lc = dot->params.get_ints("lhs_contracting_dimensions");
  const auto& rc = dot->params.get_ints("rhs_contracting_dimensions");
  if (lc.size() > 1 || rc.size() != lc.size() || la.ndim() - static_cast<int64_t>(lc.size()) > 1 ||
      ra.ndim() - static_cast<int64_t>(rc.size()) > 1)
    fail("jit", "a dot kernel computes a matrix, vector or outer product (at most one free dimension a side), got ",
         what, " contracting ", shape_str(lc), " and ", shape_str(rc));
  if ((la.dtype != DType::Float32 && la.dtype != DType::Float64) || ra.dtype != la.dtype || out.dtype != la.dtype)
    fail("jit", "a dot kernel handles float32 or float64 operands and result of one dtype, got ", what, " -> ",
         out.str());
  // Each side as a matrix: op(A) is m x k, op(B) is k x n (a missing free dimension or
  // contraction has size 1), and the row-major m x n product is the result in order
  // (dot_general puts the lhs's free dimension first).
  const bool contracts = !lc.empty();
  d.k = contracts ? la.shape[lc[0]] : 1;
  d.m = la.ndim() == 2 ? la.shape[1 - lc[0]] : contracts ? 1 : la.shape[0];
  d.n = ra.ndim() == 2 ? ra.shape[1 - rc[0]] : contracts ? 1 : ra.shape[0];
  // A 2-d lhs contracting its rows is stored [k, m]; a 2-d rhs contracting its columns, [n, k].
  d.lhs_t = la.ndim() == 2 && lc[0] == 0;
  d.rhs_t = ra.ndim() == 2 && rc[0] == 1;
  for (const Atom& o : fused.outvars)
    if (o.aval().shape != out.shape)
      fail("jit", "every output of a dot fusion has the product's shape ", shape_str(out.shape), ", got ",
           o.aval().str());
  d.epilogue.invars = fused.invars;
  d.epilogue.invars.push_back(dot->outputs[0]);
  for (const Equation& e : fused.eqns)
    if (&e != dot) d.epilogue.eqns.push_back(e);
  d.epilogue.outvars = fused.outvars;
  d.lone = d.epilogue.eqns.empty() && fused.outvars.size() == 1 && fused.outvars[0].is_var() &&
           fused.outvars[0].var().id == dot->outputs[0].id;
  return d;
}

}  // namespace

std::unique_ptr<Kernel> compile_dot_kernel(const Jaxpr& fused, const KernelOptions& options, const OutputsOverInputs& over) {
  DotFusion d = analyze(fused);
  // The product's operands are read by the product while the epilogue writes rows.
  for (const OutputOverInput& o : over)
    if (d.lone || o.input == d.lhs || o.input == d.rhs)
      fail("jit", "internal: output ", o.output, " of a dot kernel cannot be written over its input ", o.input);
  std::shared_ptr<const CompiledLoop> loop;
  if (!d.lone) loop = CompiledLoop::compile(plan_kernel(d.epilogue, "loop", {}, options.vector_isa, over), options);
  return std::make_unique<DotKernel>(std::move(loop), d.dtype, d.lhs, d.rhs, d.lhs_t, d.rhs_t, d.m, d.n, d.k,
                                     fused.invars.size());
}

OutputsOverInputs dot_outputs_over_inputs_allowed(const Jaxpr& fused) {
  const DotFusion d = analyze(fused);
  if (d.lone) return {};
  const KernelPlan plan = plan_kernel(d.epilogue, "loop");
  const int num_inputs = static_cast<int>(fused.invars.size());  // the epilogue's last input is the product
  return writable_pairs(plan, [&](int i) { return i < num_inputs && i != d.lhs && i != d.rhs; });
}

}  // namespace jx::compiler::codegen
