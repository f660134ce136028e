// custom_vmap_call: jx::custom_vmap's primitive (include/jx/custom_derivatives.h), JAX's
// custom_vmap_call. Params: `jaxpr`, the function's program (the constants it closed over
// lifted to its first `num_consts` inputs); `rule`, the handle of the user's batching rule
// in a process-wide registry (a C++ callable cannot be a Params value); `name`. Shape rule,
// eager evaluation and jit (inline_calls inlines every kCall) are a call's: the function
// runs. vmap calls the rule on the arguments with their batch axes at 0 and checks its
// outputs against the function's types. jvp differentiates the function's program inline;
// partial evaluation is closed_call's (a split call is a plain closed_call). No dce rule:
// dropping operands would shift the `num_consts` layout, so the equation stays whole.
#include <mutex>

#include "jx/custom_derivatives.h"
#include "jx/error.h"
#include "jx/numpy.h"
#include "transforms/call_rules.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/staging.h"

namespace jx {
extern const Primitive custom_vmap_call_p;
extern const Primitive closed_call_p;

namespace detail {
namespace {

// Rules live as long as the process: a program that holds a call may be batched at any
// later time (a jit cache, make_jaxpr's result).
class RuleRegistry {
 public:
  int64_t add(FlatVmapRule rule) {
    std::lock_guard<std::mutex> lock(mu_);
    rules_.push_back(std::make_shared<const FlatVmapRule>(std::move(rule)));
    return static_cast<int64_t>(rules_.size()) - 1;
  }
  std::shared_ptr<const FlatVmapRule> get(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    if (id < 0 || id >= static_cast<int64_t>(rules_.size()))
      fail("custom_vmap_call", "has no batching rule with handle ", id);
    return rules_[static_cast<size_t>(id)];
  }

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<const FlatVmapRule>> rules_;
};
RuleRegistry& registry() {
  static RuleRegistry r;
  return r;
}

const JaxprRef& body_of(const Params& params) { return call_body(params, "custom_vmap_call"); }

BatchResult custom_vmap_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                              const BatchAxis& axis) {
  const std::string& name = params.get_string("name");
  const size_t k = static_cast<size_t>(params.get_int("num_consts"));
  for (size_t i = 0; i < k; ++i)
    if (dims[i] != kNotMapped)
      fail("custom_vmap", "'", name, "' closes over a value being batched (", args[i].aval().str(),
           "); pass it as an argument so the batching rule sees it");
  std::vector<bool> in_batched;
  std::vector<Array> xs;
  for (size_t i = k; i < args.size(); ++i) {
    in_batched.push_back(dims[i] != kNotMapped);
    xs.push_back(dims[i] == kNotMapped || dims[i] == 0 ? args[i] : numpy::moveaxis(args[i], dims[i], 0));
  }
  auto [outs, out_batched] = (*registry().get(params.get_int("rule")))(axis.size, in_batched, xs);
  const auto& outvars = body_of(params)->jaxpr.outvars;
  if (outs.size() != outvars.size() || out_batched.size() != outs.size())
    fail("custom_vmap", "'", name, "': the batching rule returned ", outs.size(), " outputs and ", out_batched.size(),
         " out_batched flags for the function's ", outvars.size(), " outputs");
  BatchResult r{outs, {}};
  for (size_t i = 0; i < outs.size(); ++i) {
    Aval want = outvars[i].aval();
    if (out_batched[i]) want.shape.insert(want.shape.begin(), axis.size);
    const Aval got = outs[i].aval();
    if (got.shape != want.shape || got.dtype != want.dtype)
      fail("custom_vmap", "'", name, "': the batching rule's output ", i, " is ", got.str(), " but ",
           out_batched[i] ? "batched" : "unbatched", " it must be ", want.str());
    r.dims.push_back(out_batched[i] ? 0 : kNotMapped);
  }
  return r;
}

}  // namespace

std::vector<Array> custom_vmap_flat(const std::string& name, const FlatFn& f, FlatVmapRule rule,
                                    std::span<const Array> args) {
  if (current_trace() == nullptr) return f(args);
  std::vector<Aval> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  std::vector<Array> operands;
  JaxprRef body = body_with_consts_first(stage_flat(f, avals, "custom_vmap"), &operands);
  const auto num_consts = static_cast<int64_t>(operands.size());
  operands.insert(operands.end(), args.begin(), args.end());
  return jx::bind(custom_vmap_call_p, operands,
                  {{"jaxpr", body},
                   {"rule", registry().add(std::move(rule))},
                   {"name", name},
                   {"num_consts", num_consts}});
}

void custom_vmap_structure_error(const std::string& name, const std::string& got, const std::string& expected) {
  fail("custom_vmap", "'", name, "': the batching rule's output has structure ", got,
       " but the function's output has ", expected);
}

}  // namespace detail

const Primitive custom_vmap_call_p(
    "custom_vmap_call",
    {.traits = kCallsSubprogram | kCall,
     .num_outputs = -1,
     .abstract_eval = [](std::span<const Aval> in,
                         const Params& params) { return detail::call_out_avals("custom_vmap_call", in, params); },
     .impl = [](std::span<const Array> in, const Params& params,
                std::span<const Aval>) { return eval_jaxpr(detail::body_of(params)->jaxpr, {}, in); },
     .jvp = [](std::span<const Array> primals, std::span<const Array> tangents,
               const Params& params) { return detail::jvp_of_call(detail::body_of(params), primals, tangents); },
     .batch = detail::custom_vmap_batch,
     .partial_eval =
         [](const std::vector<bool>& unknowns, const Params& params) {
           auto split = detail::partial_eval_of_body(detail::body_of(params), unknowns);
           Params plain{{"name", params.get_string("name")}};
           return detail::split_call(*split, closed_call_p, plain, closed_call_p, plain);
         }});

}  // namespace jx
