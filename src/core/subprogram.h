// How control-flow primitives (cond, while, scan) run their sub-programs: loop bodies,
// loop predicates and branches.
//
// Eagerly a sub-program is interpreted equation by equation (eval_jaxpr). Under jit the
// loop stays a runtime call of its primitive's impl, but the compiled program
// (src/jit/executable.cpp) installs a SubprogramRunner around that call, and the
// runner runs each body as a natively compiled program of its own: optimized, fused,
// compiled once on first use and kept with the enclosing program. So a jitted loop
// costs one compiled call per iteration, and nothing here depends on the compiler.
#pragma once

#include <span>
#include <vector>

#include "jx/jaxpr.h"

namespace jx::detail {

class SubprogramRunner {
 public:
  virtual ~SubprogramRunner() = default;
  virtual std::vector<Array> run(const ClosedJaxpr& program, std::span<const Array> args) const = 0;
};

// Runs `program` on `args` with this thread's innermost runner, or interprets it.
std::vector<Array> run_subprogram(const ClosedJaxpr& program, std::span<const Array> args);

// Installs `runner` on this thread for the scope's lifetime (nests; null: interpret).
class SubprogramScope {
 public:
  explicit SubprogramScope(const SubprogramRunner* runner);
  ~SubprogramScope();
  SubprogramScope(const SubprogramScope&) = delete;
  SubprogramScope& operator=(const SubprogramScope&) = delete;

 private:
  const SubprogramRunner* previous_;
};

}  // namespace jx::detail
