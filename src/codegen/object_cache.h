// A directory of compiled object files keyed by a hash of what produced them (private to
// src/codegen): compile_jit skips LLVM's optimization and code generation for a module it has
// compiled before, e.g. when the tuner builds its best candidates again for their final rounds,
// and compile_cuda skips NVRTC for CUDA C it has compiled before.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/codegen/target.h"

namespace llvm {
class Module;
}  // namespace llvm

namespace kiln::codegen::detail {

// The cache in `dir` (created on the first store). Entries are files "llvmcache-KEY", each the
// object followed by the BLAKE3 hash of its bytes, written to a temporary file and renamed into
// place, so that processes sharing the directory never read half an entry. The directory is
// pruned with LLVM's cache pruning to at most 4096 entries (the least recently used go first)
// and of entries unused for a week. Caching is best effort: a directory
// that cannot be written, a missing or damaged entry (its hash does not match; it is removed)
// only cost the compilation it would have saved. Tested by tests/cpp/codegen/object_cache_test.cc.
class ObjectCache {
 public:
  explicit ObjectCache(std::string dir) : dir_(std::move(dir)) {}

  // The key of the object of `module` (unoptimized) for `target`: a hex BLAKE3 hash of the
  // module's bitcode, the target's triple, CPU, features, opt level and FP contraction, the
  // optimization pipeline of that level, LLVM's version and the cache's format version.
  static std::string key(const llvm::Module& module, const Target& target);
  // The key of an entry made from `parts` alone (the device code of a GPU build: its source,
  // architecture, options and compiler version), hashed with the cache's format version.
  static std::string key(const std::vector<std::string>& parts);

  // The object stored under `key`, or nullopt.
  std::optional<std::string> load(const std::string& key) const;
  // Stores `object` under `key` (replacing an entry of the same key), then prunes the directory
  // when its last pruning is older than five minutes.
  void store(const std::string& key, const std::string& object) const;

 private:
  std::string dir_;
};

}  // namespace kiln::codegen::detail
