// The scan primitive (JAX's scan_p): its registration block, shape rule and eager impl,
// and the flat core of the public lax::scan / map / fori_loop (jx/control_flow/scan.h).
// Its transformation rules are in scan_rules.cpp.
#include "jx/control_flow/scan.h"

#include <algorithm>
#include <optional>

#include "core/array_internal.h"
#include "core/subprogram.h"
#include "lax/control_flow/buffer_loop.h"
#include "jx/error.h"
#include "jx/lax.h"
#include "lax/control_flow/scan_rules.h"
#include "lax/data_movement.h"
#include "lax/rules.h"
#include "transforms/ad_util.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/staging.h"

namespace jx::detail {

ScanParams ScanParams::from(const Params& params) {
  ScanParams p;
  p.body = params.get_jaxpr("body");
  if (!p.body) fail("scan", "has a null body");
  p.num_consts = params.get_int("num_consts");
  p.num_carry = params.get_int("num_carry");
  p.length = params.get_int("length");
  p.reverse = params.get_bool("reverse");
  p.unroll = params.get_int("unroll");
  const Jaxpr& j = p.body->jaxpr;
  if (!j.constvars.empty()) fail("scan", "body must have no constvars (constants are leading operands)");
  if (p.num_consts < 0 || p.num_carry < 0 || p.consts() + p.carry() > j.invars.size())
    fail("scan", "num_consts=", p.num_consts, " and num_carry=", p.num_carry, " do not fit a body of ",
         j.invars.size(), " inputs");
  if (p.carry() > j.outvars.size())
    fail("scan", "num_carry=", p.num_carry, " but the body has only ", j.outvars.size(), " outputs");
  if (p.length < 0) fail("scan", "length must be nonnegative, got ", p.length);
  if (p.unroll < 1) fail("scan", "unroll must be at least 1, got ", p.unroll);
  return p;
}

Params ScanParams::to_params() const {
  return Params{{"body", body},     {"num_consts", num_consts}, {"num_carry", num_carry},
                {"length", length}, {"reverse", reverse},       {"unroll", unroll}};
}

ScanParams ScanParams::with(JaxprRef new_body, size_t new_consts, size_t new_carry) const {
  ScanParams p = *this;
  p.body = std::move(new_body);
  p.num_consts = static_cast<int64_t>(new_consts);
  p.num_carry = static_cast<int64_t>(new_carry);
  return p;
}

std::vector<Array> bind_scan(std::span<const Array> operands, const ScanParams& p) {
  return jx::bind(scan_p, operands, p.to_params());
}

namespace {

bool same_type(const Aval& a, const Aval& b) { return a.shape == b.shape && a.dtype == b.dtype; }

Aval without_leading_axis(const Aval& a) {
  Aval s = a;
  s.shape.erase(s.shape.begin());
  return s;
}

// The shape rule: operands [consts..., init..., xs...] as the body takes them (xs with a
// leading axis of `length`), a body that keeps the carry's type; outputs [carry..., ys...].
std::vector<Aval> scan_abstract_eval(std::span<const Aval> in, const Params& params) {
  const ScanParams p = ScanParams::from(params);
  const Jaxpr& j = p.body->jaxpr;
  if (j.invars.size() != in.size())
    fail("scan", "the body takes ", j.invars.size(), " inputs but the scan has ", in.size(), " operands (",
         lax::rules::avals_str(in), ")");
  const size_t nc = p.consts(), nk = p.carry();
  for (size_t i = 0; i < in.size(); ++i) {
    const Aval& want = j.invars[i].aval;
    const bool is_x = i >= nc + nk;
    const char* role = i < nc ? "const" : is_x ? "xs" : "carry";
    const size_t index = i < nc ? i : is_x ? i - nc - nk : i - nc;
    if (is_x) {
      if (in[i].ndim() == 0 || in[i].shape[0] != p.length)
        fail("scan", "xs operand ", index, " has type ", in[i].str(), " but the scan's length is ", p.length);
      if (!same_type(without_leading_axis(in[i]), want))
        fail("scan", "xs operand ", index, " has type ", in[i].str(), " but the body takes slices of type ",
             want.str());
    } else if (!same_type(in[i], want)) {
      fail("scan", role, " operand ", index, " has type ", in[i].str(), " but the body takes ", want.str());
    }
  }
  std::vector<Aval> out;
  for (size_t i = 0; i < j.outvars.size(); ++i) {
    Aval a = j.outvars[i].aval();
    if (i < nk) {
      if (!same_type(a, in[nc + i]))
        fail("scan", "the body must keep the carry's type: carry ", i, " is ", in[nc + i].str(),
             " on input but ", a.str(), " on output");
    } else {
      a.shape.insert(a.shape.begin(), p.length);
    }
    out.push_back(std::move(a));
  }
  return out;
}

// x[i] along axis 0: a view.
Array row(const Array& x, int64_t i) {
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0);
  std::vector<int64_t> limit = x.shape();
  start[0] = i;
  limit[0] = i + 1;
  return lax::squeeze(lax::slice(x, start, limit), {0});
}

// Writes y into row i of the freshly allocated `stacked`.
void write_row(const Array& stacked, int64_t i, const Array& y) {
  const std::vector<int64_t>& strides = detail::strides(stacked);
  const int64_t width = itemsize(y.dtype());
  char* dst = mutable_data<char>(stacked) + i * strides[0] * width;
  lax::movement::copy_strided(width, y.shape(), raw_data(y), detail::strides(y), dst,
                              std::vector<int64_t>(strides.begin() + 1, strides.end()));
}

// Under jit, when the body compiled to native kernels only (core/subprogram.h), the scan
// runs on buffers: the body reads its x straight from row i of each xs, writes its ys
// straight into row i of their stacks, and the carries alternate between two sets.
std::optional<std::vector<Array>> scan_on_buffers(const ScanParams& p, std::span<const Array> in,
                                                  std::span<const Aval> out_avals) {
  const detail::BufferProgram* body = detail::buffer_subprogram(*p.body);
  if (!body) return std::nullopt;
  const size_t nc = p.consts(), nk = p.carry(), nx = p.xs(), ny = p.ys();
  std::vector<Array> held;  // contiguous consts and xs
  std::vector<const void*> body_in(nc + nk + nx);
  std::vector<void*> body_out(nk + ny);
  for (size_t k = 0; k < nc; ++k) {
    held.push_back(contiguous(in[k]));
    body_in[k] = raw_data(held.back());
  }
  auto row_bytes = [](const Aval& stacked) {
    return stacked.shape[0] == 0 ? 0 : stacked.size() / stacked.shape[0] * itemsize(stacked.dtype);
  };
  std::vector<const char*> xs;
  std::vector<int64_t> x_row_bytes, y_row_bytes;
  for (size_t k = 0; k < nx; ++k) {
    held.push_back(contiguous(in[nc + nk + k]));
    xs.push_back(static_cast<const char*>(raw_data(held.back())));
    x_row_bytes.push_back(row_bytes(held.back().aval()));
  }
  std::vector<Array> ys;
  std::vector<char*> y_base;
  for (size_t k = 0; k < ny; ++k) {
    ys.push_back(alloc_array(out_avals[nk + k]));
    y_base.push_back(mutable_data<char>(ys.back()));
    y_row_bytes.push_back(row_bytes(out_avals[nk + k]));
  }
  detail::CarryBuffers carry(in.subspan(nc, nk));
  carry.mirror_current(body_in.data() + nc);
  carry.mirror_next(body_out.data());
  detail::LoopWorkspace workspace(body->workspace_bytes());
  for (int64_t step = 0; step < p.length; ++step) {
    const int64_t i = p.reverse ? p.length - 1 - step : step;
    for (size_t k = 0; k < nx; ++k) body_in[nc + nk + k] = xs[k] + i * x_row_bytes[k];
    for (size_t k = 0; k < ny; ++k) body_out[nk + k] = y_base[k] + i * y_row_bytes[k];
    body->run(body_in.data(), body_out.data(), workspace.data());
    carry.advance();
  }
  std::vector<Array> result = carry.take();
  result.insert(result.end(), ys.begin(), ys.end());
  return result;
}

// Evaluates the body step by step, each y written into its row of a preallocated stack.
std::vector<Array> scan_impl(std::span<const Array> in, const Params& params, std::span<const Aval> out_avals) {
  TraceScope eager(nullptr);  // the body runs eagerly whatever transformation is around
  const ScanParams p = ScanParams::from(params);
  if (std::optional<std::vector<Array>> done = scan_on_buffers(p, in, out_avals)) return std::move(*done);
  const size_t nc = p.consts(), nk = p.carry(), nx = p.xs(), ny = p.ys();
  std::vector<Array> args(in.begin(), in.end());  // [consts..., carry..., x slices...]
  std::vector<Array> ys;
  for (size_t k = 0; k < ny; ++k) ys.push_back(alloc_array(out_avals[nk + k]));
  for (int64_t step = 0; step < p.length; ++step) {
    const int64_t i = p.reverse ? p.length - 1 - step : step;
    for (size_t k = 0; k < nx; ++k) args[nc + nk + k] = row(in[nc + nk + k], i);
    std::vector<Array> outs = detail::run_subprogram(*p.body, args);
    for (size_t k = 0; k < nk; ++k) args[nc + k] = std::move(outs[k]);
    for (size_t k = 0; k < ny; ++k) write_row(ys[k], i, outs[nk + k]);
  }
  std::vector<Array> result(args.begin() + static_cast<std::ptrdiff_t>(nc),
                            args.begin() + static_cast<std::ptrdiff_t>(nc + nk));
  result.insert(result.end(), ys.begin(), ys.end());
  return result;
}

}  // namespace

