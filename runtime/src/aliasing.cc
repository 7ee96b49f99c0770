// Overlap checks and copies of the arguments of one call; see aliasing.h.
#include "aliasing.h"

#include <cstring>
#include <string>

#include "error.h"

namespace kiln {
namespace runtime {
namespace {

bool overlaps(ByteSpan a, ByteSpan b) {
  return a.begin < a.end && b.begin < b.end && a.begin < b.end && b.begin < a.end;
}

bool is_written(const KilnArgSpec& arg) {
  return arg.kind == kKilnArgTensor && arg.written != 0;
}

}  // namespace

CallArguments::~CallArguments() {
  for (void* buffer : buffers_) KilnFreeAligned(buffer);
}

int CallArguments::copy_tensor(const KilnFuncSpec& spec, int32_t i, int32_t num_args, ByteSpan span,
                               int64_t alignment) {
  if (copied_values_.empty()) {
    copied_values_.assign(values_, values_ + num_args);
    values_ = copied_values_.data();
  }
  const DLTensor& original = *static_cast<const DLTensor*>(copied_values_[i].v_handle);
  // Step 1. A buffer that holds the span at the same address modulo the alignment, so that the
  // copy meets the alignment the original met.
  uintptr_t modulus = static_cast<uintptr_t>(alignment < 64 ? 64 : alignment);
  size_t nbytes = span.end - span.begin;
  void* buffer = nbytes + modulus < nbytes ? nullptr : KilnAllocAligned(nbytes + modulus, modulus);
  if (buffer == nullptr) {
    return fail(kKilnErrorRuntime,
                std::string(spec.name) + ": argument " + spec.args[i].name +
                    " overlaps a tensor the function writes, and a copy of its " +
                    std::to_string(nbytes) + " bytes cannot be allocated");
  }
  buffers_.push_back(buffer);
  char* begin = static_cast<char*>(buffer) + span.begin % modulus;
  // Step 2. Copy the whole span: the kernel indexes the copy with the original's strides.
  std::memcpy(begin, reinterpret_cast<const void*>(span.begin), nbytes);
  // Step 3. The same tensor, moved to the copy.
  uintptr_t address = reinterpret_cast<uintptr_t>(original.data) + original.byte_offset;
  DLTensor& copy = tensors_.emplace_back(original);
  copy.data = begin + (address - span.begin);
  copy.byte_offset = 0;
  copied_values_[i].v_handle = &copy;
  return 0;
}

int resolve_overlaps(const KilnFuncSpec& spec, int32_t num_args, const ByteSpan* spans,
                     CallArguments* out) {
  for (int32_t i = 0; i < num_args; ++i) {
    if (!is_written(spec.args[i])) continue;
    for (int32_t j = i + 1; j < num_args; ++j) {
      if (!is_written(spec.args[j]) || !overlaps(spans[i], spans[j])) continue;
      return fail(kKilnErrorValue,
                  std::string(spec.name) + ": arguments " + spec.args[i].name + " and " +
                      spec.args[j].name +
                      " overlap in memory and the function writes both; pass separate arrays "
                      "(the result would depend on the order of the writes)");
    }
  }
  if (out == nullptr) return 0;
  for (int32_t i = 0; i < num_args; ++i) {
    const KilnArgSpec& arg = spec.args[i];
    if (arg.kind != kKilnArgTensor || is_written(arg)) continue;
    for (int32_t j = 0; j < num_args; ++j) {
      if (!is_written(spec.args[j]) || !overlaps(spans[i], spans[j])) continue;
      int status = out->copy_tensor(spec, i, num_args, spans[i], arg.alignment);
      if (status != 0) return status;
      break;
    }
  }
  return 0;
}

}  // namespace runtime
}  // namespace kiln
