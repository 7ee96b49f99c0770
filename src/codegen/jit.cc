// The in-process JIT: one ORC LLJIT per process; each JitModule is a JITDylib holding the object
// file of one optimized module, linked against a dylib of the runtime's functions and libm.
#include "kiln/codegen/jit.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "kiln/codegen/codegen_llvm.h"
#include "kiln/runtime/c_runtime_api.h"
#include "kiln/support/error.h"
#include "llvm_support.h"
#include "object_cache.h"

namespace kiln::codegen {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double thread_cpu_ms() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) * 1e-6;
}

std::string llvm_message(llvm::Error error) {
  return llvm::toString(std::move(error));
}

// The C functions compiled code may call, by address, so that resolving them does not depend on
// how the host program was linked.
std::vector<std::pair<const char*, void*>> process_symbols() {
  using F = float (*)(float);
  using D = double (*)(double);
  using F2 = float (*)(float, float);
  using D2 = double (*)(double, double);
  return {
      {"KilnSetLastError", reinterpret_cast<void*>(&KilnSetLastError)},
      {"KilnBackendParallelLaunch", reinterpret_cast<void*>(&KilnBackendParallelLaunch)},
      {"KilnGetNumThreads", reinterpret_cast<void*>(&KilnGetNumThreads)},
      {"KilnBackendAllocWorkspace", reinterpret_cast<void*>(&KilnBackendAllocWorkspace)},
      {"KilnBackendFreeWorkspace", reinterpret_cast<void*>(&KilnBackendFreeWorkspace)},
      {"KilnDeviceLaunch", reinterpret_cast<void*>(&KilnDeviceLaunch)},
      {"KilnDeviceAlloc", reinterpret_cast<void*>(&KilnDeviceAlloc)},
      {"KilnDeviceFree", reinterpret_cast<void*>(&KilnDeviceFree)},
      {"memcpy", reinterpret_cast<void*>(&::memcpy)},
      {"memmove", reinterpret_cast<void*>(&::memmove)},
      {"memset", reinterpret_cast<void*>(&::memset)},
      {"expf", reinterpret_cast<void*>(static_cast<F>(&::expf))},
      {"exp", reinterpret_cast<void*>(static_cast<D>(&::exp))},
      {"exp2f", reinterpret_cast<void*>(static_cast<F>(&::exp2f))},
      {"exp2", reinterpret_cast<void*>(static_cast<D>(&::exp2))},
      {"logf", reinterpret_cast<void*>(static_cast<F>(&::logf))},
      {"log", reinterpret_cast<void*>(static_cast<D>(&::log))},
      {"log2f", reinterpret_cast<void*>(static_cast<F>(&::log2f))},
      {"log2", reinterpret_cast<void*>(static_cast<D>(&::log2))},
      {"log1pf", reinterpret_cast<void*>(static_cast<F>(&::log1pf))},
      {"log1p", reinterpret_cast<void*>(static_cast<D>(&::log1p))},
      {"sinf", reinterpret_cast<void*>(static_cast<F>(&::sinf))},
      {"sin", reinterpret_cast<void*>(static_cast<D>(&::sin))},
      {"cosf", reinterpret_cast<void*>(static_cast<F>(&::cosf))},
      {"cos", reinterpret_cast<void*>(static_cast<D>(&::cos))},
      {"tanf", reinterpret_cast<void*>(static_cast<F>(&::tanf))},
      {"tan", reinterpret_cast<void*>(static_cast<D>(&::tan))},
      {"tanhf", reinterpret_cast<void*>(static_cast<F>(&::tanhf))},
      {"tanh", reinterpret_cast<void*>(static_cast<D>(&::tanh))},
      {"erff", reinterpret_cast<void*>(static_cast<F>(&::erff))},
      {"erf", reinterpret_cast<void*>(static_cast<D>(&::erf))},
      {"sqrtf", reinterpret_cast<void*>(static_cast<F>(&::sqrtf))},
      {"sqrt", reinterpret_cast<void*>(static_cast<D>(&::sqrt))},
      {"floorf", reinterpret_cast<void*>(static_cast<F>(&::floorf))},
      {"floor", reinterpret_cast<void*>(static_cast<D>(&::floor))},
      {"ceilf", reinterpret_cast<void*>(static_cast<F>(&::ceilf))},
      {"ceil", reinterpret_cast<void*>(static_cast<D>(&::ceil))},
      {"truncf", reinterpret_cast<void*>(static_cast<F>(&::truncf))},
      {"trunc", reinterpret_cast<void*>(static_cast<D>(&::trunc))},
      {"roundevenf", reinterpret_cast<void*>(static_cast<F>(&::roundevenf))},
      {"roundeven", reinterpret_cast<void*>(static_cast<D>(&::roundeven))},
      {"fabsf", reinterpret_cast<void*>(static_cast<F>(&::fabsf))},
      {"fabs", reinterpret_cast<void*>(static_cast<D>(&::fabs))},
      {"powf", reinterpret_cast<void*>(static_cast<F2>(&::powf))},
      {"pow", reinterpret_cast<void*>(static_cast<D2>(&::pow))},
      {"fmodf", reinterpret_cast<void*>(static_cast<F2>(&::fmodf))},
      {"fmod", reinterpret_cast<void*>(static_cast<D2>(&::fmod))},
      {"fminf", reinterpret_cast<void*>(static_cast<F2>(&::fminf))},
      {"fmin", reinterpret_cast<void*>(static_cast<D2>(&::fmin))},
      {"fmaxf", reinterpret_cast<void*>(static_cast<F2>(&::fmaxf))},
      {"fmax", reinterpret_cast<void*>(static_cast<D2>(&::fmax))},
  };
}

