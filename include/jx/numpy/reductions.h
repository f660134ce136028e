// jx::numpy reductions and statistics. `axis` is none (all axes), an int or a list
// (see jnp::Axes); keepdims keeps reduced axes with size 1.
#pragma once

#include <optional>
#include <string>

#include "jx/numpy/core.h"

namespace jx::numpy {

// Sum; bool and narrow integers accumulate in int32 (uint8 in uint32), as JAX.
Array sum(const Array& x, const Axes& axis = {}, bool keepdims = false, std::optional<DType> dtype = std::nullopt);
// Product, with sum's accumulator dtypes.
Array prod(const Array& x, const Axes& axis = {}, bool keepdims = false, std::optional<DType> dtype = std::nullopt);
// Arithmetic mean; integer inputs give float32. NaN for an empty reduction.
Array mean(const Array& x, const Axes& axis = {}, bool keepdims = false, std::optional<DType> dtype = std::nullopt);
// Variance with `ddof` delta degrees of freedom (complex inputs give a real result).
Array var(const Array& x, const Axes& axis = {}, int64_t ddof = 0, bool keepdims = false,
          std::optional<DType> dtype = std::nullopt);
// Standard deviation, sqrt(var).
Array std(const Array& x, const Axes& axis = {}, int64_t ddof = 0, bool keepdims = false,
          std::optional<DType> dtype = std::nullopt);
// Maximum/minimum (NaN propagates); `initial` joins the reduction and allows empty inputs.
Array max(const Array& x, const Axes& axis = {}, bool keepdims = false,
          const std::optional<Array>& initial = std::nullopt);
Array min(const Array& x, const Axes& axis = {}, bool keepdims = false,
          const std::optional<Array>& initial = std::nullopt);
Array amax(const Array& x, const Axes& axis = {}, bool keepdims = false,
           const std::optional<Array>& initial = std::nullopt);
Array amin(const Array& x, const Axes& axis = {}, bool keepdims = false,
           const std::optional<Array>& initial = std::nullopt);
// max - min.
Array ptp(const Array& x, const Axes& axis = {}, bool keepdims = false);
// Index of the first maximum/minimum (int32) along `axis`, or of the flattened array.
Array argmax(const Array& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
Array argmin(const Array& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
// Whether all/any elements are nonzero.
Array all(const Array& x, const Axes& axis = {}, bool keepdims = false);
Array any(const Array& x, const Axes& axis = {}, bool keepdims = false);
// Cumulative sum/product along `axis` (of the flattened array when none); bool and narrow
// signed integers accumulate in int32 as JAX.
Array cumsum(const Array& x, std::optional<int64_t> axis = std::nullopt, std::optional<DType> dtype = std::nullopt);
Array cumprod(const Array& x, std::optional<int64_t> axis = std::nullopt, std::optional<DType> dtype = std::nullopt);
// Running maximum/minimum along `axis`.
Array cummax(const Array& x, std::optional<int64_t> axis = std::nullopt);
Array cummin(const Array& x, std::optional<int64_t> axis = std::nullopt);
// q-th quantiles (q in [0, 1], scalar or 1-d: q's axis comes first) with linear
// interpolation; NaN when the slice holds a NaN. Only method "linear" is supported.
Array quantile(const Array& x, const Array& q, const Axes& axis = {}, bool keepdims = false,
               const std::string& method = "linear");
// quantile(x, q / 100).
Array percentile(const Array& x, const Array& q, const Axes& axis = {}, bool keepdims = false,
                 const std::string& method = "linear");
// The 0.5 quantile.
Array median(const Array& x, const Axes& axis = {}, bool keepdims = false);
// Weighted mean; 1-d weights with an int axis weigh along that axis.
Array average(const Array& x, const Axes& axis = {}, const std::optional<Array>& weights = std::nullopt,
              bool keepdims = false);
// Number of nonzero elements (int32).
Array count_nonzero(const Array& x, const Axes& axis = {}, bool keepdims = false);
// log(sum(b * exp(x))) computed with the max shifted out, so large inputs do not overflow;
// -inf inputs are handled (all -inf gives -inf). A negative sum gives NaN.
Array logsumexp(const Array& x, const Axes& axis = {}, const std::optional<Array>& b = std::nullopt,
                bool keepdims = false);
// Reductions that ignore NaNs (all-NaN slices give NaN for nanmax/nanmin/nanmean).
Array nansum(const Array& x, const Axes& axis = {}, bool keepdims = false, std::optional<DType> dtype = std::nullopt);
Array nanprod(const Array& x, const Axes& axis = {}, bool keepdims = false, std::optional<DType> dtype = std::nullopt);
Array nanmean(const Array& x, const Axes& axis = {}, bool keepdims = false);
Array nanmax(const Array& x, const Axes& axis = {}, bool keepdims = false);
Array nanmin(const Array& x, const Axes& axis = {}, bool keepdims = false);

}  // namespace jx::numpy
