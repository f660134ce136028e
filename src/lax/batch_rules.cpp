#include "lax/batch_rules.h"

#include "jx/error.h"

namespace jx::lax::batch_rules {

Array move_axis(const Array& x, int64_t from, int64_t to) {
  if (from == to) return x;
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != from) perm.push_back(i);
  perm.insert(perm.begin() + to, from);
  return lax::transpose(x, perm);
}

Array batch_to_front(const Array& x, int64_t dim, int64_t size) {
  if (dim != kNotMapped) return move_axis(x, dim, 0);
  Shape shape{size};
  shape.insert(shape.end(), x.shape().begin(), x.shape().end());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < x.ndim(); ++i) dims.push_back(i + 1);
  return lax::broadcast_in_dim(x, shape, dims);
}

BatchRule elementwise(const Primitive& p) {
  return [&p](std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
              const BatchAxis& axis) {
    // The unbatched shape: the largest-rank operand's (rank-0 operands may be scalars).
    Shape shape;
    for (size_t i = 0; i < args.size(); ++i) {
      Shape s = args[i].shape();
      if (dims[i] != kNotMapped) s.erase(s.begin() + dims[i]);
      if (s.size() > shape.size()) shape = s;
    }
    // Keep the batch axis where the first mapped operand has it when all mapped agree.
    int64_t target = kNotMapped;
    bool agree = true;
    for (size_t i = 0; i < args.size(); ++i) {
      if (dims[i] == kNotMapped) continue;
      if (args[i].ndim() - 1 != static_cast<int64_t>(shape.size())) agree = false;
      if (target == kNotMapped) target = dims[i];
      else if (target != dims[i]) agree = false;
    }
    if (!agree) target = 0;
    Shape full = shape;
    full.insert(full.begin() + target, axis.size);
    std::vector<Array> in;
    in.reserve(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      if (dims[i] != kNotMapped) {
        Array x = move_axis(args[i], dims[i], target);
        if (x.ndim() - 1 < static_cast<int64_t>(shape.size())) {  // a batched scalar among arrays
          x = lax::broadcast_in_dim(x, full, {target});
        }
        in.push_back(x);
      } else {
        // Broadcast (a view) to the full batched shape.
        const Array& x = args[i];
        std::vector<int64_t> bdims;
        if (x.ndim() != 0) {
          for (int64_t k = 0; k < x.ndim(); ++k) bdims.push_back(k < target ? k : k + 1);
        }
        in.push_back(lax::broadcast_in_dim(x, full, bdims));
      }
    }
    std::vector<Array> out = jx::bind(p, in, params);
    return BatchResult{out, std::vector<int64_t>(out.size(), target)};
  };
}

BatchRule leading_batch(const Primitive& p, ParamsAdjust adjust) {
  return [&p, adjust = std::move(adjust)](std::span<const Array> args, std::span<const int64_t> dims,
                                          const Params& params, const BatchAxis& axis) {
    std::vector<Array> in;
    std::vector<Aval> unbatched;
    for (size_t i = 0; i < args.size(); ++i) {
      Aval a = args[i].aval();
      if (dims[i] != kNotMapped) a.shape.erase(a.shape.begin() + dims[i]);
      unbatched.push_back(std::move(a));
      in.push_back(batch_to_front(args[i], dims[i], axis.size));
    }
    std::vector<Array> out = jx::bind(p, in, adjust(params, unbatched));
    return BatchResult{out, std::vector<int64_t>(out.size(), 0)};
  };
}

BatchRule reduction(const Primitive& p) {
  return [&p](std::span<const Array> args, std::span<const int64_t> dims, const Params& params, const BatchAxis&) {
    int64_t b = dims[0];
    std::vector<int64_t> axes = params.get_ints("axes");
    int64_t before = 0;
    for (int64_t& a : axes) {
      if (a >= b) ++a;
      else ++before;
    }
    Params q = params;
    q.set("axes", axes);
    std::vector<Array> in(args.begin(), args.end());
    std::vector<Array> out = jx::bind(p, in, q);
    return BatchResult{out, std::vector<int64_t>(out.size(), b - before)};
  };
}

Params shift_axes(const Params& params, std::string_view name) {
  Params out = params;
  std::vector<int64_t> axes = params.get_ints(name);
  for (int64_t& a : axes) ++a;
  out.set(std::string(name), axes);
  return out;
}

}  // namespace jx::lax::batch_rules
