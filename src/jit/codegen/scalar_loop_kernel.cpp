// The "scalar_loop" kernel: a while_loop or a scan whose carries, constants and body
// are all scalars of native dtypes (a scan may also read and write 1-d sequences, one
// element per step), emitted as one native loop. The carries live in registers (phi
// nodes), an iteration is the body's instructions and a branch, and LLVM optimizes across
// iterations (a counting loop becomes its closed form). Loops of arrays keep the runtime
// step, which runs their compiled bodies on buffers (lax/control_flow/).
//
//   while:  header (carry phis, the step count when max_steps bounds it); test: exit
//           unless cond_jaxpr(cond consts, carries); body: carries' = body_jaxpr(body
//           consts, carries); back to the header. Then the carries are stored.
//   scan:   for t over [0, length) (reversed when `reverse`): carries', ys[t] =
//           body(consts, carries, xs[t]). Then the carries are stored.
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
bool is_scan(const Equation& eqn) { return eqn.primitive->name() == "scan"; }
bool is_cond(const Equation& eqn) { return eqn.primitive->name() == "cond"; }

bool scalar_of_native_dtype(const Aval& a) { return a.ndim() == 0 && native_kernel_dtype(a.dtype); }

std::string why_not_scalar_program(const ClosedJaxpr& program, const std::string& which);

// The sub-programs of a while or cond equation, by parameter name.
std::vector<std::string> subprogram_params(const Equation& e) {
  if (is_while(e)) return {"cond_jaxpr", "body_jaxpr"};
  std::vector<std::string> names;
  for (int64_t i = 0; i < e.params.get_int("num_branches"); ++i) names.push_back("branch" + std::to_string(i));
  return names;
}

// Why an equation of a loop's body cannot run inside the native loop ("": it can): a
// scalar op, or a while loop or cond on scalars whose own programs can.
std::string why_not_scalar_equation(const Equation& e) {
  std::string why;
  if (!is_while(e) && !is_cond(e)) return scalar_op_supported(e, &why) ? "" : why;
  for (const Atom& a : e.inputs)
    if (!scalar_of_native_dtype(a.aval())) return "a " + e.primitive->name() + " of a " + a.aval().str();
  for (const Var& v : e.outputs)
    if (!scalar_of_native_dtype(v.aval)) return "a " + e.primitive->name() + " making a " + v.aval.str();
  for (const std::string& name : subprogram_params(e)) {
    const JaxprRef& program = e.params.get_jaxpr(name);
    if (!program) return e.primitive->name() + " has no " + name;
    why = why_not_scalar_program(*program, e.primitive->name() + "'s " + name);
    if (!why.empty()) return why;
  }
  return "";
}

// Why a sub-program cannot run inside the loop ("": it can).
std::string why_not_scalar_program(const ClosedJaxpr& program, const std::string& which) {
  for (const Array& c : program.consts)
    if (!scalar_of_native_dtype(c.aval())) return which + " captures a " + c.aval().str() + " constant";
  for (const Equation& e : program.jaxpr.eqns) {
    std::string why = why_not_scalar_equation(e);
    if (!why.empty()) return which + ": " + why;
    for (const Var& v : e.outputs)
      if (!scalar_of_native_dtype(v.aval)) return which + " computes a " + v.aval.str();
  }
  return "";
}

std::vector<Value*> emit_while(llvm::IRBuilder<>& b, const Equation& loop, std::span<Value* const> in);
std::vector<Value*> emit_cond(llvm::IRBuilder<>& b, const Equation& cond, std::span<Value* const> in);

// Values of a scalar sub-program at the builder's insertion point (which it moves to the
// block after any loop or branch it emits).
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
    if (is_while(e) || is_cond(e)) {
      std::vector<Value*> outs = is_while(e) ? emit_while(b, e, operands) : emit_cond(b, e, operands);
      for (size_t k = 0; k < e.outputs.size(); ++k) env[e.outputs[k].id] = outs[k];
    } else {
      env[e.outputs.at(0).id] = emit_scalar_op(b, e, operands);
    }
  }
  std::vector<Value*> outs;
  for (const Atom& a : j.outvars) outs.push_back(read(a));
  return outs;
}

