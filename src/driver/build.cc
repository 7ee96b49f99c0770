// The build driver: lowers each function, assembles the module manifest from the argument specs
// the lowering pipeline wrote, JIT-compiles the functions and hands them to the runtime.
#include "kiln/driver/build.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "kiln/codegen/codegen_gpu.h"
#include "kiln/codegen/export.h"
#include "kiln/ir/expr.h"
#include "kiln/schedule/tensor_intrin.h"
#include "kiln/support/error.h"
#include "kiln/tir/pipeline.h"

namespace kiln::driver {

using namespace ir;

namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// `func` with its "global_symbol" attribute, which names the kernel's symbol, set to `symbol`.
// Symbols derive from the module keys: two functions made by te.create_prim_func, both
// "main" by their attribute, get distinct symbols, and no symbol is the C program's `main`.
Ref<PrimFunc> with_symbol(const Ref<PrimFunc>& func, const std::string& symbol) {
  auto it = func->attrs.find("global_symbol");
  if (it != func->attrs.end()) {
    const auto* s = it->second.as<StringImm>();
    if (s != nullptr && s->value == symbol) return func;
  }
  auto result = copy(func.get());
  result->attrs["global_symbol"] = make<StringImm>(symbol);
  return result;
}

// The dump directory of function `name`: `dump_dir` itself when the module has one function,
// else a subdirectory named after the function.
std::string function_dump_dir(const std::string& dump_dir, const std::string& name,
                              size_t num_functions) {
  if (dump_dir.empty() || num_functions == 1) return dump_dir;
  return (std::filesystem::path(dump_dir) / name).string();
}

// This function's entry of the manifest: the "kiln.arg_spec" that make_packed_api wrote, named
// after its module key.
Json function_spec(const Ref<PrimFunc>& lowered, const std::string& name) {
  auto it = lowered->attrs.find("kiln.arg_spec");
  internal_check(it != lowered->attrs.end() && it->second.as<StringImm>() != nullptr)
      << "build: the lowering pipeline left function " << name
      << " without its kiln.arg_spec attribute (make_packed_api did not run)";
  Json spec = Json::parse(it->second.as<StringImm>()->value, nullptr, false);
  internal_check(spec.is_object())
      << "build: the kiln.arg_spec attribute of function " << name << " is not a JSON object";
  spec["name"] = name;
  return spec;
}

// One warning per loop that vectorize_loops left serial, from the function's
// "kiln.vectorize_fallbacks" attribute: "function main: loop i_1 is not vectorized (it runs
// serially): <reason>".
std::vector<std::string> vectorize_warnings(const Ref<PrimFunc>& lowered, const std::string& name) {
  std::vector<std::string> out;
  auto it = lowered->attrs.find("kiln.vectorize_fallbacks");
  if (it == lowered->attrs.end()) return out;
  const auto* text = it->second.as<StringImm>();
  internal_check(text != nullptr) << "build: the kiln.vectorize_fallbacks attribute of function "
                                  << name << " is not a string";
  Json fallbacks = Json::parse(text->value, nullptr, false);
  internal_check(fallbacks.is_array())
      << "build: the kiln.vectorize_fallbacks attribute of function " << name
      << " is not a JSON array";
  for (const Json& entry : fallbacks) {
    out.push_back("function " + name + ": loop " + entry.value("loop", std::string("?")) +
                  " is not vectorized (it runs serially): " +
                  entry.value("reason", std::string("no reason recorded")));
  }
  return out;
}

std::string base64(const std::string& bytes) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t chunk = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) chunk |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) chunk |= static_cast<uint8_t>(bytes[i + 2]);
    out += digits[(chunk >> 18) & 63];
    out += digits[(chunk >> 12) & 63];
    out += i + 1 < bytes.size() ? digits[(chunk >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? digits[chunk & 63] : '=';
  }
  return out;
}