const Primitive scan_p("scan", {.traits = kLinear | kCallsSubprogram,  // linear in the carries and xs of a tangent loop
                                .num_outputs = -1,
                                .abstract_eval = scan_abstract_eval,
                                .impl = scan_impl,
                                .jvp = scan_jvp,
                                .transpose = scan_transpose,
                                .batch = scan_batch,
                                .partial_eval = scan_partial_eval,
                                .dce = scan_dce});

// ---- the flat core of the public API ----

int64_t scan_length(std::span<const Array> xs, std::optional<int64_t> length, std::string_view op) {
  if (length && *length < 0) fail(op, "length must be nonnegative, got ", *length);
  std::optional<int64_t> found;
  bool differ = false;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].valid()) fail(op, "xs leaf ", i, " is a null jx::Array");
    if (xs[i].ndim() == 0) fail(op, "xs leaf ", i, " has type ", xs[i].aval().str(), ", with no leading axis to scan over");
    if (found && *found != xs[i].shape(0)) differ = true;
    if (!found) found = xs[i].shape(0);
  }
  if (differ) {
    std::string sizes;
    for (size_t i = 0; i < xs.size(); ++i)
      sizes += cat(i ? ", " : "", xs[i].shape(0), " (leaf ", i, ": ", xs[i].aval().str(), ")");
    fail(op, "xs leaves have different leading sizes: ", sizes);
  }
  if (found && length && *found != *length)
    fail(op, "length=", *length, " but the xs have leading size ", *found);
  if (found) return *found;
  if (!length)
    fail(op, "xs has no array leaves, so the number of steps is unknown",
         op == "map" ? "" : " (give it as ScanOptions::length)");
  return *length;
}