// A while loop on scalars where the builder stands: its carries at the loop's exit, where
// the builder is left.
std::vector<Value*> emit_while(llvm::IRBuilder<>& b, const Equation& loop, std::span<Value* const> in) {
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = b.getContext();
  const ClosedJaxpr& cond = *loop.params.get_jaxpr("cond_jaxpr");
  const ClosedJaxpr& body = *loop.params.get_jaxpr("body_jaxpr");
  const auto cn = static_cast<size_t>(loop.params.get_int("cond_nconsts"));
  const auto bn = static_cast<size_t>(loop.params.get_int("body_nconsts"));
  const int64_t max_steps = loop.params.get_int("max_steps");
  llvm::BasicBlock* entry = b.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx, "while.header", f);
  auto* test = llvm::BasicBlock::Create(ctx, "while.test", f);
  auto* step_block = llvm::BasicBlock::Create(ctx, "while.body", f);
  auto* exit = llvm::BasicBlock::Create(ctx, "while.exit", f);
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
    step = b.CreatePHI(b.getInt64Ty(), 2);
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
  return std::vector<Value*>(carry.begin(), carry.end());
}

// A cond on scalars where the builder stands: the index (clamped into range, as eager
// does) picks one branch block; the results meet in phis after them, where the builder
// is left.
std::vector<Value*> emit_cond(llvm::IRBuilder<>& b, const Equation& cond, std::span<Value* const> in) {
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = b.getContext();
  const std::vector<std::string> names = subprogram_params(cond);
  Value* index = in[0];
  if (index->getType() != b.getInt64Ty()) {
    const bool is_signed = cond.inputs[0].aval().dtype != DType::Bool && cond.inputs[0].aval().dtype != DType::UInt8 &&
                           cond.inputs[0].aval().dtype != DType::UInt32;
    index = is_signed ? b.CreateSExt(index, b.getInt64Ty()) : b.CreateZExt(index, b.getInt64Ty());
  }
  index = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, index, b.getInt64(0));
  auto* merge = llvm::BasicBlock::Create(ctx, "cond.merge", f);
  std::vector<llvm::BasicBlock*> blocks;
  for (size_t i = 0; i < names.size(); ++i) blocks.push_back(llvm::BasicBlock::Create(ctx, "cond.branch", f));
  llvm::SwitchInst* sw = b.CreateSwitch(index, blocks.back(), static_cast<unsigned>(names.size() - 1));
  for (size_t i = 0; i + 1 < names.size(); ++i) sw->addCase(b.getInt64(static_cast<int64_t>(i)), blocks[i]);
  std::vector<std::pair<std::vector<Value*>, llvm::BasicBlock*>> results;
  for (size_t i = 0; i < names.size(); ++i) {
    b.SetInsertPoint(blocks[i]);
    std::vector<Value*> outs = emit_program(b, *cond.params.get_jaxpr(names[i]), in.subspan(1));
    results.emplace_back(std::move(outs), b.GetInsertBlock());
    b.CreateBr(merge);
  }
  b.SetInsertPoint(merge);
  std::vector<Value*> outs;
  for (size_t k = 0; k < cond.outputs.size(); ++k) {
    llvm::PHINode* phi = b.CreatePHI(results[0].first[k]->getType(), static_cast<unsigned>(results.size()));
    for (const auto& [values, from] : results) phi->addIncoming(values[k], from);
    outs.push_back(phi);
  }
  return outs;
}