// The device code of a GPU build: the source of `kernels` (into `sources`) and the manifest's
// "device_blobs" entries (CUDA binaries through the cache in `cache_dir`, when given, and
// `from_cache` says whether they came from it); what the code generator notes goes to
// `warnings`.
Json device_blobs(const codegen::Target& target, const std::vector<Ref<PrimFunc>>& kernels,
                  const std::string& cache_dir, std::map<std::string, std::string>* sources,
                  std::vector<std::string>* warnings, bool* from_cache) {
  Json blobs = Json::array();
  std::vector<std::string> notes;
  if (target.kind == "cuda") {
    std::string source = codegen::codegen_cuda(kernels, target, &notes);
    (*sources)["cuda"] = source;
    codegen::CudaBinary binary =
        codegen::compile_cuda(source, target.arch, target.fast_math, cache_dir);
    *from_cache = binary.from_cache;
    (*sources)["ptx"] = binary.ptx;
    blobs.push_back({{"kind", "cuda"},
                     {"format", "cubin"},
                     {"arch", target.arch},
                     {"base64", base64(binary.cubin)}});
    blobs.push_back(
        {{"kind", "cuda"}, {"format", "ptx"}, {"arch", target.arch}, {"text", binary.ptx}});
  } else {
    std::string source = codegen::codegen_opencl(kernels, target, &notes);
    (*sources)["opencl"] = source;
    Json blob = {{"kind", "opencl"}, {"format", "cl"}, {"text", source}};
    std::string options = codegen::opencl_build_options(target);
    if (!options.empty()) blob["build_options"] = options;
    blobs.push_back(blob);
  }
  warnings->insert(warnings->end(), notes.begin(), notes.end());
  return blobs;
}

std::string architecture(const std::string& triple) {
  return triple.substr(0, triple.find('-'));
}

// Why code for `target` cannot run in this process, or "" when it can.
std::string reason_not_runnable(const codegen::Target& target) {
  const codegen::Target& host = codegen::host_target();
  if (architecture(target.triple) != architecture(host.triple)) {
    return "it is for " + architecture(target.triple) + " and this process runs on " +
           architecture(host.triple);
  }
  std::string missing;
  for (const std::string& feature : target.isa_features()) {
    if (!host.has_feature(feature)) missing += (missing.empty() ? "" : ", ") + feature;
  }
  if (!missing.empty()) return "it uses CPU features this CPU lacks (" + missing + ")";
  return "";
}

}  // namespace

void set_gpu_lower_options(const codegen::Target& target, std::vector<Ref<PrimFunc>>* kernels,
                           tir::LowerOptions* options) {
  options->device_kernels = kernels;
  options->device = target.kind;
  options->gpu_limits.max_threads_per_block = target.gpu.max_threads_per_block;
  options->gpu_limits.max_shared_memory_per_block = target.gpu.max_shared_memory_per_block;
  if (target.kind == "cuda") {
    options->gpu_limits.warp_shuffle_width = target.gpu.thread_warp_size;
    options->gpu_limits.max_static_shared_memory_per_block = 48 * 1024;
    options->gpu_limits.async_copy = target.compute_capability() >= 80;
  }
  options->gpu_limits.vector_lanes = codegen::gpu_vector_lanes(target);
}

BuiltModule::~BuiltModule() {
  // The runtime module calls into the JIT code, so it goes first.
  KilnModuleFree(runtime_module_);
  jit_.reset();
}

KilnModuleHandle BuiltModule::runtime_module() const {
  runtime_check(runtime_module_ != nullptr)
      << "the module built for target '" << target_.str()
      << "' cannot run in this process: " << not_runnable_reason_
      << "; export it with export_library and load it on a machine "
      << "that can run it";
  return runtime_module_;
}

std::string BuiltModule::get_source(const std::string& format) const {
  auto device = device_sources_.find(format);
  if (device != device_sources_.end()) return device->second;
  if (target_.is_gpu() && format != "ll" && format != "asm") {
    std::string formats;
    for (const auto& [name, text] : device_sources_) formats += ", \"" + name + "\"";
    user_error(ErrorKind::kValue) << "get_source: unknown format '" << format << "' for target '"
                                  << target_.str() << "'; the formats are \"ll\", \"asm\" (the "
                                  << "host code)" << formats;
  }
  if (jit_ != nullptr) return jit_->get_source(format);
  return codegen::compile_source(lowered_, target_, format);
}

void BuiltModule::export_library(const std::string& path) const {
  codegen::export_library(lowered_, target_, manifest_, path);
}

std::string default_function_name(const Ref<PrimFunc>& func) {
  auto it = func->attrs.find("global_symbol");
  if (it != func->attrs.end()) {
    if (const auto* s = it->second.as<StringImm>()) return s->value;
  }
  return "main";
}

tir::LowerOptions lower_options_for(const codegen::Target& target,
                                    std::vector<Ref<PrimFunc>>* kernels) {
  tir::LowerOptions options;
  if (target.is_gpu()) set_gpu_lower_options(target, kernels, &options);
  return options;
}

