// The non-template part of jx::custom_jvp (include/jx/custom_derivatives.h): the user's
// rule, checked against its outputs, goes through the library's own custom_jvp_call
// (src/transforms/custom_jvp.cpp), which holds every transformation rule.
#include "jx/custom_derivatives.h"

#include "jx/error.h"
#include "transforms/custom_jvp.h"
#include "transforms/jaxpr_transforms.h"

namespace jx::detail {

std::vector<Array> custom_jvp_flat(const std::string& name, const FlatFn& f, const FlatJvpRule& rule,
                                   std::span<const Array> args) {
  CustomJvpRule checked = [&](std::span<const Array> p, std::span<const Array> t) {
    auto r = rule(p, t);
    auto& [out, tan] = r;
    for (size_t i = 0; i < out.size() && i < tan.size(); ++i) {
      const Aval want = tangent_aval(out[i].aval());
      const Aval got = tan[i].aval();
      if (got.shape != want.shape || got.dtype != want.dtype)
        fail("custom_jvp", "'", name, "': the rule's tangent output ", i, " is ", got.str(),
             " but its primal output is ", out[i].aval().str(), "; a tangent must have its primal's shape and dtype");
    }
    return r;
  };
  return custom_jvp_call(name, f, checked, args);
}

void custom_jvp_structure_error(const std::string& name, const std::string& what, const std::string& got,
                                const std::string& expected) {
  fail("custom_jvp", "'", name, "': the rule's ", what, " has structure ", got, " but the function's output has ",
       expected);
}

void custom_jvp_nondiff_error(const std::string& name, const std::string& cause) {
  fail("custom_jvp", "'", name, "': a value being differentiated reaches f or the rule other than through a "
       "differentiated argument: a nondiff_argnums argument (which cannot be differentiated, as in JAX) or a captured "
       "value. The call raised: ", cause);
}

}  // namespace jx::detail
