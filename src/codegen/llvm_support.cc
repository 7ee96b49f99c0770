// LLVM initialization, TargetMachine creation, the optimization pipeline and emission of
// object files and assembly, shared by the JIT and the library export.
#include "llvm_support.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/LoopPassManager.h>
#include <llvm/Transforms/Scalar/LoopUnrollPass.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "kiln/support/error.h"

namespace kiln::codegen::detail {

namespace {

// What this thread is compiling inside an LLVMErrorScope ("" outside every scope), and whether
// LLVM failed fatally since the scope began (its TargetMachine is then not reused).
thread_local std::string compiling;
thread_local int scope_depth = 0;
thread_local bool fatal_error_seen = false;

void on_fatal_error(void* /*user_data*/, const char* reason, bool /*gen_crash_diag*/) {
  if (scope_depth > 0) {
    fatal_error_seen = true;
    // The exception unwinds through LLVM's frames (built with unwind tables); the objects of
    // the failed compilation are dropped with it.
    internal_error << "LLVM failed while compiling " << compiling << ": " << reason
                   << " (kiln gave LLVM code the target cannot compile; the process goes on)";
  }
  // Not kiln's compilation: LLVM's own behaviour (it exits after the handler returns).
  std::fprintf(stderr, "LLVM ERROR: %s\n", reason);
}

}  // namespace

void initialize_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    llvm::InitializeAllAsmParsers();
    llvm::install_fatal_error_handler(&on_fatal_error, nullptr);
  });
}

std::string describe_functions(const std::vector<ir::Ref<ir::PrimFunc>>& funcs,
                               const Target& target) {
  std::string names;
  for (const auto& func : funcs) {
    if (!func.defined()) continue;
    auto it = func->attrs.find("global_symbol");
    const auto* symbol = it == func->attrs.end() ? nullptr : it->second.as<ir::StringImm>();
    names += (names.empty() ? "" : ", ") + (symbol != nullptr ? symbol->value : "(unnamed)");
  }
  return (funcs.size() == 1 ? "function " : "functions ") + names + " for target " + target.str();
}

LLVMErrorScope::LLVMErrorScope(std::string what) : previous_(std::move(compiling)) {
  initialize_llvm();
  compiling = std::move(what);
  ++scope_depth;
}

LLVMErrorScope::~LLVMErrorScope() {
  --scope_depth;
  compiling = std::move(previous_);
}

const llvm::Target& lookup_llvm_target(const std::string& triple, const char* api) {
  initialize_llvm();
  std::string message;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, message);
  if (target == nullptr) {
    std::string known;
    for (const llvm::Target& t : llvm::TargetRegistry::targets()) {
      if (!known.empty()) known += ", ";
      known += t.getName();
    }
    user_error(ErrorKind::kValue) << api << ": -mtriple=" << triple
                                  << " names no target LLVM was built with (" << message
                                  << "); the registered architectures are " << known;
  }
  return *target;
}

namespace {

llvm::CodeGenOpt::Level codegen_level(int opt_level) {
  switch (opt_level) {
    case 0:
      return llvm::CodeGenOpt::None;
    case 1:
      return llvm::CodeGenOpt::Less;
    case 2:
      return llvm::CodeGenOpt::Default;
    default:
      return llvm::CodeGenOpt::Aggressive;
  }
}

}  // namespace

std::unique_ptr<llvm::TargetMachine> create_target_machine(const Target& target) {
  const llvm::Target& llvm_target = lookup_llvm_target(target.triple, "codegen");
  llvm::TargetOptions options;
  // Fusing a multiply and an add into an FMA is the one relaxation of IEEE evaluation kiln
  // allows by default (see kiln/ir/expr.h); no other fast-math flag is set.
  options.AllowFPOpFusion = target.fp_contract ? llvm::FPOpFusion::Fast : llvm::FPOpFusion::Strict;
  std::unique_ptr<llvm::TargetMachine> machine(llvm_target.createTargetMachine(
      target.triple, target.cpu, target.llvm_features, options, llvm::Reloc::PIC_,
      llvm::CodeModel::Small, codegen_level(target.opt_level)));
  internal_check(machine != nullptr)
      << "codegen: LLVM could not create a TargetMachine for " << target.str();
  return machine;
}

namespace {

class MachinePool {
 public:
  static MachinePool& get() {
    static MachinePool* pool = new MachinePool();  // never destroyed: leases may outlive statics
    return *pool;
  }

  std::unique_ptr<llvm::TargetMachine> take(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = idle_.find(key);
    if (it == idle_.end() || it->second.empty()) return nullptr;
    std::unique_ptr<llvm::TargetMachine> machine = std::move(it->second.back());
    it->second.pop_back();
    return machine;
  }

  void give_back(const std::string& key, llvm::TargetMachine* machine) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::unique_ptr<llvm::TargetMachine>>& idle = idle_[key];
    if (idle.size() < kMaxIdlePerTarget) {
      idle.emplace_back(machine);
    } else {
      delete machine;
    }
  }

