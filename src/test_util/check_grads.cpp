// check_grads: forward mode against float64 central differences, reverse mode against
// the same differences through <J v, u> == <v, J^T u>, and higher orders by checking the
// jvp and vjp functions themselves. The comparison arithmetic is done here in C++
// doubles (not with jx ops), so the oracle does not depend on the code under test.
#include "jx/test_util.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <random>
#include <string>

#include "jx/dtype.h"
#include "jx/error.h"
#include "jx/lax.h"
#include "jx/transforms.h"

namespace jx::test_util {
namespace {

using cd = std::complex<double>;
using Values = std::vector<cd>;

bool differentiable(const Array& a) { return is_inexact(a.dtype()); }
DType wide_dtype(DType d) { return is_complex(d) ? DType::Complex128 : DType::Float64; }

Values values_of(const Array& a) { return a.to_vector<complex128_t>(); }

// A constant of dtype `d` (float64/complex128 values converted), shaped `shape`.
Array make_array(const Values& v, const Shape& shape, DType d, bool weak) {
  Array wide = is_complex(d) ? Array(std::vector<complex128_t>(v.begin(), v.end()), shape) : [&] {
    std::vector<double> re(v.size());
    for (size_t i = 0; i < v.size(); ++i) re[i] = v[i].real();
    return Array(re, shape);
  }();
  if (wide.dtype() == d && !weak) return wide;
  return lax::convert_element_type(wide, d, weak);
}

// Standard normal entries (complex ones for complex dtypes), from the check's own RNG.
Values random_values(const Aval& aval, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  Values v(static_cast<size_t>(aval.size()));
  for (cd& x : v) x = is_complex(aval.dtype) ? cd(normal(rng), normal(rng)) : cd(normal(rng), 0.0);
  return v;
}

struct Tolerance {
  double atol, rtol;
};

Tolerance tolerance_for(const CheckGradsOptions& opts, std::initializer_list<DType> dtypes) {
  double t = 0;
  for (DType d : dtypes) t = std::max(t, default_gradient_tolerance(d));
  return {opts.atol.value_or(t), opts.rtol.value_or(t)};
}

std::string fmt(double x) {
  std::ostringstream os;
  os.precision(6);
  os << x;
  return os.str();
}
std::string fmt(cd x) { return x.imag() == 0 ? fmt(x.real()) : "(" + fmt(x.real()) + (x.imag() < 0 ? "" : "+") + fmt(x.imag()) + "j)"; }

// The function evaluated on wide copies of the arguments, argument `i` moved by `step * v`.
std::vector<Array> eval_shifted(const FlatFunction& f, std::span<const Array> wide_args, size_t i, const Values& v,
                                double step) {
  std::vector<Array> shifted(wide_args.begin(), wide_args.end());
  Values x = values_of(wide_args[i]);
  for (size_t k = 0; k < x.size(); ++k) x[k] += step * v[k];
  shifted[i] = make_array(x, wide_args[i].shape(), wide_args[i].dtype(), false);
  return f(shifted);
}

class Checker {
 public:
  Checker(const FlatFunction& f, std::span<const Array> args, const CheckGradsOptions& opts, std::string where)
      : f_(f), args_(args.begin(), args.end()), opts_(opts), where_(std::move(where)) {}

  void run(int order) {
    for (const Array& a : args_)
      if (!a.valid()) detail::fail("check_grads", "an argument is a null jx::Array");
    std::mt19937_64 rng(opts_.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(where_.size()));
    outs_ = f_(args_);
    std::vector<Array> wide_args;
    for (const Array& a : args_)
      wide_args.push_back(differentiable(a) ? lax::convert_element_type(a, wide_dtype(a.dtype())) : a);
    // One random direction per differentiable argument, one cotangent per inexact output.
    directions_.assign(args_.size(), {});
    for (size_t i = 0; i < args_.size(); ++i)
      if (differentiable(args_[i])) directions_[i] = random_values(args_[i].aval(), rng);
    cotangents_.assign(outs_.size(), {});
    for (size_t k = 0; k < outs_.size(); ++k)
      if (differentiable(outs_[k])) cotangents_[k] = random_values(outs_[k].aval(), rng);
    // Finite differences along each argument's direction: fd[i][k] = J_ki v_i.
    fd_.assign(args_.size(), {});
    for (size_t i = 0; i < args_.size(); ++i) {
      if (!differentiable(args_[i])) continue;
      std::vector<Array> plus = eval_shifted(f_, wide_args, i, directions_[i], opts_.eps);
      std::vector<Array> minus = eval_shifted(f_, wide_args, i, directions_[i], -opts_.eps);
      if (plus.size() != outs_.size() || minus.size() != outs_.size())
        detail::fail("check_grads", "the function returned ", plus.size(), " outputs for float64 arguments but ",
                     outs_.size(), " for the original ones; it must be dtype-generic");
      fd_[i].resize(outs_.size());
      for (size_t k = 0; k < outs_.size(); ++k) {
        if (!differentiable(outs_[k])) continue;
        Values p = values_of(plus[k]), m = values_of(minus[k]);
        if (p.size() != static_cast<size_t>(outs_[k].size()))
          detail::fail("check_grads", "output ", k, " is ", plus[k].aval().str(), " for float64 arguments but ",
                       outs_[k].aval().str(), " for the original ones");
        Values d(p.size());
        for (size_t e = 0; e < p.size(); ++e) d[e] = (p[e] - m[e]) / (2 * opts_.eps);
        fd_[i][k] = std::move(d);
      }
    }
    bool fwd = static_cast<int>(opts_.modes) & static_cast<int>(Modes::Fwd);
    bool rev = static_cast<int>(opts_.modes) & static_cast<int>(Modes::Rev);
    if (fwd) check_jvp();
    if (rev) check_vjp();
    if (order > 1) {
      if (fwd) check_jvp_function(order - 1);
      if (rev) check_vjp_function(order - 1);
    }
  }