// The kernel function's frame: its entry block loads every scalar operand of the loop
// equation and the pointers of its array operands (a scan's sequences); exit() stores the
// results the fused program returns.
struct Frame {
  Frame(llvm::Module& module, const Jaxpr& fused, std::string_view key)
      : fused(fused), loop(fused.eqns.at(0)), b(module.getContext()) {
    llvm::Type* i64 = b.getInt64Ty();
    f = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {ptr(), ptr(), i64, i64}, false),
                               llvm::GlobalValue::ExternalLinkage, kernel_symbol(key), module);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    set_host_attributes(*f);
    entry = llvm::BasicBlock::Create(module.getContext(), "entry", f);
    b.SetInsertPoint(entry);
    // The kernel's inputs are the fused program's invars (one per distinct operand: a
    // value captured twice is one input); a literal operand (the fusion kept it in the
    // equation) is a constant here.
    std::unordered_map<int64_t, Value*> input;
    for (size_t i = 0; i < fused.invars.size(); ++i) {
      Value* p = b.CreateLoad(ptr(), b.CreateConstInBoundsGEP1_64(ptr(), f->getArg(0), i));
      input[fused.invars[i].id] = fused.invars[i].aval.ndim() == 0 ? load_element(b, p, fused.invars[i].aval.dtype) : p;
    }
    for (const Atom& a : loop.inputs)
      in.push_back(a.is_var() ? input.at(a.var().id) : emit_literal(b, a.literal().value));
  }
  llvm::Type* ptr() { return b.getPtrTy(); }
  llvm::BasicBlock* block(const char* name) { return llvm::BasicBlock::Create(b.getContext(), name, f); }
  // The output buffer of loop result `result_id`, if the fused program returns it (else null).
  Value* output_pointer(int64_t result_id) {
    for (size_t o = 0; o < fused.outvars.size(); ++o)
      if (fused.outvars[o].is_var() && fused.outvars[o].var().id == result_id)
        return b.CreateLoad(ptr(), b.CreateConstInBoundsGEP1_64(ptr(), f->getArg(1), o));
    return nullptr;
  }
  // Stores the scalar results (the carries) and returns.
  void exit(std::span<Value* const> carries) {
    for (size_t k = 0; k < carries.size(); ++k)
      if (Value* p = output_pointer(loop.outputs[k].id)) store_element(b, carries[k], p, loop.outputs[k].aval.dtype);
    b.CreateRetVoid();
  }

  const Jaxpr& fused;
  const Equation& loop;
  llvm::IRBuilder<> b;
  llvm::Function* f = nullptr;
  llvm::BasicBlock* entry = nullptr;
  std::vector<Value*> in;  // per operand of the loop: its scalar value, or its data pointer
};

void emit_while_kernel(llvm::Module& module, const Jaxpr& fused, std::string_view key) {
  Frame frame(module, fused, key);
  std::vector<Value*> carries = emit_while(frame.b, frame.loop, frame.in);
  frame.exit(carries);
}

void emit_scan(llvm::Module& module, const Jaxpr& fused, std::string_view key) {
  Frame frame(module, fused, key);
  llvm::IRBuilder<>& b = frame.b;
  const Equation& loop = frame.loop;
  const ClosedJaxpr& body = *loop.params.get_jaxpr("body");
  const auto num_consts = static_cast<size_t>(loop.params.get_int("num_consts"));
  const auto num_carry = static_cast<size_t>(loop.params.get_int("num_carry"));
  const int64_t length = loop.params.get_int("length");
  const bool reverse = loop.params.get_bool("reverse");
  const std::vector<Value*>& in = frame.in;
  // ys pointers (a ys the program does not return is not stored).
  std::vector<Value*> ys;
  for (size_t k = num_carry; k < loop.outputs.size(); ++k) ys.push_back(frame.output_pointer(loop.outputs[k].id));

  llvm::BasicBlock* entry = frame.entry;
  llvm::BasicBlock* header = frame.block("header");
  llvm::BasicBlock* step_block = frame.block("body");
  llvm::BasicBlock* exit = frame.block("exit");
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2);
  i->addIncoming(b.getInt64(0), entry);
  std::vector<llvm::PHINode*> carry;
  for (size_t k = 0; k < num_carry; ++k) {
    carry.push_back(b.CreatePHI(in[num_consts + k]->getType(), 2));
    carry.back()->addIncoming(in[num_consts + k], entry);
  }
  b.CreateCondBr(b.CreateICmpSLT(i, b.getInt64(length)), step_block, exit);

  b.SetInsertPoint(step_block);
  Value* t = reverse ? b.CreateSub(b.getInt64(length - 1), i, "", true, true) : static_cast<Value*>(i);
  std::vector<Value*> args(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(num_consts));
  args.insert(args.end(), carry.begin(), carry.end());
  for (size_t k = num_consts + num_carry; k < loop.inputs.size(); ++k) {
    const DType dtype = loop.inputs[k].aval().dtype;
    args.push_back(load_element(b, b.CreateInBoundsGEP(storage_type(b.getContext(), dtype), in[k], t), dtype));
  }
  std::vector<Value*> outs = emit_program(b, body, args);
  for (size_t k = 0; k < ys.size(); ++k) {
    if (!ys[k]) continue;
    const DType dtype = loop.outputs[num_carry + k].aval.dtype;
    store_element(b, outs[num_carry + k], b.CreateInBoundsGEP(storage_type(b.getContext(), dtype), ys[k], t), dtype);
  }
  llvm::BasicBlock* latch = b.GetInsertBlock();
  for (size_t k = 0; k < num_carry; ++k) carry[k]->addIncoming(outs[k], latch);
  i->addIncoming(b.CreateAdd(i, b.getInt64(1), "", true, true), latch);
  b.CreateBr(header);

  b.SetInsertPoint(exit);
  frame.exit(std::vector<Value*>(carry.begin(), carry.end()));
}

