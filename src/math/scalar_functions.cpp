#include "math/scalar_functions.h"

#include <cmath>
#include <limits>

#include "backend/cpu/vector_math.h"

namespace jx::math {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kEpsilon = std::numeric_limits<double>::epsilon() / 2;

// (2j)! / B_2j for j = 1..12 (B_2j the Bernoulli numbers): the Euler-Maclaurin tail's
// coefficients, B_2j / (2j)! being the factor of the (2j-1)-th derivative.
constexpr double kFactorialOverBernoulli[] = {
    12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
    -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15, 1.8152105401943546773e17,
    -7.1661652561756670113e18};

// The Hurwitz zeta function sum_{k>=0} (q + k)^-x, with JAX's (XLA's) domain: NaN for
// x < 1, NaN operands and q = inf, inf at x = 1; for q <= 0 an integer x is needed (NaN
// otherwise), and at the poles q = 0, -1, -2, ... the value is inf for an even x, NaN
// for an odd one. Method: the first terms summed directly up to q + N >= 9 (at least 9
// terms), then Euler-Maclaurin's integral, half-term and Bernoulli corrections.
double hurwitz_zeta(double x, double q) {
  if (std::isnan(x) || std::isnan(q) || x < 1) return kNaN;
  if (x == 1) return kInf;
  if (q <= 0) {
    if (q == std::floor(q)) return std::fmod(x, 2.0) == 0 ? kInf : kNaN;
    if (x != std::floor(x)) return kNaN;  // (q + k)^-x is not real
  }
  if (q == kInf) return kNaN;  // JAX's value (the sum's limit would be 0)
  if (q > 1e8) return (1 / (x - 1) + 1 / (2 * q)) * std::pow(q, 1 - x);  // the sum's asymptotic form
  double sum = std::pow(q, -x);
  double a = q, term = 0;
  int terms = 0;
  while (terms < 9 || a <= 9) {
    ++terms;
    a += 1;
    term = std::pow(a, -x);
    sum += term;
    if (std::fabs(term / sum) < kEpsilon) return sum;
  }
  // term = a^-x; the remaining sum over a, a + 1, ... is the integral a^(1-x) / (x - 1)
  // minus half the first term plus sum_j B_2j / (2j)! * x (x+1) ... (x+2j-2) a^(-x-2j+1).
  const double w = a;
  sum += term * w / (x - 1);
  sum -= 0.5 * term;
  double rising = 1, k = 0;
  for (double coefficient : kFactorialOverBernoulli) {
    rising *= x + k;
    term /= w;
    const double t = rising * term / coefficient;
    sum += t;
    if (std::fabs(t / sum) < kEpsilon) break;
    k += 1;
    rising *= x + k;
    term /= w;
    k += 1;
  }
  return sum;
}

// polygamma(m, x) = d^m/dx^m digamma(x) = (-1)^(m+1) m! zeta(m + 1, x) for m >= 1,
// digamma at m = 0, NaN unless m is a nonnegative integer (JAX's definition).
double polygamma(double m, double x) {
  if (std::isnan(m) || m < 0 || m != std::floor(m)) return kNaN;
  if (m == 0) return cpu::digamma(x);
  const double sign = std::fmod(m, 2.0) == 1 ? 1.0 : -1.0;
  return sign * std::tgamma(m + 1) * hurwitz_zeta(m + 1, x);
}

constexpr ScalarFunction kFunctions[] = {
    {"polygamma", 2, nullptr, polygamma},
    {"zeta", 2, nullptr, hurwitz_zeta},
};

}  // namespace

std::span<const ScalarFunction> scalar_functions() { return kFunctions; }

const ScalarFunction* find_scalar_function(std::string_view name) {
  for (const ScalarFunction& f : kFunctions)
    if (name == f.name) return &f;
  return nullptr;
}

}  // namespace jx::math