void check_carry_structure(const tree::TreeDef& out, const tree::TreeDef& in, const ScanNames& names) {
  if (!(out == in))
    fail(names.op, names.fn, " must return a carry with the structure of its input: it returned ", out.str(),
         " but the carry is ", in.str());
}

std::vector<Array> scan_flat(const FlatFn& body, std::vector<Array> init, std::vector<Array> xs,
                             const lax::ScanOptions& options, const ScanNames& names) {
  const int64_t length = scan_length(xs, options.length, names.op);
  if (options.unroll < 1) fail(names.op, "unroll must be at least 1, got ", options.unroll);
  auto trace = [&] {
    std::vector<Aval> avals;
    for (size_t i = 0; i < init.size(); ++i) {
      if (!init[i].valid()) fail(names.op, "init leaf ", i, " is a null jx::Array");
      avals.push_back(init[i].aval());
    }
    for (const Array& x : xs) avals.push_back(without_leading_axis(x.aval()));
    ClosedJaxpr program = stage_flat(body, avals, std::string(names.op));
    if (program.jaxpr.outvars.size() < init.size())
      fail(names.op, names.fn, " returned ", program.jaxpr.outvars.size(), " arrays for a carry of ", init.size());
    return program;
  };
  ClosedJaxpr program = trace();
  // A weakly typed init (a C++ scalar) takes the type the body gives its carry, as in JAX.
  bool promoted = false;
  for (size_t i = 0; i < init.size(); ++i) {
    const Aval out = program.jaxpr.outvars[i].aval();
    if (init[i].weak_type() && out.shape == init[i].shape() && out.dtype != init[i].dtype()) {
      init[i] = lax::convert_element_type(init[i], out.dtype, out.weak_type);
      promoted = true;
    }
  }
  if (promoted) program = trace();
  for (size_t i = 0; i < init.size(); ++i) {
    const Aval out = program.jaxpr.outvars[i].aval();
    if (!same_type(out, init[i].aval()))
      fail(names.op, names.fn, " must return a carry of the type it takes: ",
           i < names.hidden_carry ? std::string("the loop counter") : cat("carry leaf ", i - names.hidden_carry),
           " is ", init[i].aval().str(), " on input but ", out.str(), " on output");
  }
  std::vector<Array> operands;
  JaxprRef b = body_with_consts_first(std::move(program), &operands);
  const size_t num_consts = operands.size();
  operands.insert(operands.end(), init.begin(), init.end());
  operands.insert(operands.end(), xs.begin(), xs.end());
  ScanParams p{b, static_cast<int64_t>(num_consts), static_cast<int64_t>(init.size()), length, options.reverse,
               options.unroll};
  return bind_scan(operands, p);
}

