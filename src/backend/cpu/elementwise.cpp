#include "backend/cpu/elementwise.h"

namespace jx::cpu {

void fail_no_kernel(std::string_view op, DType dtype) {
  detail::internal_fail(op, "no CPU kernel for dtype ", dtype_name(dtype), " (the shape rule should have rejected it)");
}

void check_kernel_dtype(std::string_view op, const Array& out, DType kernel_dtype) {
  JX_CHECK(out.dtype() == kernel_dtype, op, "the shape rule gives ", out.aval().str(), " but the CPU kernel writes ",
           dtype_name(kernel_dtype));
}

}  // namespace jx::cpu
