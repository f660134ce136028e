#include "jit/codegen/llvm_session.h"
#include "jit/codegen/module_target.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/IPO/AlwaysInliner.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include "jit/codegen/scalar_ops.h"
#include "jit/codegen/streaming_stores.h"
#include "jx/error.h"

namespace jx::compiler::codegen {
namespace {

using jx::detail::fail;

// Loops vectorize at 512 bits on AVX-512 hosts (LLVM's default there is 256, for the
// sake of older Intel parts that slow their clock on 512-bit code; Zen 4 does not).
// Measured on this Zen 4, one thread, 16384 elements, us per call at 256 / 512 bits:
// f32 chain of mul/add/max/sub 1.8 / 1.8, f32 sum 1.2 / 1.2, f32 sin 6.0 / 6.3,
// f32 exp 6.0 / 5.7, f32 cos 6.1 / 5.9, f32 tanh 12 / 7.3, f64 tanh 41 / 32, f64 log 122 / 90,
// f64 sin 15 / 22, f64 exp 16 / 14-18; sin(x)+cos(y) f32 65536: 49 / 42-46. A wash for
// plain arithmetic (Zen 4 splits 512-bit ops), mostly a gain through libmvec's
// AVX-512 variants (_ZGVeN16v_*), so 512.
constexpr const char* kPreferVectorWidth = "512";

std::string error_text(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return os.str();
}

// Defines the outlined inline math kernels call (scalar_ops.h) in the JITDylib every
// kernel links against, each function compiled the first time an object names it
// (a kernel compiled now or loaded from the disk cache).
class OutlinedMathGenerator final : public llvm::orc::DefinitionGenerator {
 public:
  explicit OutlinedMathGenerator(llvm::orc::LLJIT& jit) : jit_(jit) {}

  llvm::Error tryToGenerate(llvm::orc::LookupState&, llvm::orc::LookupKind, llvm::orc::JITDylib& jd,
                            llvm::orc::JITDylibLookupFlags, const llvm::orc::SymbolLookupSet& symbols) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, flags] : symbols) {
      const llvm::StringRef symbol = *name;
      if (!is_outlined_math_symbol(std::string_view(symbol.data(), symbol.size())) || linked_.count(symbol.str()))
        continue;
      std::string object;
      try {
        object = OutlinedMathSource::object_for(std::string_view(symbol.data(), symbol.size()));
      } catch (const std::exception& e) {
        return llvm::make_error<llvm::StringError>(e.what(), llvm::inconvertibleErrorCode());
      }
      if (auto err = jit_.addObjectFile(jd, llvm::MemoryBuffer::getMemBufferCopy(object, symbol))) return err;
      linked_.emplace(symbol.str(), std::move(object));
    }
    return llvm::Error::success();
  }

  std::optional<std::string> linked(std::string_view symbol) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = linked_.find(std::string(symbol));
    if (it == linked_.end()) return std::nullopt;
    return it->second;
  }

 private:
  llvm::orc::LLJIT& jit_;
  std::mutex mu_;
  std::map<std::string, std::string> linked_;  // symbol -> its object (a few KB each)
};

struct Session {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  HostTarget host;
  // Target machines for the host, one per compile running now: a TargetMachine serves
  // one code generator at a time, and kernels compile concurrently (compile_concurrently).
  std::optional<llvm::orc::JITTargetMachineBuilder> machine_builder;
  std::mutex machines_mu;
  std::vector<std::unique_ptr<llvm::TargetMachine>> idle_machines;
  std::mutex jit_mu;  // JITDylib creation / removal
  std::atomic<uint64_t> next_dylib{0};
  double creation_seconds = 0;
  OutlinedMathGenerator* outlined = nullptr;  // owned by the main JITDylib
};

std::atomic<double> g_creation_seconds{0};
// Set when the process exits: kernels destroyed by static destructors then leave their
// code loaded instead of calling into an LLVM that may be partly torn down.
std::atomic<bool> g_exiting{false};