class ScalarLoopKernel final : public Kernel {
 public:
  explicit ScalarLoopKernel(std::shared_ptr<const CompiledLoop> loop) : loop_(std::move(loop)) {}
  void run(const void* const* inputs, void* const* outputs) const override { loop_->run_units(inputs, outputs, 0, 1); }

 private:
  std::shared_ptr<const CompiledLoop> loop_;
};

}  // namespace

std::unique_ptr<Kernel> compile_scalar_loop_kernel(const Jaxpr& fused, const KernelOptions& options) {
  if (fused.eqns.size() != 1)
    detail::fail("jit", "internal: a scalar_loop kernel holds one while or scan equation, got ", fused.eqns.size(),
                 " equations");
  const Equation& loop = fused.eqns[0];
  std::string why;
  if (!scalar_loop_supported(loop, &why)) detail::fail("jit", "internal: ", why);
  std::vector<DType> output_dtypes;
  for (const Atom& a : fused.outvars) output_dtypes.push_back(a.aval().dtype);
  // One unit: the loop runs on the calling thread.
  LoopSchedule schedule{.mode = LoopSchedule::Mode::Elementwise, .units = 1};
  return std::make_unique<ScalarLoopKernel>(CompiledLoop::compile_emitted(
      "scalar loop kernel\n" + fused.str(), schedule, std::move(output_dtypes), options, Optimization::kFull,
      [&](llvm::Module& module, std::string_view key) {
        if (is_while(loop)) emit_while_kernel(module, fused, key);
        else emit_scan(module, fused, key);
      }));
}

}  // namespace codegen

bool scalar_loop_supported(const Equation& eqn, std::string* why_not) {
  using codegen::refuse;
  using codegen::scalar_of_native_dtype;
  const bool scan = codegen::is_scan(eqn);
  if (!codegen::is_while(eqn) && !scan) return refuse(why_not, eqn.primitive->name() + " is not a while loop or a scan");
  // A scan's sequences (xs operands, ys results) may be 1-d: one scalar per step.
  const int64_t first_sequence = scan ? eqn.params.get_int("num_consts") + eqn.params.get_int("num_carry") : INT64_MAX;
  const int64_t num_carry = scan ? eqn.params.get_int("num_carry") : INT64_MAX;
  auto supported = [&](const Aval& a, bool sequence) {
    return sequence ? a.ndim() == 1 && native_kernel_dtype(a.dtype) : scalar_of_native_dtype(a);
  };
  for (size_t k = 0; k < eqn.inputs.size(); ++k)
    if (!supported(eqn.inputs[k].aval(), static_cast<int64_t>(k) >= first_sequence) ||
        (eqn.inputs[k].aval().ndim() > 0 && !eqn.inputs[k].is_var()))
      return refuse(why_not, "a " + eqn.primitive->name() + " over a " + eqn.inputs[k].aval().str() +
                                 " operand runs its body as a program");
  for (size_t k = 0; k < eqn.outputs.size(); ++k)
    if (!supported(eqn.outputs[k].aval, static_cast<int64_t>(k) >= num_carry))
      return refuse(why_not, "a " + eqn.primitive->name() + " making a " + eqn.outputs[k].aval.str() +
                                 " runs its body as a program");
  for (const char* which : scan ? std::vector<const char*>{"body"} : std::vector<const char*>{"cond_jaxpr", "body_jaxpr"}) {
    const JaxprRef& program = eqn.params.get_jaxpr(which);
    if (!program) return refuse(why_not, std::string(which) + " is missing");
    std::string why = codegen::why_not_scalar_program(*program, which);
    if (!why.empty()) return refuse(why_not, "the " + eqn.primitive->name() + "'s " + why);
  }
  return true;
}

}  // namespace jx::compiler
