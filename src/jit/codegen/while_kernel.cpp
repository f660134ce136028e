// The "while" kernel: a while_loop whose carries, constants, predicate and body are all
// scalars of native dtypes, emitted as one native loop. The carries live in registers
// (phi nodes), an iteration is the predicate's and the body's instructions and a branch,
// and LLVM optimizes across iterations (a counting loop becomes its closed form). Loops
// of arrays keep the runtime step, which runs their compiled bodies on buffers
// (lax/control_flow/while_loop.cpp).
//
//   entry:   load the constants and the initial carries
//   header:  carry phis (and the step count when max_steps bounds the loop)
//   test:    pred = cond_jaxpr(cond consts, carries); exit unless pred
//   body:    carries' = body_jaxpr(body consts, carries); back to header
//   exit:    store the carries
#include <unordered_map>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "jit/codegen/loop_emitter.h"
#include "jit/codegen/loop_kernel.h"
#include "jit/codegen/scalar_ops.h"
#include "jit/kernel_support.h"
#include "jx/error.h"

namespace jx::compiler {
namespace codegen {
namespace {

using llvm::Value;

bool refuse(std::string* why_not, std::string why) {
  if (why_not) *why_not = std::move(why);
  return false;
}

bool is_while(const Equation& eqn) { return eqn.primitive->name() == "while"; }

bool scalar_of_native_dtype(const Aval& a) { return a.ndim() == 0 && native_kernel_dtype(a.dtype); }

// Why a sub-program cannot run inside the loop ("": it can).
std::string why_not_scalar_program(const ClosedJaxpr& program, const char* which) {
  for (const Array& c : program.consts)
    if (!scalar_of_native_dtype(c.aval())) return std::string(which) + " captures a " + c.aval().str() + " constant";
  for (const Equation& e : program.jaxpr.eqns) {
    std::string why;
    if (!scalar_op_supported(e, &why)) return std::string(which) + ": " + why;
    for (const Var& v : e.outputs)
      if (!scalar_of_native_dtype(v.aval)) return std::string(which) + " computes a " + v.aval.str();
  }
  return "";
}

// Values of a scalar sub-program at the builder's insertion point.
std::vector<Value*> emit_program(llvm::IRBuilder<>& b, const ClosedJaxpr& program, std::span<Value* const> args) {
  const Jaxpr& j = program.jaxpr;
  std::unordered_map<int64_t, Value*> env;
  for (size_t i = 0; i < j.constvars.size(); ++i) env[j.constvars[i].id] = emit_literal(b, program.consts[i]);
  for (size_t i = 0; i < j.invars.size(); ++i) env[j.invars[i].id] = args[i];
  auto read = [&](const Atom& a) { return a.is_var() ? env.at(a.var().id) : emit_literal(b, a.literal().value); };
  std::vector<Value*> operands;
  for (const Equation& e : j.eqns) {
    operands.clear();
    for (const Atom& a : e.inputs) operands.push_back(read(a));
    env[e.outputs.at(0).id] = emit_scalar_op(b, e, operands);
  }
  std::vector<Value*> outs;
  for (const Atom& a : j.outvars) outs.push_back(read(a));
  return outs;
}

void emit_while_kernel(llvm::Module& module, const Jaxpr& fused, std::string_view key) {
  const Equation& loop = fused.eqns.at(0);
  llvm::LLVMContext& ctx = module.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Type* ptr = b.getPtrTy();
  llvm::Type* i64 = b.getInt64Ty();
  auto* f = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, i64, i64}, false),
                                   llvm::GlobalValue::ExternalLinkage, kernel_symbol(key), module);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  set_host_attributes(*f);
  const ClosedJaxpr& cond = *loop.params.get_jaxpr("cond_jaxpr");
  const ClosedJaxpr& body = *loop.params.get_jaxpr("body_jaxpr");
  const auto cn = static_cast<size_t>(loop.params.get_int("cond_nconsts"));
  const auto bn = static_cast<size_t>(loop.params.get_int("body_nconsts"));
  const int64_t max_steps = loop.params.get_int("max_steps");

  auto* entry = llvm::BasicBlock::Create(ctx, "entry", f);
  auto* header = llvm::BasicBlock::Create(ctx, "header", f);
  auto* test = llvm::BasicBlock::Create(ctx, "test", f);
  auto* step_block = llvm::BasicBlock::Create(ctx, "body", f);
  auto* exit = llvm::BasicBlock::Create(ctx, "exit", f);