Session& session() {
  // Never destroyed: kernels (and their JITDylibs) may outlive any static destructor order.
  static Session* s = [] {
    auto start = std::chrono::steady_clock::now();
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    // libjx links libmvec, but make sure its vector math is in the global symbol scope
    // the JIT searches even when the linker dropped it as "not needed".
    dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL);
    auto* session = new Session;
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) fail("jit", "cannot detect the host target: ", error_text(jtmb.takeError()));
    jtmb->setCPU(llvm::sys::getHostCPUName().str());
    jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Default);
    // The small code model, position independent: a kernel reaches its constants
    // RIP-relative (one load), where the large model, x86's default for a JIT, first
    // materializes each address with a 10-byte movabs (inside loops, since constant
    // loads are cheap to redo): a logsumexp over 16000 x 100 floats 305 -> 281 us,
    // softmax 475 -> 425. JITLink reaches functions outside the 2 GiB range through
    // stubs and external data through the GOT.
    jtmb->setCodeModel(llvm::CodeModel::Small);
    jtmb->setRelocationModel(llvm::Reloc::PIC_);
    session->machine_builder = *jtmb;
    auto tm = jtmb->createTargetMachine();
    if (!tm) fail("jit", "cannot create the host target machine: ", error_text(tm.takeError()));
    session->host = HostTarget{(*tm)->getTargetTriple().str(), (*tm)->getTargetCPU().str(),
                               (*tm)->getTargetFeatureString().str()};
    session->idle_machines.push_back(std::move(*tm));
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
    if (!jit) fail("jit", "cannot create the LLVM JIT: ", error_text(jit.takeError()));
    session->jit = std::move(*jit);
    // jx's own runtime helpers by address, in case libjx is built with hidden symbols.
    llvm::orc::SymbolMap helpers;
    for (const auto& [name, address] : runtime_math_symbols())
      helpers[session->jit->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                                      llvm::JITSymbolFlags::Exported};
    if (auto err = session->jit->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(helpers))))
      fail("jit", "cannot define the runtime helpers: ", error_text(std::move(err)));
    auto generator = std::make_unique<OutlinedMathGenerator>(*session->jit);
    session->outlined = generator.get();
    session->jit->getMainJITDylib().addGenerator(std::move(generator));
    session->creation_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    g_creation_seconds = session->creation_seconds;
    std::atexit([] { g_exiting = true; });
    return session;
  }();
  return *s;
}

// A target machine no other compile uses while this is alive (made when none is idle).
class MachineLease {
 public:
  explicit MachineLease(Session& s) : s_(s) {
    {
      std::lock_guard lock(s.machines_mu);
      if (!s.idle_machines.empty()) {
        tm_ = std::move(s.idle_machines.back());
        s.idle_machines.pop_back();
        return;
      }
    }
    auto tm = s.machine_builder->createTargetMachine();
    if (!tm) fail("jit", "cannot create the host target machine: ", error_text(tm.takeError()));
    tm_ = std::move(*tm);
  }
  ~MachineLease() {
    std::lock_guard lock(s_.machines_mu);
    s_.idle_machines.push_back(std::move(tm_));
  }
  MachineLease(const MachineLease&) = delete;
  MachineLease& operator=(const MachineLease&) = delete;
  llvm::TargetMachine& get() { return *tm_; }

 private:
  Session& s_;
  std::unique_ptr<llvm::TargetMachine> tm_;
};

std::string emit(llvm::TargetMachine& tm, llvm::Module& m, llvm::CodeGenFileType type,
                 const llvm::TargetLibraryInfoImpl& tlii) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  pm.add(new llvm::TargetLibraryInfoWrapperPass(tlii));
  if (tm.addPassesToEmitFile(pm, os, nullptr, type)) fail("jit", "the host target cannot emit this file type");
  pm.run(m);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace

const HostTarget& host_target() { return session().host; }

int64_t host_vector_bytes() {
  const std::string& f = host_target().features;
  if (f.find("+avx512f") != std::string::npos) return 64;
  if (f.find("+avx") != std::string::npos) return 32;
  return 16;
}

bool host_masks_vectors() { return host_vector_bytes() == 64; }

double jit_creation_seconds() { return g_creation_seconds.load(); }

void set_host_attributes(llvm::Function& f) {
  Session& s = session();
  f.addFnAttr("target-cpu", s.host.cpu);
  f.addFnAttr("target-features", s.host.features);
  f.addFnAttr("prefer-vector-width", kPreferVectorWidth);
  f.addFnAttr("min-legal-vector-width", "0");
}

// kElementwiseLoop's passes, in order: inline the body into the kernel entry (its only
// call) and clean the result; rotate each loop so its latch is its exit test, the form
// the vectorizer takes, hoisting what the iterations share; give the vector math calls
// their vector variants and widen the loops; fold what widening left redundant. O2 adds
// nothing these kernels' code keeps: on the jit_bench rows of elementwise kernels (the
// tutorial, its size sweep, SELU, vector math) run times within noise of O2's, and a
// 250-op chain's pipeline takes 25 ms instead of 65 (AMD EPYC Zen 1).
constexpr const char* kElementwiseLoopPipeline =
    "always-inline,"
    "function(sroa,early-cse,simplifycfg,loop-simplify,lcssa,loop-mssa(loop-rotate,licm),"
    "inject-tli-mappings,loop-vectorize,early-cse,instsimplify,simplifycfg)";