 private:
  std::vector<Array> tangents_for(std::span<const Array> xs, std::optional<size_t> only) const {
    std::vector<Array> t(xs.size());
    for (size_t i = 0; i < xs.size(); ++i)
      if (differentiable(xs[i]) && (!only || *only == i))
        t[i] = make_array(directions_[i], xs[i].shape(), xs[i].dtype(), xs[i].weak_type());
    return t;
  }

  std::string arg_str(size_t i) const { return detail::cat("argument ", i, " (", args_[i].aval().str(), ")"); }
  std::string out_str(size_t k) const { return detail::cat("output ", k, " (", outs_[k].aval().str(), ")"); }

  void check_jvp() const {
    for (size_t i = 0; i < args_.size(); ++i) {
      if (!differentiable(args_[i])) continue;
      auto [ys, ts] = detail::jvp_flat(f_, args_, tangents_for(args_, i), "check_grads");
      for (size_t k = 0; k < outs_.size(); ++k) {
        if (!differentiable(outs_[k])) continue;
        if (ts[k].shape() != outs_[k].shape())
          detail::fail("check_grads", "forward mode (JVP), ", where_, ", ", arg_str(i), ": the tangent of ",
                       out_str(k), " has type ", ts[k].aval().str());
        Values t = values_of(ts[k]);
        const Values& want = fd_[i][k];
        Tolerance tol = tolerance_for(opts_, {args_[i].dtype(), outs_[k].dtype()});
        double max_abs = 0, max_rel = 0;
        size_t worst = 0;
        bool bad = false;
        for (size_t e = 0; e < t.size(); ++e) {
          double err = std::abs(t[e] - want[e]);
          bool nan_mismatch = std::isnan(err) && !(std::isnan(std::abs(t[e])) && std::isnan(std::abs(want[e])));
          if (nan_mismatch) err = INFINITY;
          if (std::isnan(err)) continue;  // both NaN: agree
          double rel = err / std::max(std::abs(want[e]), 1e-300);
          if (err > tol.atol + tol.rtol * std::abs(want[e]) && (!bad || err > max_abs)) worst = e, bad = true;
          max_abs = std::max(max_abs, err);
          max_rel = std::max(max_rel, rel);
        }
        if (bad)
          detail::fail("check_grads", "forward mode (JVP) mismatch, ", where_, ", ", arg_str(i), ", ", out_str(k),
                       ": max abs error ", fmt(max_abs), ", max rel error ", fmt(max_rel), " (element ", worst,
                       ": jvp ", fmt(t[worst]), " vs finite difference ", fmt(want[worst]), "); atol ",
                       fmt(tol.atol), ", rtol ", fmt(tol.rtol));
      }
    }
  }