  // The kernel's inputs are the fused program's invars (one per distinct operand of the
  // while: a value captured by both the predicate and the body is one input); a literal
  // operand (the fusion kept it in the equation) is a constant here.
  b.SetInsertPoint(entry);
  std::unordered_map<int64_t, Value*> input;
  for (size_t i = 0; i < fused.invars.size(); ++i) {
    Value* p = b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, f->getArg(0), i));
    input[fused.invars[i].id] = load_element(b, p, fused.invars[i].aval.dtype);
  }
  std::vector<Value*> in;
  for (const Atom& a : loop.inputs)
    in.push_back(a.is_var() ? input.at(a.var().id) : emit_literal(b, a.literal().value));
  const size_t nc = in.size() - cn - bn;
  b.CreateBr(header);

  b.SetInsertPoint(header);
  std::vector<llvm::PHINode*> carry;
  for (size_t k = 0; k < nc; ++k) {
    carry.push_back(b.CreatePHI(in[cn + bn + k]->getType(), 2));
    carry.back()->addIncoming(in[cn + bn + k], entry);
  }
  llvm::PHINode* step = nullptr;
  if (max_steps >= 0) {
    step = b.CreatePHI(i64, 2);
    step->addIncoming(b.getInt64(0), entry);
    b.CreateCondBr(b.CreateICmpSLT(step, b.getInt64(max_steps)), test, exit);
  } else {
    b.CreateBr(test);
  }

  b.SetInsertPoint(test);
  std::vector<Value*> args(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(cn));
  args.insert(args.end(), carry.begin(), carry.end());
  Value* pred = emit_program(b, cond, args).at(0);
  if (pred->getType() != b.getInt1Ty()) pred = b.CreateICmpNE(pred, llvm::Constant::getNullValue(pred->getType()));
  b.CreateCondBr(pred, step_block, exit);

  b.SetInsertPoint(step_block);
  args.assign(in.begin() + static_cast<std::ptrdiff_t>(cn), in.begin() + static_cast<std::ptrdiff_t>(cn + bn));
  args.insert(args.end(), carry.begin(), carry.end());
  std::vector<Value*> next = emit_program(b, body, args);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  for (size_t k = 0; k < nc; ++k) carry[k]->addIncoming(next[k], latch);
  if (step) step->addIncoming(b.CreateAdd(step, b.getInt64(1), "", true, true), latch);
  b.CreateBr(header);

  b.SetInsertPoint(exit);
  // The kernel's outputs are the fused program's outvars: the loop's results, each once.
  std::unordered_map<int64_t, Value*> result;
  for (size_t k = 0; k < nc; ++k) result[loop.outputs[k].id] = carry[k];
  for (size_t o = 0; o < fused.outvars.size(); ++o) {
    const Atom& a = fused.outvars[o];
    Value* p = b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, f->getArg(1), o));
    store_element(b, a.is_var() ? result.at(a.var().id) : emit_literal(b, a.literal().value), p, a.aval().dtype);
  }
  b.CreateRetVoid();
}

class WhileKernel final : public Kernel {
 public:
  explicit WhileKernel(std::shared_ptr<const CompiledLoop> loop) : loop_(std::move(loop)) {}
  void run(const void* const* inputs, void* const* outputs) const override { loop_->run_units(inputs, outputs, 0, 1); }

 private:
  std::shared_ptr<const CompiledLoop> loop_;
};

}  // namespace

std::unique_ptr<Kernel> compile_while_kernel(const Jaxpr& fused, const KernelOptions& options) {
  if (fused.eqns.size() != 1 || !is_while(fused.eqns[0]))
    detail::fail("jit", "internal: a while kernel holds one while equation, got ", fused.eqns.size(), " equations");
  const Equation& loop = fused.eqns[0];
  std::string why;
  if (!scalar_while_supported(loop, &why)) detail::fail("jit", "internal: ", why);
  std::vector<DType> output_dtypes;
  for (const Atom& a : fused.outvars) output_dtypes.push_back(a.aval().dtype);
  // One unit: the loop runs on the calling thread.
  LoopSchedule schedule{.mode = LoopSchedule::Mode::Elementwise, .units = 1};
  return std::make_unique<WhileKernel>(CompiledLoop::compile_emitted(
      "while kernel\n" + fused.str(), schedule, std::move(output_dtypes), options,
      [&](llvm::Module& module, std::string_view key) { emit_while_kernel(module, fused, key); }));
}

}  // namespace codegen

bool scalar_while_supported(const Equation& eqn, std::string* why_not) {
  if (!codegen::is_while(eqn)) return codegen::refuse(why_not, eqn.primitive->name() + " is not a while loop");
  for (const Atom& a : eqn.inputs)
    if (!codegen::scalar_of_native_dtype(a.aval()))
      return codegen::refuse(why_not, "a while loop over a " + a.aval().str() + " operand runs its bodies as programs");
  for (const char* which : {"cond_jaxpr", "body_jaxpr"}) {
    const JaxprRef& program = eqn.params.get_jaxpr(which);
    if (!program) return codegen::refuse(why_not, std::string(which) + " is missing");
    std::string why = codegen::why_not_scalar_program(*program, which);
    if (!why.empty()) return codegen::refuse(why_not, "the while loop's " + why);
  }
  return true;
}

}  // namespace jx::compiler
