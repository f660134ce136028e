// What jit's call path needs of jx/debug.h's machinery (src/lax/debug_callback.cpp).
#pragma once

#include <optional>
#include <span>
#include <string>

#include "jx/jaxpr.h"

namespace jx::detail {

// Held around a jitted program's run: a jx::check failing inside is recorded instead of
// raising mid-program, and raise_pending() (called once the program returned) raises
// the first recorded message. Outside any such scope a failing check raises at once.
class DeferredChecks {
 public:
  DeferredChecks();
  ~DeferredChecks();
  DeferredChecks(const DeferredChecks&) = delete;
  DeferredChecks& operator=(const DeferredChecks&) = delete;
  void raise_pending();

 private:
  std::optional<std::string> pending_;    // this scope's first failing check
  std::optional<std::string>* outer_;     // the enclosing scope's slot (null: none)
};

// debug_nans for a jitted call: when a float output of `program` run on `args` holds a
// NaN, re-runs it eagerly equation by equation and raises naming the first equation
// whose results hold a NaN its operands did not (callbacks do not run again).
void check_jit_nans(const ClosedJaxpr& program, std::span<const Array> args, std::span<const Array> outs,
                    const std::string& name);

}  // namespace jx::detail
