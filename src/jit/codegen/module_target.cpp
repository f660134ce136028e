#include "jit/codegen/module_target.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

#include "jx/error.h"

namespace jx::compiler::codegen {
namespace {
constexpr const char* kVectorIsaFlag = "jx.vector_isa";
constexpr const char* kOutlinesMathFlag = "jx.outlines_math";
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

bool module_outlines_math(const llvm::Module& module) {
  auto* flag = llvm::mdconst::extract_or_null<llvm::ConstantInt>(module.getModuleFlag(kOutlinesMathFlag));
  return flag && flag->getZExtValue() != 0;
}

}  // namespace jx::compiler::codegen
