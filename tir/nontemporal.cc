// Which stores under a loop annotated pragma_nontemporal stream (kiln/tir/nontemporal.h).
#include "kiln/tir/nontemporal.h"

#include <algorithm>
#include <unordered_set>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"

namespace kiln::tir {

using namespace ir;

namespace {

bool is_contiguous_vector(const BufferStore& store) {
  if (store.value->dtype.lanes() < 2 || store.indices.size() != 1) return false;
  const auto* ramp = store.indices[0].as<Ramp>();
  return ramp != nullptr && is_const_int(ramp->stride, 1);
}

bool annotated(const For& loop) {
  auto it = loop.annotations.find(kNontemporalAnnotation);
  if (it == loop.annotations.end()) return false;
  const int64_t* value = as_const_int(it->second);
  return value != nullptr && *value != 0;
}

}  // namespace

std::vector<const Var*> streamed_buffers(const For& loop,
                                         const std::function<bool(const Var*)>& is_allocated) {
  std::vector<const Var*> stored;
  std::unordered_set<const Var*> read;
  if (!annotated(loop)) return stored;
  post_order_visit(loop.body, [&](const Node* node) {
    if (node->kind() == NodeKind::BufferLoad) {
      read.insert(static_cast<const BufferLoad*>(node)->buffer->data.get());
    } else if (node->kind() == NodeKind::BufferStore) {
      const auto* store = static_cast<const BufferStore*>(node);
      const Var* data = store->buffer->data.get();
      if (is_contiguous_vector(*store) && std::find(stored.begin(), stored.end(), data) ==
                                              stored.end()) {
        stored.push_back(data);
      }
    }
  });
  std::vector<const Var*> streamed;
  for (const Var* data : stored) {
    if (read.count(data) == 0 && !is_allocated(data)) streamed.push_back(data);
  }
  return streamed;
}

bool is_streaming_store(const BufferStore& store, const std::vector<const Var*>& streamed) {
  return is_contiguous_vector(store) &&
         std::find(streamed.begin(), streamed.end(), store.buffer->data.get()) != streamed.end();
}

}  // namespace kiln::tir
