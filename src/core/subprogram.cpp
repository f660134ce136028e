#include "core/subprogram.h"

namespace jx::detail {
namespace {
thread_local const SubprogramRunner* current_runner = nullptr;
}  // namespace

std::vector<Array> run_subprogram(const ClosedJaxpr& program, std::span<const Array> args) {
  if (current_runner) return current_runner->run(program, args);
  return eval_jaxpr(program, args);
}

const BufferProgram* buffer_subprogram(const ClosedJaxpr& program) {
  return current_runner ? current_runner->buffer_program(program) : nullptr;
}

SubprogramScope::SubprogramScope(const SubprogramRunner* runner) : previous_(current_runner) {
  current_runner = runner;
}
SubprogramScope::~SubprogramScope() { current_runner = previous_; }

}  // namespace jx::detail
