// Structural hashing (kiln/ir/structural.h): the shared walk of structural_walk.h run over one
// tree against itself, mixing every field into a 64-bit state with fixed, portable arithmetic.
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "kiln/ir/structural.h"
#include "src/ir/structural_walk.h"

namespace kiln::ir {

namespace {

using structural::Binding;

// The splitmix64 finalizer: a bijection of 64-bit words with good avalanche.
uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// FNV-1a over the bytes, then the length, so that strings hash the same on every platform.
uint64_t hash_string(const char* data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < size; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 0x100000001b3ULL;
  }
  return splitmix64(h ^ static_cast<uint64_t>(size));
}

// Tags that separate the cases of a variable or buffer use; arbitrary fixed constants.
constexpr uint64_t kBoundTag = 0x626f756e64ULL;  // "bound"
constexpr uint64_t kDefineTag = 0x646566ULL;     // "def"
constexpr uint64_t kFreeTag = 0x66726565ULL;     // "free"

// Mixes the left side of every comparison; the walk hands it a tree paired with itself, so
// every comparison holds.
class HashHandler {
 public:
  bool kind(NodeKind a, NodeKind) {
    const char* name = kind_name(a);
    mix(hash_string(name, std::strlen(name)));
    return true;
  }
  bool symbol(const char* a, const char*) {
    mix(hash_string(a, std::strlen(a)));
    return true;
  }
  bool dtype(DataType a, DataType) {
    mix((static_cast<uint64_t>(a.code()) << 32) | (static_cast<uint64_t>(a.bits()) << 16) |
        static_cast<uint64_t>(a.lanes()));
    return true;
  }
  bool integer(int64_t a, int64_t) {
    mix(static_cast<uint64_t>(a));
    return true;
  }
  // Every NaN is the same constant for equality, so it hashes as the canonical quiet NaN.
  bool real(double a, double) {
    uint64_t bits = 0x7ff8000000000000ULL;
    if (!std::isnan(a)) std::memcpy(&bits, &a, sizeof(a));
    mix(bits);
    return true;
  }
  bool text(const std::string& a, const std::string&) {
    mix(hash_string(a.data(), a.size()));
    return true;
  }

  Binding lookup(const Node* a, const Node*) {
    auto it = index_.find(a);
    if (it == index_.end()) return Binding::kUnbound;
    mix(kBoundTag);
    mix(it->second);
    return Binding::kBound;
  }
  void bind(const Node* a, const Node*) {
    index_[a] = next_index_++;
    mix(kDefineTag);
  }
  bool same_free(const Node*, const Node*) {
    mix(kFreeTag);
    return true;
  }
  void fail(const Node*, const Node*, const char*, const char*) {}
  void path(const char*, int, const std::string*) {}

  uint64_t value() const { return state_; }

 private:
  void mix(uint64_t v) { state_ = splitmix64(state_ ^ v); }

  uint64_t state_ = 0x6b696c6e2d697231ULL;  // "kiln-ir1"
  std::unordered_map<const Node*, uint64_t> index_;
  uint64_t next_index_ = 0;
};

}  // namespace

uint64_t structural_hash(const Ref<Node>& node, bool map_free_vars) {
  HashHandler handler;
  structural::Walker<HashHandler>(&handler, map_free_vars).node(node.get(), node.get());
  return handler.value();
}

uint64_t stable_string_hash(const std::string& text) {
  return hash_string(text.data(), text.size());
}

}  // namespace kiln::ir
