#include "jit/codegen/module_target.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

#include "jx/error.h"

namespace jx::compiler::codegen {
namespace {
constexpr const char* kVectorIsaFlag = "jx.vector_isa";
constexpr const char* kOutlinesMathFlag = "jx.outlines_math";
constexpr const char* kQuickCodegenFlag = "jx.quick_codegen";

bool module_flag_set(const llvm::Module& module, const char* flag) {
  auto* value = llvm::mdconst::extract_or_null<llvm::ConstantInt>(module.getModuleFlag(flag));
  return value && value->getZExtValue() != 0;
}
}

void set_module_vector_isa(llvm::Module& module, cpu::VectorIsa isa) {
  module.addModuleFlag(llvm::Module::Error, kVectorIsaFlag, static_cast<uint32_t>(isa));
}

cpu::VectorIsa module_vector_isa(const llvm::Module& module) {
  auto* flag = llvm::mdconst::extract_or_null<llvm::ConstantInt>(module.getModuleFlag(kVectorIsaFlag));
  if (!flag) detail::internal_fail("jit", "module '", module.getName().str(), "' was created without a vector ISA");
  return static_cast<cpu::VectorIsa>(flag->getZExtValue());
}

void set_module_outlines_math(llvm::Module& module) {
  module.addModuleFlag(llvm::Module::Error, kOutlinesMathFlag, 1u);
}

bool module_outlines_math(const llvm::Module& module) { return module_flag_set(module, kOutlinesMathFlag); }

void set_module_quick_codegen(llvm::Module& module) {
  if (!module_quick_codegen(module)) module.addModuleFlag(llvm::Module::Error, kQuickCodegenFlag, 1u);
}

bool module_quick_codegen(const llvm::Module& module) { return module_flag_set(module, kQuickCodegenFlag); }

}  // namespace jx::compiler::codegen
