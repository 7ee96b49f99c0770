// Overlapping arguments: a call behaves as if the kernel read every input before writing any
// output (kiln/runtime/c_runtime_api.h, "Overlapping arguments"). Read-only tensors that overlap
// a written one are copied for the call; written tensors that overlap each other are refused.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "arg_check.h"
#include "kiln/runtime/c_runtime_api.h"

namespace kiln {
namespace runtime {

// The arguments a kernel gets for one call: the caller's, or, when some were copied, new values
// whose copied tensors point at temporary buffers. The buffers are freed with this object, on
// success and on failure alike.
class CallArguments {
 public:
  explicit CallArguments(const KilnValue* args) : values_(args) {}
  ~CallArguments();
  CallArguments(const CallArguments&) = delete;
  CallArguments& operator=(const CallArguments&) = delete;

  const KilnValue* values() const { return values_; }

  // Replaces argument i (a tensor spanning `span`) by a copy with the same layout whose address
  // is congruent to the original's modulo `alignment`. Returns 0 or kKilnErrorRuntime.
  int copy_tensor(const KilnFuncSpec& spec, int32_t i, int32_t num_args, ByteSpan span,
                  int64_t alignment);

 private:
  const KilnValue* values_;
  std::vector<KilnValue> copied_values_;
  std::deque<DLTensor> tensors_;
  std::vector<void*> buffers_;
};

// Compares the spans (from check_arguments) of the tensors of a checked call. Two written
// tensors that overlap are refused with kKilnErrorValue naming both. When `out` is not NULL,
// every read-only tensor that overlaps a written one is copied into it (kKilnErrorRuntime when a
// copy cannot be allocated); when it is NULL, only the refusal is checked. Returns 0 when the
// call may go ahead. Costs one comparison per pair of tensors and allocates nothing when no
// written tensor overlaps another.
int resolve_overlaps(const KilnFuncSpec& spec, int32_t num_args, const ByteSpan* spans,
                     CallArguments* out);

}  // namespace runtime
}  // namespace kiln
