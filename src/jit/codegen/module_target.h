// What a module being emitted is compiled for, carried by the module itself (a module
// flag), so the emitters read the compile's options rather than a process-wide global.
#pragma once

#include "backend/cpu/vector_math.h"

namespace llvm {
class Module;
}

namespace jx::compiler::codegen {

// The vector ISA whose math functions the module's transcendentals call (scalar_ops.h):
// set by the compile that creates the module, from KernelOptions::vector_isa.
void set_module_vector_isa(llvm::Module& module, cpu::VectorIsa isa);
// Raises jx::InternalError for a module no compile has set it on.
cpu::VectorIsa module_vector_isa(const llvm::Module& module);

// Whether the module's inline math is called rather than emitted at each use
// (scalar_ops.h's outlined math): set by the emitter of a long fused body.
void set_module_outlines_math(llvm::Module& module);
bool module_outlines_math(const llvm::Module& module);

// Whether the module's machine code comes from LLVM's fast code generator, its run too
// short for the optimizing one to pay for its time (llvm_session.cpp, compile_module):
// set by the emitter of a kernel over fewer elements than a vector holds.
void set_module_quick_codegen(llvm::Module& module);
bool module_quick_codegen(const llvm::Module& module);

}  // namespace jx::compiler::codegen