// The link errors ORC reported on this thread (it reports them apart from the failed lookup,
// whose own error only names the symbols it could not materialize).
thread_local std::string session_errors;

llvm::orc::SymbolMap absolute_symbols(llvm::orc::LLJIT& jit,
                                      const std::vector<std::pair<const char*, void*>>& symbols) {
  llvm::orc::SymbolMap map;
  for (const auto& [name, address] : symbols) {
    map[jit.mangleAndIntern(name)] =
        llvm::JITEvaluatedSymbol::fromPointer(address, llvm::JITSymbolFlags::Exported);
  }
  return map;
}

// The process's one LLJIT and the dylib of the functions compiled code may call.
class JitEngine {
 public:
  static JitEngine& get() {
    static JitEngine* engine = new JitEngine();  // never destroyed: code may outlive statics
    return *engine;
  }

  llvm::orc::LLJIT& jit() { return *jit_; }
  llvm::orc::JITDylib& runtime_dylib() { return *runtime_; }
  std::string next_dylib_name() { return "kiln_module_" + std::to_string(counter_++); }

 private:
  JitEngine() {
    detail::initialize_llvm();
    auto jit = llvm::orc::LLJITBuilder().create();
    internal_check(static_cast<bool>(jit))
        << "compile_jit: LLVM's JIT could not start: " << llvm_message(jit.takeError());
    jit_ = std::move(*jit);
    jit_->getExecutionSession().setErrorReporter([](llvm::Error error) {
      session_errors += (session_errors.empty() ? "" : "; ") + llvm_message(std::move(error));
    });
    auto runtime = jit_->getExecutionSession().createJITDylib("kiln_runtime");
    internal_check(static_cast<bool>(runtime))
        << "compile_jit: " << llvm_message(runtime.takeError());
    runtime_ = &*runtime;
    llvm::Error defined =
        runtime_->define(llvm::orc::absoluteSymbols(absolute_symbols(*jit_, process_symbols())));
    internal_check(!defined) << "compile_jit: " << llvm_message(std::move(defined));
    // Anything else (an extern C function, a compiler-rt helper) comes from the process.
    auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        jit_->getDataLayout().getGlobalPrefix());
    internal_check(static_cast<bool>(process))
        << "compile_jit: " << llvm_message(process.takeError());
    runtime_->addGenerator(std::move(*process));
    // The compiler-rt helpers of libgcc (GCC 12 has the float16 conversions a CPU without F16C
    // calls): the extension loaded it, but privately, where the process search does not look.
    auto libgcc = llvm::orc::DynamicLibrarySearchGenerator::Load(
        "libgcc_s.so.1", jit_->getDataLayout().getGlobalPrefix());
    if (libgcc) {
      runtime_->addGenerator(std::move(*libgcc));
    } else {
      llvm::consumeError(libgcc.takeError());  // elsewhere: such calls fail to link, with a message
    }
  }

  std::unique_ptr<llvm::orc::LLJIT> jit_;
  llvm::orc::JITDylib* runtime_ = nullptr;
  std::atomic<int64_t> counter_{0};
};