MapChunks map_chunks(std::span<const Array> xs, int64_t batch_size) {
  MapChunks out;
  for (const Array& x : xs) {
    const int64_t n = x.shape(0), full = n / batch_size * batch_size;
    std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), limit = x.shape();
    limit[0] = full;
    Shape chunked = x.shape();
    chunked[0] = batch_size;
    chunked.insert(chunked.begin(), n / batch_size);
    out.chunks.push_back(lax::reshape(lax::slice(x, start, limit), chunked));
    if (full == n) continue;
    start[0] = full;
    limit[0] = n;
    out.remainder.push_back(lax::slice(x, start, limit));
  }
  return out;
}

std::vector<Array> map_unchunk(std::span<const Array> chunked, std::span<const Array> remainder) {
  std::vector<Array> out;
  for (size_t i = 0; i < chunked.size(); ++i) {
    Shape rows(chunked[i].shape().begin() + 1, chunked[i].shape().end());
    rows[0] *= chunked[i].shape(0);
    Array flat = lax::reshape(chunked[i], rows);
    out.push_back(remainder.empty() ? flat : lax::concatenate({flat, remainder[i]}, 0));
  }
  return out;
}

Array fori_counter(int64_t lower, int64_t upper) {
  constexpr int64_t lo = INT32_MIN, hi = INT32_MAX;
  if (lower < lo || lower > hi || upper < lo || upper > hi)
    fail("fori_loop", "bounds must fit int32 (the counter i is an int32 scalar), got lower=", lower,
         " upper=", upper);
  return lax::convert_element_type(Array(static_cast<int>(lower)), DType::Int32);
}