namespace {

// LLVM's diagnostics while a module compiles. Without a handler the context prints
// remarks and warnings to stderr (a loop whose vectorization hint could not be honoured
// printed "remark: <unknown>:0:0: loop not vectorized: ..." into the user's output) and
// exits the process on an error; here warnings are dropped (a kernel's hints are
// requests, its code correct either way) and the first error is kept, raised as a
// jx::Error once LLVM has returned. Remarks are dropped, unless dumps were asked for:
// then the loop vectorizer's (what it widened, by how much, and why it left a loop
// scalar) are kept for the kernel's dump, each with its function and loop header.
struct Diagnostics {
  std::string error, remarks;
  bool want_remarks = false;
};

class DiagnosticsHandler final : public llvm::DiagnosticHandler {
 public:
  explicit DiagnosticsHandler(Diagnostics& d) : d_(d) {}
  bool handleDiagnostics(const llvm::DiagnosticInfo& info) override {
    if (info.getSeverity() == llvm::DS_Error && d_.error.empty()) {
      llvm::raw_string_ostream text(d_.error);
      llvm::DiagnosticPrinterRawOStream printer(text);
      info.print(printer);
    } else if (const auto* remark = llvm::dyn_cast<llvm::DiagnosticInfoOptimizationBase>(&info);
               remark && d_.want_remarks && vectorizer(remark->getPassName())) {
      llvm::raw_string_ostream text(d_.remarks);
      text << remark->getFunction().getName();
      if (const auto* ir = llvm::dyn_cast<llvm::DiagnosticInfoIROptimization>(remark); ir && ir->getCodeRegion())
        text << " " << ir->getCodeRegion()->getName();
      text << ": " << remark->getMsg() << "\n";
    }
    return true;
  }
  bool isAnalysisRemarkEnabled(llvm::StringRef pass) const override { return d_.want_remarks && vectorizer(pass); }
  bool isMissedOptRemarkEnabled(llvm::StringRef pass) const override { return d_.want_remarks && vectorizer(pass); }
  bool isPassedOptRemarkEnabled(llvm::StringRef pass) const override { return d_.want_remarks && vectorizer(pass); }
  bool isAnyRemarkEnabled() const override { return d_.want_remarks; }

 private:
  static bool vectorizer(llvm::StringRef pass) { return pass == "loop-vectorize"; }
  Diagnostics& d_;
};

}  // namespace

