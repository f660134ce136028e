#include "lax/ad_rules.h"

#include "jx/error.h"

namespace jx::lax::ad_rules {

JvpRule unary(const Primitive& p, UnaryDerivative d) {
  return [&p, d = std::move(d)](std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) {
    std::vector<Array> out = jx::bind(p, primals, params);
    return JvpResult{out, {d(primals[0], out[0], tangents[0])}};
  };
}

JvpRule binary(const Primitive& p, PartialDerivative dx, PartialDerivative dy) {
  return [&p, dx = std::move(dx), dy = std::move(dy)](std::span<const Array> primals,
                                                      std::span<const Array> tangents, const Params& params) {
    std::vector<Array> out = jx::bind(p, primals, params);
    Array t;
    if (tangents[0].valid() && dx) t = dx(primals[0], primals[1], out[0], tangents[0]);
    if (tangents[1].valid() && dy) t = ad::add_tangents(t, dy(primals[0], primals[1], out[0], tangents[1]));
    return JvpResult{out, {t}};
  };
}

JvpRule linear(const Primitive& p) {
  return [&p](std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
    std::vector<Array> out = jx::bind(p, primals, params);
    std::vector<Array> ts;
    for (size_t i = 0; i < primals.size(); ++i) ts.push_back(ad::instantiate(tangents[i], primals[i].aval()));
    return JvpResult{out, jx::bind(p, ts, params)};
  };
}

JvpRule linear_in_first(const Primitive& p) {
  return [&p](std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
    std::vector<Array> out = jx::bind(p, primals, params);
    std::vector<Array> args(primals.begin(), primals.end());
    args[0] = tangents[0];
    if (!args[0].valid()) return JvpResult{out, std::vector<Array>(out.size())};
    return JvpResult{out, jx::bind(p, args, params)};
  };
}

TransposeRule unary_transpose(UnaryTranspose g) {
  return [g = std::move(g)](std::span<const Array> cts, std::span<const TransposeOperand> operands,
                            const Params& params) {
    std::vector<Array> out(operands.size());
    if (cts[0].valid()) out[0] = g(cts[0], operands[0].aval, params);
    return out;
  };
}

}  // namespace jx::lax::ad_rules