// ---- associative_scan (JAX's, after Blelloch's parallel prefix) ----
namespace {

// x[start:limit:stride] along `axis`: a view.
Array slice_along(const Array& x, int64_t axis, int64_t start, int64_t limit, int64_t stride = 1) {
  const auto a = static_cast<size_t>(axis);
  std::vector<int64_t> starts(static_cast<size_t>(x.ndim()), 0), limits = x.shape(), strides(starts.size(), 1);
  starts[a] = start;
  limits[a] = limit;
  strides[a] = stride;
  return lax::slice(x, starts, limits, strides);
}

// a[0], b[0], a[1], b[1], ... along `axis` (a as long as b or one longer): each spread
// out with interior padding, then added (or'ed) into the other's holes.
Array interleave(const Array& a, const Array& b, int64_t axis) {
  const bool same = a.shape(static_cast<int>(axis)) == b.shape(static_cast<int>(axis));
  std::vector<lax::PadDim> pad_a(static_cast<size_t>(a.ndim())), pad_b = pad_a;
  pad_a[static_cast<size_t>(axis)] = {0, same ? 1 : 0, 1};
  pad_b[static_cast<size_t>(axis)] = {1, same ? 0 : 1, 1};
  const Array zero = ad::zeros(Aval{{}, a.dtype(), false});
  Array spread_a = lax::pad(a, zero, pad_a), spread_b = lax::pad(b, zero, pad_b);
  return a.dtype() == DType::Bool ? lax::bitwise_or(spread_a, spread_b) : lax::add(spread_a, spread_b);
}

// The prefix combination: combine adjacent pairs, recurse on the half as long result
// (the prefixes at odd positions), then combine those with the following elements (the
// prefixes at even positions) and interleave.
std::vector<Array> prefix(const CombineFn& combine, const std::vector<Array>& elems, int64_t axis) {
  const int64_t n = elems[0].shape(static_cast<int>(axis));
  if (n < 2) return elems;
  std::vector<Array> left, right, following, odd_head;
  for (const Array& e : elems) {
    left.push_back(slice_along(e, axis, 0, n - 1, 2));
    right.push_back(slice_along(e, axis, 1, n, 2));
    following.push_back(slice_along(e, axis, 2, n, 2));
  }
  std::vector<Array> odd = prefix(combine, combine(left, right), axis);
  for (const Array& o : odd)
    odd_head.push_back(n % 2 == 0 ? slice_along(o, axis, 0, o.shape(static_cast<int>(axis)) - 1) : o);
  std::vector<Array> even = combine(odd_head, following);
  std::vector<Array> out;
  for (size_t i = 0; i < elems.size(); ++i)
    out.push_back(interleave(lax::concatenate({slice_along(elems[i], axis, 0, 1), even[i]}, axis), odd[i], axis));
  return out;
}

}  // namespace

std::vector<Array> associative_scan_flat(const CombineFn& combine, std::vector<Array> elems,
                                         const lax::AssociativeScanOptions& options) {
  if (elems.empty()) return elems;
  int64_t axis = 0;
  for (size_t i = 0; i < elems.size(); ++i) {
    if (!elems[i].valid()) fail("associative_scan", "elems leaf ", i, " is a null jx::Array");
    const int64_t ndim = elems[i].ndim();
    if (options.axis < -ndim || options.axis >= ndim)
      fail("associative_scan", "axis ", options.axis, " is out of range for elems leaf ", i, " of type ",
           elems[i].aval().str());
    const int64_t a = options.axis < 0 ? options.axis + ndim : options.axis;
    if (i > 0 && (a != axis || elems[i].shape(static_cast<int>(a)) != elems[0].shape(static_cast<int>(axis)))) {
      std::string types;
      for (size_t k = 0; k < elems.size(); ++k) types += (k ? ", " : "") + elems[k].aval().str();
      fail("associative_scan", "elems leaves must have the same size along axis ", options.axis, ", got ", types);
    }
    axis = a;
  }
  if (options.reverse)
    for (Array& e : elems) e = lax::rev(e, {axis});
  std::vector<Array> out = prefix(combine, elems, axis);
  if (options.reverse)
    for (Array& o : out) o = lax::rev(o, {axis});
  return out;
}

}  // namespace jx::detail