void check_runs_here(const Target& target) {
  const Target& host = host_target();
  llvm::Triple triple(target.triple);
  llvm::Triple host_triple(host.triple);
  user_check(triple.getArch() == host_triple.getArch())
      << "compile_jit: target '" << target.str() << "' is for " << triple.getArchName().str()
      << " but this process runs on " << host_triple.getArchName().str()
      << "; use export_library to compile for another machine";
  std::string missing;
  for (const std::string& feature : target.isa_features()) {
    if (!host.has_feature(feature)) missing += (missing.empty() ? "" : ", ") + feature;
  }
  user_check(missing.empty()) << "compile_jit: target '" << target.str()
                              << "' uses CPU features this CPU lacks (" << missing
                              << "); the code would fault here. Use a target without them, e.g. "
                                 "'llvm', or export_library to compile for another machine";
}

}  // namespace

struct JitModule::Impl {
  Target target;
  std::string manifest;
  std::vector<std::string> symbols;
  std::unordered_map<std::string, void*> addresses;  // the function table and the manifest
  std::unordered_map<std::string, void*> kernels;    // each function by its symbol
  llvm::orc::JITDylib* dylib = nullptr;
  JitTimings timings;
  // The optimized module, before code generation rewrote it, for get_source; when the object
  // came from the cache, the module as generated, optimized on the first get_source.
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> optimized;
  std::unique_ptr<llvm::Module> unoptimized;
  mutable std::mutex source_mutex;
  mutable std::map<std::string, std::string> sources;

  ~Impl() {
    if (dylib != nullptr) {
      llvm::consumeError(JitEngine::get().jit().getExecutionSession().removeJITDylib(*dylib));
    }
    optimized.reset();
  }
};

JitModule::JitModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JitModule::~JitModule() = default;

void* JitModule::get_function(const std::string& symbol) const {
  auto it = impl_->kernels.find(symbol);
  return it == impl_->kernels.end() ? nullptr : it->second;
}

const std::vector<std::string>& JitModule::function_symbols() const {
  return impl_->symbols;
}
const std::string& JitModule::manifest() const {
  return impl_->manifest;
}
const Target& JitModule::target() const {
  return impl_->target;
}
const JitTimings& JitModule::timings() const {
  return impl_->timings;
}

void* JitModule::resolve(void* jit_module, const char* symbol) {
  const auto* module = static_cast<const JitModule*>(jit_module);
  if (module == nullptr || symbol == nullptr) return nullptr;
  auto it = module->impl_->addresses.find(symbol);
  return it == module->impl_->addresses.end() ? nullptr : it->second;
}

std::string JitModule::get_source(const std::string& format) const {
  user_check(format == "ll" || format == "asm")
      << "JitModule.get_source: unknown format '" << format
      << "'; the formats are \"ll\" (optimized LLVM IR) and \"asm\" (assembly)";
  std::lock_guard<std::mutex> lock(impl_->source_mutex);
  auto it = impl_->sources.find(format);
  if (it != impl_->sources.end()) return it->second;
  if (impl_->optimized == nullptr) {
    detail::LLVMErrorScope scope("the optimized IR of a module for " + impl_->target.str());
    std::shared_ptr<llvm::TargetMachine> machine = detail::lease_target_machine(impl_->target);
    detail::optimize_module(*impl_->unoptimized, *machine, impl_->target.opt_level);
    impl_->optimized = std::move(impl_->unoptimized);
  }
  std::string text;
  if (format == "ll") {
    llvm::raw_string_ostream stream(text);
    impl_->optimized->print(stream, nullptr);
    stream.flush();
  } else {
    detail::LLVMErrorScope scope("the assembly of a module for " + impl_->target.str());
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(*impl_->optimized);
    std::shared_ptr<llvm::TargetMachine> machine = detail::lease_target_machine(impl_->target);
    text = detail::emit_machine_code(*copy, *machine, detail::MachineCodeKind::kAssembly);
  }
  impl_->sources[format] = text;
  return text;
}

