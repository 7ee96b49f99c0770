// A model of GPU shared-memory banks, by which the postprocessor pad_shared_tiles pads the rows
// of a staged tile. Shared memory has 32 banks of 4-byte words; in one wavefront each bank
// serves one word (threads that read the same word share it), so a warp's request takes as many
// wavefronts as the most distinct words it asks of one bank. Requests of 8 or 16 bytes per
// thread are served a half or a quarter of the warp at a time.
//
// A thread's scalar reads of consecutive elements (a loop along a tile's row) become one vector
// read (ld.shared.v2/v4) where the CUDA or OpenCL compiler unrolls the loop and can tell that
// the elements are aligned; whether it unrolls depends on its own limits, so the model takes
// either reading as given (SharedReads): the reads merged where a row is aligned, or every read
// scalar. NVRTC's PTX of the GPU space's tiled candidates has mostly vector reads of the operand
// tiles, at any unroll depth the tuner draws; a padding that keeps rows aligned keeps them, an
// odd one turns them into scalar reads.
//
// The model reads a function after compact_buffer_allocation (blocks still there, each staged
// tile at its own shape) and evaluates each access of the buffer for the threads of the first
// warp, every other loop at its first iteration: the threads' part of an address decides the
// banks; the rest of it is the same for all of them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/ir/function.h"

namespace kiln::autotune {

constexpr int kSharedBanks = 32;
constexpr int kSharedBankBytes = 4;

// The wavefronts of one request of a warp: thread t moves the `per_thread` elements
// elements[t * per_thread .. (t + 1) * per_thread) (indices of `element_bytes`-byte elements of a
// shared array). A request of more than 4 bytes per thread is served in phases of 128 bytes.
double request_wavefronts(const std::vector<int64_t>& elements, int per_thread, int element_bytes);

// A padded stride, as schedule::storage_align takes it: dimension `axis` gets a stride s with
// s % factor == offset, `pad` elements more than its compact stride.
struct SharedPadding {
  int64_t axis = 0;
  int64_t factor = 1;
  int64_t offset = 0;
  int64_t pad = 0;
};

// How a thread's scalar reads along a row are taken (see above).
enum class SharedReads {
  kVector,  // merged into reads of up to 16 bytes where the first element is aligned to them
  kScalar,  // one request each
};

// What a layout of the buffer costs its accesses in one execution of the threads' loops.
struct SharedCost {
  double wavefronts = 0;
  double requests = 0;  // load and store instructions of a warp
};

class SharedBankModel {
 public:
  // The accesses of the shared buffer named `buffer` in `compacted`, for warps of `warp_size`
  // threads. valid() is false when no such buffer of constant shape and at least two
  // dimensions is allocated there, or when some index of an access is not integer arithmetic of
  // loop and block variables (a gather, a symbolic size).
  SharedBankModel(const ir::PrimFunc& compacted, const std::string& buffer, int warp_size);
  ~SharedBankModel();
  SharedBankModel(const SharedBankModel&) = delete;
  SharedBankModel& operator=(const SharedBankModel&) = delete;

  bool valid() const;
  const std::vector<int64_t>& shape() const;
  // The compact (row-major) strides of shape(), and those with `padding` applied.
  std::vector<int64_t> strides(const std::optional<SharedPadding>& padding = std::nullopt) const;
  // The cost of the accesses with the buffer laid out with `strides` (elements).
  SharedCost cost(const std::vector<int64_t>& strides, SharedReads reads) const;
  // The padding of one dimension (less than a row of banks) that takes the fewest wavefronts,
  // then the fewest instructions, then the fewest padded elements; std::nullopt where the
  // compact layout costs no more. Paddings keep the alignment of every vector access, and for
  // SharedReads::kVector rows aligned to 16 bytes.
  std::optional<SharedPadding> best_padding(SharedReads reads) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::autotune