 private:
  static constexpr size_t kMaxIdlePerTarget = 8;
  std::mutex mutex_;
  std::map<std::string, std::vector<std::unique_ptr<llvm::TargetMachine>>> idle_;
};

}  // namespace

std::shared_ptr<llvm::TargetMachine> lease_target_machine(const Target& target) {
  std::string key = target.triple + " " + target.cpu + " " + target.llvm_features + " " +
                    std::to_string(target.opt_level) + (target.fp_contract ? "" : " nofma");
  MachinePool& pool = MachinePool::get();
  std::unique_ptr<llvm::TargetMachine> machine = pool.take(key);
  if (machine == nullptr) machine = create_target_machine(target);
  fatal_error_seen = false;
  return std::shared_ptr<llvm::TargetMachine>(machine.release(), [key](llvm::TargetMachine* m) {
    // After a fatal error in its passes the machine may hold half-built state: drop it.
    if (fatal_error_seen) {
      fatal_error_seen = false;
      delete m;
      return;
    }
    MachinePool::get().give_back(key, m);
  });
}

namespace {

// kiln's optimization pipeline, opt level 3 (the default): the passes kiln's code needs, in the
// order they run. A schedule has already tiled, vectorized and unrolled the loops it cares
// about (the tuner marks every loop it leaves serial llvm.loop.unroll.disable and
// llvm.loop.vectorize.enable false: "fixed"), so most of LLVM's O3 pipeline (inlining, loop
// unswitching, induction-variable rewriting, a third round of instcombine) only costs time on
// it: on tuned and sampled GEMM, convolution, batch matmul, softmax and RMSNorm candidates this
// list builds in about half the CPU time of O3 and runs as fast
// (benchmarks/bench_build_time.py). The vectorizers and LLVM's unroller stay for loops a hand
// schedule leaves to LLVM; they and their clean-up run only where they can change something
// (on tuned candidates the same machine code, 4-9% less build CPU for convolution, batch matmul
// and norms).
// Each instcombine runs one round over the function (max-iterations=1, LLVM 18's default), not
// rounds until nothing changes (LLVM 16's): on 99 sampled and tuned candidates of six workloads
// the later rounds changed the machine code of one (an alignment it proved), and they took 40%
// of instcombine's time.
constexpr const char* kScalarPasses =
    "sroa,"  // locals and "local" buffers (register tiles) to SSA values
    "early-cse,simplifycfg,instcombine<max-iterations=1>,"
    "loop-mssa(licm,loop-rotate,licm),"  // invariant loads and address arithmetic out of loops
    "simplifycfg,instcombine<max-iterations=1>";
// Then LLVM's full unroll of the loops marked llvm.loop.unroll.full (kUnrolled, too big to copy)
// and no other: a small copy loop unrolled this early would reach the loop vectorizer as the
// straight-line body of its outer loop, which an AVX-512 cost model vectorizes with gathers.
constexpr const char* kAfterForcedUnroll =
    "sroa,"            // ... whose "local" tiles their copies index by constants
    "gvn,"             // loads and index arithmetic computed twice
    "jump-threading,"  // one guard tested many times (a padding row) becomes one branch
    "simplifycfg,instcombine<max-iterations=1>,loop-mssa(licm),simplifycfg";
constexpr const char* kLoopVectorizer = "loop-vectorize";  // loops left serial and scalar
constexpr const char* kSlpVectorizer =
    "slp-vectorizer";  // straight-line scalar code (the unrolled copies of a guarded row)
constexpr const char* kAfterVectorizers =
    "instcombine<max-iterations=1>";  // the vectorizers' shuffles
constexpr const char* kLoopUnroller =
    "loop-unroll<O3>,"  // loops left to LLVM (not marked llvm.loop.unroll.disable)
    "sroa,"             // ... whose copies index "local" buffers by constants now
    "instcombine<max-iterations=1>,simplifycfg";

// Parses "instcombine<max-iterations=N>", LLVM 17's spelling of InstCombinePass(N), which LLVM
// 16's pipeline parser does not know.
bool parse_instcombine_rounds(llvm::StringRef name, llvm::FunctionPassManager& passes,
                              llvm::ArrayRef<llvm::PassBuilder::PipelineElement> /*inner*/) {
  unsigned rounds = 0;
  if (!name.consume_front("instcombine<max-iterations=") || !name.consume_back(">") ||
      name.getAsInteger(10, rounds) || rounds == 0) {
    return false;
  }
  passes.addPass(llvm::InstCombinePass(rounds));
  return true;
}

bool loop_vectorize_disabled(const llvm::Loop& loop) {
  std::optional<bool> enable =
      llvm::getOptionalBoolLoopAttribute(&loop, "llvm.loop.vectorize.enable");
  return enable.has_value() && !*enable;
}

// What LLVM's loop passes may still do to `function`: loops not marked unroll.disable (for the
// unroller) and loops not marked vectorize.enable false (for the loop vectorizer).
struct LoopsLeftToLlvm {
  bool to_unroll = false;
  bool to_vectorize = false;
};

LoopsLeftToLlvm loops_left_to_llvm(const llvm::LoopInfo& loops) {
  LoopsLeftToLlvm left;
  for (const llvm::Loop* loop : loops.getLoopsInPreorder()) {
    if (llvm::findOptionMDForLoop(loop, "llvm.loop.unroll.disable") == nullptr) {
      left.to_unroll = true;
    }
    if (!loop_vectorize_disabled(*loop)) left.to_vectorize = true;
  }
  return left;
}

llvm::FunctionPassManager parse_function_passes(llvm::PassBuilder& builder, const char* text) {
  llvm::FunctionPassManager passes;
  llvm::Error error = builder.parsePassPipeline(passes, text);
  internal_check(!error) << "codegen: LLVM does not accept kiln's passes " << text << ": "
                         << llvm::toString(std::move(error));
  return passes;
}

// kiln's pipeline on each function of `module`: the scalar passes, then each vectorizer and the
// unroller where a loop or straight-line code is left to it, with their clean-up only after
// they changed the function.
void run_kiln_pipeline(llvm::Module& module, llvm::PassBuilder& builder,
                       llvm::FunctionAnalysisManager& analyses) {
  llvm::FunctionPassManager scalar = parse_function_passes(builder, kScalarPasses);
  scalar.addPass(llvm::createFunctionToLoopPassAdaptor(
      llvm::LoopFullUnrollPass(/*OptLevel=*/3, /*OnlyWhenForced=*/true, /*ForgetSCEV=*/false)));
  scalar.addPass(parse_function_passes(builder, kAfterForcedUnroll));
  llvm::FunctionPassManager loop_vectorizer = parse_function_passes(builder, kLoopVectorizer);
  llvm::FunctionPassManager slp_vectorizer = parse_function_passes(builder, kSlpVectorizer);
  llvm::FunctionPassManager after_vectorizers = parse_function_passes(builder, kAfterVectorizers);
  llvm::FunctionPassManager unroller = parse_function_passes(builder, kLoopUnroller);
  for (llvm::Function& function : module) {
    if (function.isDeclaration()) continue;
    scalar.run(function, analyses);
    LoopsLeftToLlvm left = loops_left_to_llvm(analyses.getResult<llvm::LoopAnalysis>(function));
    bool vectorized = false;
    if (left.to_vectorize) vectorized = !loop_vectorizer.run(function, analyses).areAllPreserved();
    vectorized |= !slp_vectorizer.run(function, analyses).areAllPreserved();
    if (vectorized) after_vectorizers.run(function, analyses);
    if (left.to_unroll) unroller.run(function, analyses);
  }
}

}  // namespace