std::unique_ptr<JitModule> compile_jit(const std::vector<ir::Ref<ir::PrimFunc>>& funcs,
                                       const Target& target, const std::string& manifest_json,
                                       const std::map<std::string, void*>& extra_symbols,
                                       const std::string& object_cache_dir) {
  Clock::time_point start = Clock::now();
  double cpu_start = thread_cpu_ms();
  check_runs_here(target);
  JitEngine& engine = JitEngine::get();
  auto impl = std::make_unique<JitModule::Impl>();
  impl->target = target;
  impl->manifest = manifest_json;
  for (const auto& func : funcs) {
    internal_check(func.defined()) << "compile_jit: null PrimFunc";
    impl->symbols.push_back(function_symbol(*func));
  }

  // Step 1. PrimFuncs -> LLVM IR -> optimized IR -> object file (or the object compiled from
  // the same IR before, from the cache).
  detail::LLVMErrorScope scope(detail::describe_functions(funcs, target));
  Clock::time_point phase = Clock::now();
  impl->context = std::make_unique<llvm::LLVMContext>();
  std::shared_ptr<llvm::TargetMachine> machine = detail::lease_target_machine(target);
  std::unique_ptr<llvm::Module> module =
      codegen_llvm(funcs, target, *machine, *impl->context, manifest_json);
  bool has_device_context = module->getNamedGlobal(kDeviceContextSymbol) != nullptr;
  detail::ObjectCache cache(object_cache_dir);
  std::string cache_key = object_cache_dir.empty() ? "" : detail::ObjectCache::key(*module, target);
  std::optional<std::string> object = cache.load(cache_key);
  impl->timings.codegen_ms = ms_since(phase);
  impl->timings.from_cache = object.has_value();
  if (object) {
    impl->unoptimized = std::move(module);
  } else {
    phase = Clock::now();
    detail::optimize_module(*module, *machine, target.opt_level);
    impl->optimized = llvm::CloneModule(*module);
    impl->timings.optimize_ms = ms_since(phase);
    phase = Clock::now();
    object = detail::emit_machine_code(*module, *machine, detail::MachineCodeKind::kObject);
    module.reset();
    impl->timings.emit_ms = ms_since(phase);
    cache.store(cache_key, *object);
  }

  // Step 2. Load the object into a fresh dylib and resolve every exported symbol.
  phase = Clock::now();
  llvm::orc::LLJIT& jit = engine.jit();
  std::string dylib_name = engine.next_dylib_name();
  auto dylib = jit.getExecutionSession().createJITDylib(dylib_name);
  internal_check(static_cast<bool>(dylib)) << "compile_jit: " << llvm_message(dylib.takeError());
  impl->dylib = &*dylib;
  impl->dylib->addToLinkOrder(engine.runtime_dylib());
  if (!extra_symbols.empty()) {
    std::vector<std::pair<const char*, void*>> extra;
    for (const auto& [name, address] : extra_symbols) extra.emplace_back(name.c_str(), address);
    llvm::Error defined =
        impl->dylib->define(llvm::orc::absoluteSymbols(absolute_symbols(jit, extra)));
    user_check(!defined) << "compile_jit: extra_symbols: " << llvm_message(std::move(defined));
  }
  llvm::Error added = jit.addObjectFile(
      *impl->dylib, llvm::MemoryBuffer::getMemBufferCopy(*object, dylib_name + ".o"));
  internal_check(!added) << "compile_jit: " << llvm_message(std::move(added));
  // The kernels have internal linkage: they are found through the function table, as the
  // runtime finds them in an exported library.
  std::vector<std::string> exported = {kFunctionTableSymbol};
  if (!manifest_json.empty()) exported.push_back(kManifestSymbol);
  if (has_device_context) exported.push_back(kDeviceContextSymbol);
  for (const std::string& symbol : exported) {
    session_errors.clear();
    auto address = jit.lookup(*impl->dylib, symbol);
    if (!address) {
      std::string lookup_error = llvm_message(address.takeError());
      // The table links every function: name them, not the table.
      std::string what = symbol;
      if (symbol == kFunctionTableSymbol) {
        what.clear();
        for (const std::string& name : impl->symbols) what += (what.empty() ? "" : ", ") + name;
      }
      user_error(ErrorKind::kValue)
          << "compile_jit: could not link " << what << ": "
          << (session_errors.empty() ? lookup_error : session_errors)
          << " (extern functions come from this process, libm, extra_symbols and the "
             "libraries opened with kiln.runtime.load_library)";
    }
    impl->addresses[symbol] = address->template toPtr<void*>();
  }
  auto* const* table = static_cast<void* const*>(impl->addresses[kFunctionTableSymbol]);
  for (size_t i = 0; i < impl->symbols.size(); ++i) {
    internal_check(table[i] != nullptr)
        << "compile_jit: the function table lacks " << impl->symbols[i];
    impl->kernels[impl->symbols[i]] = table[i];
  }
  impl->timings.link_ms = ms_since(phase);
  impl->timings.total_ms = ms_since(start);
  impl->timings.cpu_ms = thread_cpu_ms() - cpu_start;
  return std::unique_ptr<JitModule>(new JitModule(std::move(impl)));
}

}  // namespace kiln::codegen
