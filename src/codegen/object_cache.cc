// A directory of compiled object files keyed by a hash of what produced them (see
// object_cache.h). Files are read and written with LLVM's file-system support and pruned with
// LLVM's cache pruning, as LLVM's own ThinLTO cache does.
#include "object_cache.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/BLAKE3.h>
#include <llvm/Support/CachePruning.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>

#include "llvm_support.h"

namespace kiln::codegen::detail {

namespace {

// Changes when what an entry holds, or how kiln turns optimized IR into an object, changes
// outside the module's text and the pipeline (which are in the key).
constexpr const char* kFormat = "kiln-object-cache-1";
constexpr size_t kDigestBytes = 32;
constexpr uint64_t kMaxEntries = 4096;  // tuned candidates' objects: about 50 to 300 KB each

using Digest = llvm::BLAKE3Result<kDigestBytes>;

// A stream that hashes what is written to it, so that a module's bitcode is never held whole.
class HashStream : public llvm::raw_ostream {
 public:
  explicit HashStream(llvm::BLAKE3& hasher) : hasher_(hasher) {}
  ~HashStream() override { flush(); }

 private:
  void write_impl(const char* data, size_t size) override {
    hasher_.update(llvm::StringRef(data, size));
    position_ += size;
  }
  uint64_t current_pos() const override { return position_; }

  llvm::BLAKE3& hasher_;
  uint64_t position_ = 0;
};

// Each part with its length first, so that no two sequences of parts hash the same bytes.
void add_part(llvm::BLAKE3& hasher, const std::string& part) {
  hasher.update(std::to_string(part.size()) + ":");
  hasher.update(part);
}

Digest digest_of(llvm::StringRef bytes) {
  return llvm::BLAKE3::hash<kDigestBytes>(llvm::arrayRefFromStringRef(bytes));
}

llvm::StringRef as_bytes(const Digest& digest) {
  return llvm::StringRef(reinterpret_cast<const char*>(digest.data()), digest.size());
}

std::string entry_path(const std::string& dir, const std::string& key) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "llvmcache-" + key);
  return std::string(path);
}

}  // namespace

std::string ObjectCache::key(const llvm::Module& module, const Target& target) {
  llvm::BLAKE3 hasher;
  add_part(hasher, kFormat);
  add_part(hasher, LLVM_VERSION_STRING);
  add_part(hasher, target.triple);
  add_part(hasher, target.cpu);
  add_part(hasher, target.llvm_features);
  add_part(hasher, std::to_string(target.opt_level));
  add_part(hasher, target.fp_contract ? "fp-contract" : "fp-strict");
  add_part(hasher, optimization_pipeline(target.opt_level));
  {
    // Bitcode: half the time of the module's text (about 1 ms for a tuned convolution).
    HashStream stream(hasher);
    llvm::WriteBitcodeToFile(module, stream);
  }
  Digest digest = hasher.final<kDigestBytes>();
  return llvm::toHex(digest, /*LowerCase=*/true);
}

std::string ObjectCache::key(const std::vector<std::string>& parts) {
  llvm::BLAKE3 hasher;
  add_part(hasher, kFormat);
  for (const std::string& part : parts) add_part(hasher, part);
  Digest digest = hasher.final<kDigestBytes>();
  return llvm::toHex(digest, /*LowerCase=*/true);
}

std::optional<std::string> ObjectCache::load(const std::string& key) const {
  if (dir_.empty()) return std::nullopt;
  std::string path = entry_path(dir_, key);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) return std::nullopt;
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() > kDigestBytes) {
    llvm::StringRef object = bytes.drop_back(kDigestBytes);
    if (as_bytes(digest_of(object)) == bytes.take_back(kDigestBytes)) return object.str();
  }
  // Damaged (cut short, overwritten): never handed to the linker.
  llvm::sys::fs::remove(path);
  return std::nullopt;
}

void ObjectCache::store(const std::string& key, const std::string& object) const {
  if (dir_.empty() || llvm::sys::fs::create_directories(dir_)) return;
  llvm::SmallString<256> model(dir_);
  llvm::sys::path::append(model, "tmp-%%%%%%%%%%%%%%%%.o");
  llvm::Expected<llvm::sys::fs::TempFile> temp = llvm::sys::fs::TempFile::create(model);
  if (!temp) {
    llvm::consumeError(temp.takeError());
    return;
  }
  bool written = false;
  {
    llvm::raw_fd_ostream out(temp->FD, /*shouldClose=*/false);
    out << object << as_bytes(digest_of(object));
    out.flush();
    written = !out.has_error();
    out.clear_error();
  }
  llvm::Error done = written ? temp->keep(entry_path(dir_, key)) : llvm::Error::success();
  if (!written || done) {
    llvm::consumeError(std::move(done));
    llvm::consumeError(temp->discard());
    return;
  }
  llvm::CachePruningPolicy policy;
  policy.Interval = std::chrono::minutes(5);
  policy.Expiration = std::chrono::hours(24 * 7);
  policy.MaxSizeFiles = kMaxEntries;
  // By count, not size: the size limits ask the file system for its free space, and LLVM ends
  // the process when it cannot tell.
  policy.MaxSizePercentageOfAvailableSpace = 0;
  policy.MaxSizeBytes = 0;
  llvm::pruneCache(dir_, policy);
}

}  // namespace kiln::codegen::detail