CompiledModule compile_module(llvm::Module& module, Optimization optimization, bool want_dumps) {
  Diagnostics diagnostics;
  diagnostics.want_remarks = want_dumps;
  module.getContext().setDiagnosticHandler(std::make_unique<DiagnosticsHandler>(diagnostics));
  // The handler refers to `diagnostics`, which this function outlives.
  struct RestoreHandler {
    llvm::LLVMContext& context;
    ~RestoreHandler() { context.setDiagnosticHandler(std::make_unique<llvm::DiagnosticHandler>()); }
  } restore{module.getContext()};
  MachineLease machine(session());
  llvm::TargetMachine& tm = machine.get();
  module.setDataLayout(tm.createDataLayout());
  module.setTargetTriple(tm.getTargetTriple().str());

  llvm::TargetLibraryInfoImpl tlii(tm.getTargetTriple());
  std::vector<llvm::VecDesc> vector_math = vector_math_library();
  tlii.addVectorizableFunctions(vector_math);

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  // Kernels are loops, which the loop vectorizer widens; the SLP vectorizer (straight-line
  // code) found nothing to gain in them (jit_bench's run times within noise, 0.95-1.02x,
  // Zen 1) and cost 20% of a long chain's compile (2000 ops: 1.33 -> 1.05 s).
  tuning.SLPVectorization = false;
  tuning.LoopUnrolling = true;
  llvm::PassBuilder pb(&tm, tuning);
  // Registered before the defaults, so the vectorizer sees the vector math table.
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  if (optimization == Optimization::kFull) {
    mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  } else if (auto err = pb.parsePassPipeline(mpm, kElementwiseLoopPipeline)) {
    fail("jit", "internal: the elementwise loop pipeline does not parse: ", error_text(std::move(err)));
  }
  mpm.run(module, mam);
  std::vector<std::string> outlined = drop_uncalled_outlined_math(module);
  // The inline functions' rare paths get their bodies now, after vectorization, and are
  // inlined into the loops (a compare, a mask test and a branch around the libmvec call).
  if (define_rare_math_variants(module)) {
    llvm::ModulePassManager inline_rare;
    inline_rare.addPass(llvm::AlwaysInlinerPass());
    inline_rare.run(module, mam);
  }
  // Vector stores into outputs too large for the cache skip the read for ownership.
  use_streaming_stores(module);

  // A kernel marked module_quick_codegen (a few scalar iterations) and an elementwise
  // body long enough to call its inline math (scalar_ops.h), which is mostly those
  // calls, around which every vector register is spilled anyway, get their machine code
  // from LLVM's fast code generator (the fast register allocator, no machine
  // scheduling). On the 2-core Zen 3, the 2000-op chain of kernel_plan.cpp's
  // vector_blocks ran in the same time (14-15 ms), and its first call (trace, passes,
  // LLVM, run) took 110-140 ms instead of 177-189; bodies of 200 plain ops and 2 or 20
  // tanh ran within 1-3%.
  struct CodeGenLevel {  // the leased machine goes back at its own level
    llvm::TargetMachine& tm;
    llvm::CodeGenOptLevel saved = tm.getOptLevel();
    ~CodeGenLevel() { tm.setOptLevel(saved); }
  } level{tm};
  if (module_quick_codegen(module) ||
      (optimization == Optimization::kElementwiseLoop && module_outlines_math(module) && !outlined.empty()))
    tm.setOptLevel(llvm::CodeGenOptLevel::None);
  CompiledModule out;
  if (want_dumps) {
    llvm::raw_string_ostream ir(out.ir);
    module.print(ir, nullptr);
    ir.flush();
    // Code generation rewrites the IR it runs on, so the assembly comes from a copy.
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(module);
    out.assembly = emit(tm, *copy, llvm::CodeGenFileType::AssemblyFile, tlii);
    out.remarks = std::move(diagnostics.remarks);
  }
  out.object = emit(tm, module, llvm::CodeGenFileType::ObjectFile, tlii);
  out.outlined = std::move(outlined);
  if (!diagnostics.error.empty()) fail("jit", "LLVM failed to compile ", module.getName().str(), ": ", diagnostics.error);
  return out;
}

namespace {
thread_local const OutlinedMathSource* t_outlined_source = nullptr;
}

OutlinedMathSource::OutlinedMathSource(Source source) : source_(std::move(source)), outer_(t_outlined_source) {
  t_outlined_source = this;
}

OutlinedMathSource::~OutlinedMathSource() { t_outlined_source = outer_; }

std::optional<std::string> OutlinedMathSource::linked(std::string_view symbol) {
  return session().outlined->linked(symbol);
}

std::string OutlinedMathSource::object_for(std::string_view symbol) {
  if (t_outlined_source) return t_outlined_source->source_(symbol);
  return compile_outlined_math(symbol).object;
}

CompiledModule compile_outlined_math(std::string_view symbol) {
  llvm::LLVMContext context;
  llvm::Module module(llvm::StringRef(symbol.data(), symbol.size()), context);
  define_outlined_math(module, symbol);
  return compile_module(module, Optimization::kElementwiseLoop, false);
}

std::shared_ptr<LoadedObject> load_object(std::string_view object, std::string_view name) {
  Session& s = session();
  llvm::orc::JITDylib* jd = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.jit_mu);
    std::string dylib_name = std::string(name) + "#" + std::to_string(s.next_dylib++);
    auto created = s.jit->createJITDylib(dylib_name);
    if (!created) fail("jit", "cannot create a JITDylib: ", error_text(created.takeError()));
    jd = &*created;
    jd->addToLinkOrder(s.jit->getMainJITDylib());
  }
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), object.size()), name);
  auto holder = std::make_shared<LoadedObject>(jd, std::string(name));
  if (auto err = s.jit->addObjectFile(*jd, std::move(buffer)))
    fail("jit", "cannot load the object code of kernel ", name, ": ", error_text(std::move(err)));
  return holder;
}

void* LoadedObject::lookup(std::string_view symbol) const {
  Session& s = session();
  auto* jd = static_cast<llvm::orc::JITDylib*>(dylib_);
  auto address = s.jit->lookup(*jd, llvm::StringRef(symbol.data(), symbol.size()));
  if (!address) fail("jit", "kernel ", name_, " has no symbol ", symbol, ": ", error_text(address.takeError()));
  return address->toPtr<void*>();
}

LoadedObject::~LoadedObject() {
  if (g_exiting) return;
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.jit_mu);
  llvm::consumeError(s.jit->getExecutionSession().removeJITDylib(*static_cast<llvm::orc::JITDylib*>(dylib_)));
}

}  // namespace jx::compiler::codegen