std::unique_ptr<BuiltModule> build(const Ref<IRModule>& mod, const std::string& target,
                                   const BuildOptions& options) {
  Clock::time_point start = Clock::now();
  user_check(mod.defined() && !mod->functions.empty())
      << "build: the module has no functions; expected at least one PrimFunc";
  std::unique_ptr<BuiltModule> result(new BuiltModule());
  // Step 1. Parse the target first: a typo in it should not wait for lowering.
  result->target_ = codegen::parse_target(target);

  // Step 2. Lower each function under its name.
  std::string dump_dir = options.dump_dir;
  if (dump_dir.empty()) {
    const char* env = std::getenv("KILN_DUMP_IR");
    if (env != nullptr) dump_dir = env;
  }
  Clock::time_point lower_start = Clock::now();
  schedule::IntrinTarget intrin_target{result->target_.str(), result->target_.intrinsic_features()};
  const codegen::Target& target_info = result->target_;
  std::vector<Ref<PrimFunc>> kernels;
  for (const auto& [name, func] : mod->functions) {
    user_check(func.defined()) << "build: function " << name << " of the module is null";
    // A tensor intrinsic the target cannot select would reach LLVM's instruction selection.
    schedule::check_tensor_intrin_features(*func, name, intrin_target, "build");
    tir::LowerOptions lower_options = lower_options_for(target_info, &kernels);
    lower_options.dump_dir = function_dump_dir(dump_dir, name, mod->functions.size());
    lower_options.packed_entry = true;
    lower_options.name = name;
    result->names_.push_back(name);
    result->lowered_.push_back(
        tir::lower(with_symbol(func, "kiln_unchecked_" + name), lower_options));
  }
  result->timings_.lower_ms = ms_since(lower_start);

  // Step 3. The manifest.
  Json manifest;
  manifest["abi_version"] = KILN_RUNTIME_ABI_VERSION;
  // The runtime judges the host code by "target"; a GPU target's device code is described by
  // "device_target" and the blobs.
  codegen::Target host = result->target_;
  host.kind = "llvm";
  manifest["target"] = host.str();
  if (result->target_.is_gpu()) manifest["device_target"] = result->target_.str();
  manifest["host_features"] = result->target_.isa_features();
  Json functions = Json::array();
  for (size_t i = 0; i < result->lowered_.size(); ++i) {
    functions.push_back(function_spec(result->lowered_[i], result->names_[i]));
  }
  manifest["functions"] = functions;
  for (size_t i = 0; i < result->lowered_.size(); ++i) {
    for (std::string& w : vectorize_warnings(result->lowered_[i], result->names_[i])) {
      result->warnings_.push_back(std::move(w));
    }
  }
  manifest["device_blobs"] = Json::array();
  if (target_info.is_gpu()) {
    Clock::time_point device_start = Clock::now();
    manifest["device_blobs"] =
        device_blobs(target_info, kernels, options.object_cache_dir, &result->device_sources_,
                     &result->warnings_, &result->timings_.device_from_cache);
    Json device_kernels = Json::array();
    for (const Ref<PrimFunc>& kernel : kernels) {
      device_kernels.push_back({{"name", kernel->attrs.at("global_symbol").as<StringImm>()->value},
                                {"num_args", kernel->params.size()}});
    }
    manifest["device_kernels"] = device_kernels;
    result->timings_.device_ms = ms_since(device_start);
  }
  manifest["warnings"] = result->warnings_;
  result->manifest_ = manifest.dump();

  // Step 4. Machine code in this process, served by a runtime module.
  result->not_runnable_reason_ = reason_not_runnable(result->target_);
  if (result->not_runnable_reason_.empty()) {
    result->jit_ = codegen::compile_jit(result->lowered_, result->target_, result->manifest_, {},
                                        options.object_cache_dir);
    result->timings_.jit = result->jit_->timings();
    KilnModuleHandle handle = nullptr;
    int32_t status = KilnModuleCreate(result->manifest_.c_str(), nullptr,
                                      &codegen::JitModule::resolve, result->jit_.get(), &handle);
    internal_check(status == 0) << "build: the runtime refused the module it was just built for: "
                                << KilnGetLastError();
    result->runtime_module_ = handle;
  }
  result->timings_.total_ms = ms_since(start);
  return result;
}

std::unique_ptr<BuiltModule> build(const Ref<PrimFunc>& func, const std::string& target,
                                   const std::string& name, const BuildOptions& options) {
  user_check(func.defined()) << "build: the function is null";
  auto mod = make<IRModule>();
  mod->functions[name.empty() ? default_function_name(func) : name] = func;
  return build(mod, target, options);
}

}  // namespace kiln::driver