  void check_vjp() const {
    detail::Linearized lin = detail::linearize_flat(f_, args_, "check_grads");
    // As JAX's check_vjp: pull back conj(u) and conjugate, so that for complex values
    // the identity reads Re<J v, u> == Re<v, J^H u>.
    std::vector<Array> cts(outs_.size());
    for (size_t k = 0; k < outs_.size(); ++k) {
      if (!differentiable(outs_[k])) continue;
      Values conj_u = cotangents_[k];
      for (cd& x : conj_u) x = std::conj(x);
      cts[k] = make_array(conj_u, outs_[k].shape(), outs_[k].dtype(), false);
    }
    std::vector<Array> back = detail::transpose_linear(*lin.linear, cts);
    if (back.size() != args_.size())
      detail::fail("check_grads", "reverse mode (VJP), ", where_, ": got ", back.size(), " cotangents for ",
                   args_.size(), " arguments");
    for (size_t i = 0; i < args_.size(); ++i) {
      if (!differentiable(args_[i])) continue;
      if (!back[i].valid() || back[i].shape() != args_[i].shape())
        detail::fail("check_grads", "reverse mode (VJP), ", where_, ", ", arg_str(i), ": its cotangent has type ",
                     back[i].valid() ? back[i].aval().str() : std::string("(none)"));
      Values ct = values_of(back[i]);
      const Values& v = directions_[i];
      // <v, J^T u> by reverse mode; <J v, u> with J v from the float64 differences.
      double ip_rev = 0, scale_rev = 0;
      for (size_t e = 0; e < v.size(); ++e) {
        cd term = std::conj(v[e]) * std::conj(ct[e]);
        ip_rev += term.real();
        scale_rev += std::abs(term);
      }
      double ip_fwd = 0, scale_fwd = 0;
      DType out_dtype = args_[i].dtype();
      for (size_t k = 0; k < outs_.size(); ++k) {
        if (!differentiable(outs_[k])) continue;
        out_dtype = default_gradient_tolerance(outs_[k].dtype()) > default_gradient_tolerance(out_dtype)
                        ? outs_[k].dtype()
                        : out_dtype;
        for (size_t e = 0; e < cotangents_[k].size(); ++e) {
          cd term = std::conj(fd_[i][k][e]) * cotangents_[k][e];
          ip_fwd += term.real();
          scale_fwd += std::abs(term);
        }
      }
      Tolerance tol = tolerance_for(opts_, {args_[i].dtype(), out_dtype});
      double err = std::abs(ip_rev - ip_fwd);
      double scale = std::max(scale_rev, scale_fwd);
      if (!(err <= tol.atol + tol.rtol * scale) && !(std::isnan(ip_rev) && std::isnan(ip_fwd)))
        detail::fail("check_grads", "reverse mode (VJP) mismatch, ", where_, ", ", arg_str(i),
                     ": <v, J^T u> = ", fmt(ip_rev), " by reverse mode but <J v, u> = ", fmt(ip_fwd),
                     " by finite differences; max abs error ", fmt(err), ", max rel error ",
                     fmt(err / std::max(scale, 1e-300)), "; atol ", fmt(tol.atol), ", rtol ", fmt(tol.rtol));
    }
  }

  // x -> J(x) v, checked to order-1 (the second derivative along v).
  void check_jvp_function(int order) const {
    FlatFunction g = [this](std::span<const Array> xs) {
      auto [ys, ts] = detail::jvp_flat(f_, xs, tangents_for(xs, std::nullopt), "check_grads");
      std::vector<Array> out;
      for (size_t k = 0; k < ys.size(); ++k)
        if (differentiable(ys[k])) out.push_back(ts[k]);
      return out;
    };
    CheckGradsOptions o = opts_;
    o.seed = opts_.seed + 1;
    Checker(g, args_, o, detail::cat("order ", next_order(), ", of the JVP function")).run(order);
  }

  // x -> J(x)^T u, checked to order-1.
  void check_vjp_function(int order) const {
    FlatFunction g = [this](std::span<const Array> xs) {
      detail::Linearized lin = detail::linearize_flat(f_, xs, "check_grads");
      std::vector<Array> cts(lin.primals_out.size());
      for (size_t k = 0; k < cts.size() && k < cotangents_.size(); ++k)
        if (differentiable(lin.primals_out[k]))
          cts[k] = make_array(cotangents_[k], lin.primals_out[k].shape(), lin.primals_out[k].dtype(), false);
      std::vector<Array> back = detail::transpose_linear(*lin.linear, cts);
      std::vector<Array> out;
      for (size_t i = 0; i < xs.size(); ++i)
        if (differentiable(xs[i])) out.push_back(back[i]);
      return out;
    };
    CheckGradsOptions o = opts_;
    o.seed = opts_.seed + 2;
    Checker(g, args_, o, detail::cat("order ", next_order(), ", of the VJP function")).run(order);
  }

  int next_order() const {
    // where_ starts with "order N".
    return std::stoi(where_.substr(6)) + 1;
  }

  const FlatFunction& f_;
  std::vector<Array> args_;
  CheckGradsOptions opts_;
  std::string where_;
  std::vector<Array> outs_;
  std::vector<Values> directions_, cotangents_;
  std::vector<std::vector<Values>> fd_;
};

}  // namespace

double default_gradient_tolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64:
    case DType::Complex128:
      return 1e-5;
    case DType::Float32:
    case DType::Complex64:
      return 2e-3;
    case DType::Float16:
    case DType::BFloat16:
      return 5e-2;
    default:
      return 0;
  }
}

void check_grads(const FlatFunction& f, std::span<const Array> args, const CheckGradsOptions& opts) {
  if (opts.order < 1) detail::fail("check_grads", "order must be at least 1, got ", opts.order);
  if (!(opts.eps > 0)) detail::fail("check_grads", "eps must be positive, got ", opts.eps);
  Checker(f, args, opts, "order 1").run(opts.order);
}

}  // namespace jx::test_util
