// Buffer storage: set_scope, storage_align.
#include "kiln/schedule/buffer_scope.h"

#include <algorithm>

#include "buffer_util.h"
#include "instruction_registry.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/storage_align.h"
#include "schedule_util.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// Throws FunctionParamBufferError when `buffer` is a parameter of the function.
void check_allocated(const Ref<PrimFunc>& func, const BlockLocation& loc, const Buffer* buffer,
                     const char* primitive) {
  if (is_param_buffer(*func, buffer)) {
    schedule_error("FunctionParamBufferError", primitive,
                   "buffer " + buffer->name + " (written by block '" + loc.block->name +
                       "') is a parameter of the function; only buffers allocated inside the "
                       "function can be changed",
                   func, loc.realize);
  }
}

// The function with every use of `old_buffer` naming `new_buffer`.
Ref<PrimFunc> with_buffer(const Ref<PrimFunc>& func, const Buffer* old_buffer,
                          const Ref<Buffer>& new_buffer) {
  return with_body(func, replace_buffers(func->body, BufferMap{{old_buffer, new_buffer}}));
}

}  // namespace

void set_scope(Schedule& sch, const RV& block_rv, int64_t buffer_index,
               const std::string& storage_scope) {
  const char* primitive = "set_scope";
  // Step 1. Resolve the buffer, check the scope and that the buffer is allocated in the function.
  const std::string& func_name = sch.func_name(block_rv);
  Ref<PrimFunc> func = sch.func(func_name);
  const BlockLocation& loc = sch.block(block_rv, primitive);
  Ref<Buffer> buffer = nth_accessed_buffer(func, loc, buffer_index, /*is_write=*/true, primitive);
  check_storage_scope(storage_scope, primitive, func, loc.realize);
  check_allocated(func, loc, buffer.get(), primitive);
  // Step 2. Declare the buffer in the new scope; every use names the new declaration.
  auto scoped = copy(buffer.get());
  scoped->scope = storage_scope;
  // Step 3. Replace and record.
  sch.replace(func_name, with_buffer(func, buffer.get(), scoped), primitive);
  sch.record(Instruction{primitive,
                         Json::array({block_rv.name()}),
                         {{"buffer_index", buffer_index}, {"storage_scope", storage_scope}},
                         {},
                         Json()});
}

void storage_align(Schedule& sch, const RV& block_rv, int64_t buffer_index, int64_t axis,
                   int64_t factor, int64_t offset) {
  const char* primitive = "storage_align";
  // Step 1. Resolve the buffer and check that it is allocated in the function.
  const std::string& func_name = sch.func_name(block_rv);
  Ref<PrimFunc> func = sch.func(func_name);
  const BlockLocation& loc = sch.block(block_rv, primitive);
  Ref<Buffer> buffer = nth_accessed_buffer(func, loc, buffer_index, /*is_write=*/true, primitive);
  check_allocated(func, loc, buffer.get(), primitive);
  // Step 2. Check the axis, factor and offset.
  const int64_t ndim = buffer->ndim();
  const std::string args = "(axis=" + std::to_string(axis) + ", factor=" + std::to_string(factor) +
                           ", offset=" + std::to_string(offset) + ")";
  if (axis < -ndim || axis >= ndim) {
    schedule_error("InvalidStorageAlignError", primitive,
                   "axis " + std::to_string(axis) + " is out of range for buffer " + buffer->name +
                       " of " + std::to_string(ndim) + " dimension(s) " + args,
                   func, loc.realize);
  }
  if (factor <= 0 || offset < 0 || offset >= factor) {
    schedule_error("InvalidStorageAlignError", primitive,
                   "expected factor > 0 and 0 <= offset < factor for buffer " + buffer->name +
                       ", found " + args,
                   func, loc.realize);
  }
  // Step 3. Record the alignment on the block; compaction applies it to the final shape.
  const int64_t dim = axis < 0 ? axis + ndim : axis;
  std::vector<StorageAlign> entries;
  auto it = loc.block->annotations.find(kStorageAlignAnnotation);
  if (it != loc.block->annotations.end()) entries = parse_storage_align(it->second);
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [&](const StorageAlign& e) {
                                 return e.buffer_index == buffer_index && e.axis == dim;
                               }),
                entries.end());
  entries.push_back(StorageAlign{buffer_index, dim, factor, offset});
  auto block = copy(loc.block);
  block->annotations[kStorageAlignAnnotation] = make<StringImm>(format_storage_align(entries));
  // Step 4. Replace and record.
  sch.replace(func_name, with_body(func, replace_stmt(func->body, loc.block, block)), primitive);
  sch.record(Instruction{
      primitive,
      Json::array({block_rv.name()}),
      {{"buffer_index", buffer_index}, {"axis", axis}, {"factor", factor}, {"offset", offset}},
      {},
      Json()});
}

void register_buffer_scope_instructions(std::vector<InstructionKind>* kinds) {
  kinds->push_back({"set_scope",
                    {"block"},
                    false,
                    [](Schedule& sch, const Json& in, const Json& attrs, const Json&) {
                      set_scope(sch, rv_from_json(in.at(0), "set_scope"),
                                attrs.at("buffer_index").get<int64_t>(),
                                attrs.at("storage_scope").get<std::string>());
                      return std::vector<RV>{};
                    }});
  kinds->push_back({"storage_align",
                    {"block"},
                    false,
                    [](Schedule& sch, const Json& in, const Json& attrs, const Json&) {
                      storage_align(
                          sch, rv_from_json(in.at(0), "storage_align"),
                          attrs.at("buffer_index").get<int64_t>(), attrs.at("axis").get<int64_t>(),
                          attrs.at("factor").get<int64_t>(), attrs.at("offset").get<int64_t>());
                      return std::vector<RV>{};
                    }});
}

}  // namespace kiln::schedule
