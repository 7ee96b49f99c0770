// Helpers of the buffer primitives (see buffer_util.h).
#include "buffer_util.h"

#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

class BufferReplacer : public IRMutator {
 public:
  explicit BufferReplacer(const BufferMap& buffers) : buffers_(buffers) {}
  using IRMutator::mutate;

 protected:
  Ref<Buffer> mutate_buffer(const Ref<Buffer>& buffer) override {
    auto it = buffers_.find(buffer.get());
    return it == buffers_.end() ? buffer : it->second;
  }

 private:
  const BufferMap& buffers_;
};

}  // namespace

bool is_valid_storage_scope(const std::string& scope) {
  return scope == "global" || is_shared_scope(scope) || scope == "local" || scope == "warp";
}

void check_storage_scope(const std::string& scope, const char* primitive, const Ref<PrimFunc>& func,
                         const Node* mark) {
  if (!is_valid_storage_scope(scope)) {
    schedule_error("InvalidStorageScopeError", primitive,
                   "storage scope '" + scope +
                       "' is not one of 'global', 'shared', 'shared.dyn', 'local', 'warp'",
                   func, mark);
  }
}

Ref<Buffer> nth_accessed_buffer(const Ref<PrimFunc>& func, const BlockLocation& location,
                                int64_t index, bool is_write, const char* primitive) {
  const std::vector<BufferRegion>& regions =
      is_write ? location.block->writes : location.block->reads;
  if (index < 0 || index >= static_cast<int64_t>(regions.size())) {
    std::string list;
    for (const BufferRegion& r : regions) list += (list.empty() ? "" : ", ") + r.buffer->name;
    schedule_error("BufferIndexOutOfRangeError", primitive,
                   std::string(is_write ? "write" : "read") + " buffer index " +
                       std::to_string(index) + " is out of range: block '" + location.block->name +
                       "' " + (is_write ? "writes " : "reads ") + std::to_string(regions.size()) +
                       " buffer(s)" + (list.empty() ? "" : " (" + list + ")"),
                   func, location.realize);
  }
  return regions[index].buffer;
}

bool is_param_buffer(const PrimFunc& func, const Buffer* buffer) {
  for (const auto& [param, b] : func.buffer_map) {
    if (b.get() == buffer) return true;
  }
  return false;
}

bool accesses(const std::vector<BufferRegion>& regions, const Buffer* buffer) {
  for (const BufferRegion& r : regions) {
    if (r.buffer.get() == buffer) return true;
  }
  return false;
}

Stmt replace_buffers(const Stmt& stmt, const BufferMap& buffers) {
  return BufferReplacer(buffers).mutate(stmt);
}

}  // namespace kiln::schedule
