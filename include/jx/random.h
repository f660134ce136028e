// jx::random: JAX's functional PRNG. A key is an explicit value (a uint32 array of shape
// (2,), JAX's raw jax.random.PRNGKey); functions never mutate it, so split it to get
// fresh keys. Every function is built from lax ops (the threefry2x32 primitive, shifts,
// bitcasts...), so it traces like any other code. Matches jax.random under its default
// settings (threefry2x32 with jax_threefry_partitionable=True, the default of the jax
// 0.10 the fixtures come from) for the same key, shape and dtype: keys, split, fold_in,
// bits, uniform, randint, bernoulli, permutation and choice bit for bit; normal within
// 2 ulp (float32); samplers built on log/erf within a few ulp.
#pragma once

#include <cstdint>
#include <optional>

#include "jx/array.h"

namespace jx::random {

// A key from a seed: [seed >> 32, seed & 0xffffffff] as uint32 (JAX with 64-bit seeds;
// jax without x64 keeps only the low 32 bits, which agrees for 0 <= seed < 2^32).
Array key(int64_t seed);
Array PRNGKey(int64_t seed);  // the same; JAX's legacy name
// `num` new keys, shape (num, 2); or a batch of keys of shape (*shape, 2).
Array split(const Array& key, int64_t num = 2);
Array split(const Array& key, const Shape& shape);
// A new key from a key and 32 bits of data (data is taken modulo 2^32). data may be a
// traced 0-d integer array: vmap([&](Array i) { return normal(fold_in(key, i), {3}); })(arange(n)).
Array fold_in(const Array& key, int64_t data);
Array fold_in(const Array& key, const Array& data);

// Uniform random bits: dtype uint32 (default) or uint8.
Array bits(const Array& key, const Shape& shape = {}, DType dtype = DType::UInt32);
// Uniform in [minval, maxval) of a float dtype; bounds broadcast against shape.
Array uniform(const Array& key, const Shape& shape = {}, DType dtype = DType::Float32,
              const Array& minval = 0.0, const Array& maxval = 1.0);
// Standard normal of a float or complex dtype.
Array normal(const Array& key, const Shape& shape = {}, DType dtype = DType::Float32);
// True with probability p (a float array; a C++ double counts as float32, as a Python
// float in JAX). The shape defaults to p's.
Array bernoulli(const Array& key, const Array& p = 0.5, std::optional<Shape> shape = std::nullopt);
// Integers in [minval, maxval) (both broadcast against shape); maxval <= minval gives minval.
Array randint(const Array& key, const Shape& shape, const Array& minval, const Array& maxval,
              DType dtype = DType::Int32);
// A random permutation of arange(n) (int32), or of x along `axis` (each 1-d slice along
// axis shuffled independently when `independent`).
Array permutation(const Array& key, int64_t n);
Array permutation(const Array& key, const Array& x, int64_t axis = 0, bool independent = false);
// Samples of arange(n) (int32) or of a's slices along `axis`, with or without replacement,
// uniformly or with weights p (1-d, one per choice).
Array choice(const Array& key, int64_t n, const Shape& shape = {}, bool replace = true,
             const std::optional<Array>& p = std::nullopt);
Array choice(const Array& key, const Array& a, const Shape& shape = {}, bool replace = true,
             const std::optional<Array>& p = std::nullopt, int64_t axis = 0);
// Indices (int32) drawn from softmax(logits) along `axis`; shape defaults to the batch shape
// (logits' shape without axis) and may add leading sample dims.
Array categorical(const Array& key, const Array& logits, int64_t axis = -1,
                  std::optional<Shape> shape = std::nullopt, bool replace = true);
// Standard normal truncated to (lower, upper); shape defaults to their broadcast shape.
Array truncated_normal(const Array& key, const Array& lower, const Array& upper,
                       std::optional<Shape> shape = std::nullopt, DType dtype = DType::Float32);
Array gumbel(const Array& key, const Shape& shape = {}, DType dtype = DType::Float32);
Array exponential(const Array& key, const Shape& shape = {}, DType dtype = DType::Float32);
Array laplace(const Array& key, const Shape& shape = {}, DType dtype = DType::Float32);
Array logistic(const Array& key, const Shape& shape = {}, DType dtype = DType::Float32);
Array cauchy(const Array& key, const Shape& shape = {}, DType dtype = DType::Float32);
// +1 or -1 with equal probability, of an integer or float dtype.
Array rademacher(const Array& key, const Shape& shape = {}, DType dtype = DType::Int32);

}  // namespace jx::random