void optimize_module(llvm::Module& module, llvm::TargetMachine& machine, int opt_level) {
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = opt_level >= 2;
  tuning.SLPVectorization = opt_level >= 2;
  tuning.LoopUnrolling = opt_level >= 1;
  llvm::PassBuilder builder(&machine, tuning);
  builder.registerPipelineParsingCallback(parse_instcombine_rounds);

  llvm::LoopAnalysisManager loop_analyses;
  llvm::FunctionAnalysisManager function_analyses;
  llvm::CGSCCAnalysisManager cgscc_analyses;
  llvm::ModuleAnalysisManager module_analyses;
  builder.registerModuleAnalyses(module_analyses);
  builder.registerCGSCCAnalyses(cgscc_analyses);
  builder.registerFunctionAnalyses(function_analyses);
  builder.registerLoopAnalyses(loop_analyses);
  builder.crossRegisterProxies(loop_analyses, function_analyses, cgscc_analyses, module_analyses);

  llvm::ModulePassManager passes;
  switch (opt_level) {
    case 0:
      passes = builder.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
      break;
    case 1:
      passes = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O1);
      break;
    case 2:
      passes = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
      break;
    default:
      run_kiln_pipeline(module, builder, function_analyses);
      return;
  }
  passes.run(module, module_analyses);
}

std::string optimization_pipeline(int opt_level) {
  if (opt_level < 3) return "default<O" + std::to_string(std::max(opt_level, 0)) + ">";
  return std::string(kScalarPasses) + ";loop(loop-unroll-full<forced>);" + kAfterForcedUnroll +
         ";" + kLoopVectorizer + ";" + kSlpVectorizer + ";" + kAfterVectorizers + ";" +
         kLoopUnroller;
}

std::string emit_machine_code(llvm::Module& module, llvm::TargetMachine& machine,
                              MachineCodeKind kind) {
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager passes;
  llvm::CodeGenFileType file_type =
      kind == MachineCodeKind::kObject ? llvm::CGFT_ObjectFile : llvm::CGFT_AssemblyFile;
  bool cannot_emit = machine.addPassesToEmitFile(passes, stream, nullptr, file_type);
  internal_check(!cannot_emit) << "codegen: the TargetMachine of "
                               << machine.getTargetTriple().str() << " cannot emit "
                               << (kind == MachineCodeKind::kObject ? "object files" : "assembly");
  passes.run(module);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace kiln::codegen::detail
