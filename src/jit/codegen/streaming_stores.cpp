#include "jit/codegen/streaming_stores.h"

#include <utility>
#include <vector>

#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Module.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>

#include "jit/codegen/llvm_session.h"

namespace jx::compiler::codegen {
namespace {

constexpr const char* kStreamedOutputKind = "jx.streamed_output";

bool is_streamed_output(const llvm::Value* pointer) {
  // Through the GEPs of the vectorized loop to the pointer's load from the output array.
  const auto* load = llvm::dyn_cast<llvm::LoadInst>(llvm::getUnderlyingObject(pointer, /*MaxLookup=*/0));
  return load && load->getMetadata(kStreamedOutputKind) != nullptr;
}

// The store's bytes when it writes one whole vector register the host has (16, 32 or 64
// bytes), else 0.
uint64_t register_store_bytes(const llvm::StoreInst& store) {
  llvm::Type* type = store.getValueOperand()->getType();
  if (!type->isVectorTy()) return 0;
  const uint64_t bytes = store.getDataLayout().getTypeStoreSize(type).getFixedValue();
  const bool whole = bytes == 16 || bytes == 32 || bytes == 64;
  return whole && static_cast<int64_t>(bytes) <= host_vector_bytes() ? bytes : 0;
}

void make_non_temporal(llvm::StoreInst& store, uint64_t bytes) {
  llvm::LLVMContext& ctx = store.getContext();
  llvm::Constant* one = llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), 1);
  store.setMetadata(llvm::LLVMContext::MD_nontemporal, llvm::MDNode::get(ctx, {llvm::ConstantAsMetadata::get(one)}));
  store.setAlignment(llvm::Align(bytes));
}

}  // namespace

void mark_streamed_output(llvm::LoadInst& pointer_load) {
  pointer_load.setMetadata(kStreamedOutputKind, llvm::MDNode::get(pointer_load.getContext(), {}));
}

int use_streaming_stores(llvm::Module& module) {
  if (!llvm::Triple(module.getTargetTriple()).isX86()) return 0;
  int rewritten = 0;
  for (llvm::Function& f : module) {
    std::vector<std::pair<llvm::StoreInst*, uint64_t>> stores;  // with their bytes
    for (llvm::BasicBlock& block : f)
      for (llvm::Instruction& i : block)
        if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&i))
          if (const uint64_t bytes = register_store_bytes(*store); bytes != 0 && is_streamed_output(store->getPointerOperand()))
            stores.emplace_back(store, bytes);
    if (stores.empty()) continue;
    for (auto [store, bytes] : stores) {
      if (store->getAlign().value() >= bytes) {
        make_non_temporal(*store, bytes);
        continue;
      }
      // The address's alignment is known only at run time: test it.
      llvm::IRBuilder<> b(store);
      llvm::Value* address = b.CreatePtrToInt(store->getPointerOperand(), b.getInt64Ty());
      llvm::Value* aligned = b.CreateICmpEQ(b.CreateAnd(address, b.getInt64(bytes - 1)), b.getInt64(0));
      llvm::Instruction *then_branch = nullptr, *else_branch = nullptr;
      llvm::SplitBlockAndInsertIfThenElse(aligned, store->getIterator(), &then_branch, &else_branch);
      auto* streamed = llvm::cast<llvm::StoreInst>(store->clone());
      streamed->insertBefore(then_branch);
      make_non_temporal(*streamed, bytes);
      store->moveBefore(else_branch);
    }
    rewritten += static_cast<int>(stores.size());
    // Non-temporal stores are weakly ordered: complete them before the kernel returns
    // and signals its caller.
    llvm::Function* sfence = llvm::Intrinsic::getDeclaration(&module, llvm::Intrinsic::x86_sse_sfence);
    for (llvm::BasicBlock& block : f)
      if (auto* ret = llvm::dyn_cast<llvm::ReturnInst>(block.getTerminator())) llvm::CallInst::Create(sfence, {}, "", ret);
  }
  return rewritten;
}

}  // namespace jx::compiler::codegen
