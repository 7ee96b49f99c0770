// Memory for compiled code: aligned buffers, and the workspace pool that serves kernels'
// temporaries. Each thread caches freed workspace chunks in size classes (four per power of two)
// and hands them out again, so a kernel called in a loop allocates from the system only once.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "dtype.h"
#include "error.h"
#include "kiln/runtime/c_runtime_api.h"

namespace kiln {
namespace runtime {
namespace {

constexpr size_t kWorkspaceAlignment = 64;
// Every chunk starts with a header of one alignment unit, placed before the pointer returned.
constexpr size_t kHeaderBytes = kWorkspaceAlignment;
constexpr uint64_t kChunkMagic = 0x6b696c6e77737063ull;
// Classes up to 2^47 bytes: 64, 128, 192, 256, then four steps per power of two.
constexpr int kNumClasses = 4 + 4 * (47 - 8);
// A thread keeps at most this many bytes of freed chunks; more go back to the system.
constexpr uint64_t kMaxCachedBytesPerThread = uint64_t{256} << 20;

struct ChunkHeader {
  uint64_t magic;
  uint64_t size;  // usable bytes (the class size)
  int32_t size_class;
  ChunkHeader* next;  // free-list link while cached
};
static_assert(sizeof(ChunkHeader) <= kHeaderBytes, "chunk header must fit its slot");

int bit_width(uint64_t x) {
  return x == 0 ? 0 : 64 - __builtin_clzll(x);
}

// Rounds nbytes up to its size class; returns the class index, or -1 when too large.
int size_class_of(uint64_t nbytes, uint64_t* class_bytes) {
  if (nbytes <= 256) {
    uint64_t rounded = nbytes == 0 ? 64 : (nbytes + 63) / 64 * 64;
    *class_bytes = rounded;
    return static_cast<int>(rounded / 64) - 1;
  }
  int k = bit_width(nbytes - 1);  // 2^(k-1) < nbytes <= 2^k, k >= 9
  if (k > 47) return -1;
  uint64_t step = uint64_t{1} << (k - 3);
  uint64_t rounded = (nbytes + step - 1) / step * step;
  *class_bytes = rounded;
  uint64_t base = uint64_t{1} << (k - 1);
  return 4 + (k - 9) * 4 + static_cast<int>((rounded - base) / step) - 1;
}

// The free lists of one thread; chunks still cached when the thread exits are released.
struct ThreadCache {
  ChunkHeader* free_lists[kNumClasses] = {};
  uint64_t cached_bytes = 0;

  ~ThreadCache() {
    for (ChunkHeader*& head : free_lists) {
      while (head != nullptr) {
        ChunkHeader* next = head->next;
        std::free(head);
        head = next;
      }
    }
  }
};

ThreadCache& thread_cache() {
  thread_local ThreadCache cache;
  return cache;
}

void* workspace_alloc(uint64_t nbytes) {
  uint64_t class_bytes = 0;
  int size_class = size_class_of(nbytes, &class_bytes);
  if (size_class < 0) {
    fail(kKilnErrorRuntime,
         "KilnBackendAllocWorkspace: " + std::to_string(nbytes) + " bytes is too large");
    return nullptr;
  }
  ThreadCache& cache = thread_cache();
  ChunkHeader* chunk = cache.free_lists[size_class];
  if (chunk != nullptr) {
    cache.free_lists[size_class] = chunk->next;
    cache.cached_bytes -= chunk->size;
  } else {
    void* memory = nullptr;
    if (posix_memalign(&memory, kWorkspaceAlignment, kHeaderBytes + class_bytes) != 0) {
      fail(kKilnErrorRuntime, "KilnBackendAllocWorkspace: out of memory allocating " +
                                  std::to_string(nbytes) + " bytes");
      return nullptr;
    }
    chunk = static_cast<ChunkHeader*>(memory);
    chunk->size = class_bytes;
    chunk->size_class = size_class;
  }
  chunk->magic = kChunkMagic;
  chunk->next = nullptr;
  return reinterpret_cast<char*>(chunk) + kHeaderBytes;
}

int workspace_free(void* ptr) {
  if (ptr == nullptr) return fail(kKilnErrorValue, "KilnBackendFreeWorkspace: pointer is NULL");
  if (reinterpret_cast<uintptr_t>(ptr) % kWorkspaceAlignment != 0) {
    return fail(kKilnErrorValue,
                "KilnBackendFreeWorkspace: " + format_pointer(ptr) + " is not a workspace chunk");
  }
  ChunkHeader* chunk = reinterpret_cast<ChunkHeader*>(static_cast<char*>(ptr) - kHeaderBytes);
  if (chunk->magic != kChunkMagic) {
    return fail(kKilnErrorValue, "KilnBackendFreeWorkspace: " + format_pointer(ptr) +
                                     " is not a live workspace chunk (freed twice, or not from "
                                     "KilnBackendAllocWorkspace)");
  }
  chunk->magic = 0;
  ThreadCache& cache = thread_cache();
  if (cache.cached_bytes + chunk->size > kMaxCachedBytesPerThread) {
    std::free(chunk);
    return 0;
  }
  chunk->next = cache.free_lists[chunk->size_class];
  cache.free_lists[chunk->size_class] = chunk;
  cache.cached_bytes += chunk->size;
  return 0;
}

int check_workspace_device(const char* api, int32_t device_type, int32_t device_id) {
  if (device_type == kDLCPU) return 0;
  return fail(kKilnErrorValue, std::string(api) + ": device " + device_type_name(device_type) +
                                   ":" + std::to_string(device_id) +
                                   " is not supported by this runtime (cpu only)");
}

}  // namespace
}  // namespace runtime
}  // namespace kiln

extern "C" {

void* KilnBackendAllocWorkspace(int32_t device_type, int32_t device_id, uint64_t nbytes,
                                int32_t dtype_code_hint, int32_t dtype_bits_hint) {
  using namespace kiln::runtime;
  if (check_workspace_device("KilnBackendAllocWorkspace", device_type, device_id) != 0) {
    return nullptr;
  }
  return workspace_alloc(nbytes);
}

int32_t KilnBackendFreeWorkspace(int32_t device_type, int32_t device_id, void* ptr) {
  using namespace kiln::runtime;
  int32_t status = check_workspace_device("KilnBackendFreeWorkspace", device_type, device_id);
  if (status != 0) return status;
  return workspace_free(ptr);
}

void* KilnAllocAligned(size_t nbytes, size_t alignment) {
  using namespace kiln::runtime;
  if (alignment == 0) alignment = 64;
  if ((alignment & (alignment - 1)) != 0) {
    fail(kKilnErrorValue,
         "KilnAllocAligned: alignment " + std::to_string(alignment) + " is not a power of two");
    return nullptr;
  }
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  void* memory = nullptr;
  if (posix_memalign(&memory, alignment, nbytes == 0 ? 1 : nbytes) != 0) {
    fail(kKilnErrorRuntime,
         "KilnAllocAligned: out of memory allocating " + std::to_string(nbytes) + " bytes");
    return nullptr;
  }
  return memory;
}

void KilnFreeAligned(void* ptr) {
  std::free(ptr);
}

}  // extern "C"
