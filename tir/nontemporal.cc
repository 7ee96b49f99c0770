// Which stores under a loop annotated pragma_nontemporal stream (kiln/tir/nontemporal.h).
#include "kiln/tir/nontemporal.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

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

bool holds_streaming_store(const Stmt& s, const std::vector<const Var*>& streamed) {
  bool found = false;
  post_order_visit(s, [&](const Node* node) {
    found = found || (node->kind() == NodeKind::BufferStore &&
                      is_streaming_store(*static_cast<const BufferStore*>(node), streamed));
  });
  return found;
}

// The smallest statement under `s` (itself included) that holds every streaming store of `s`,
// and whether it leaves out some statement of `s`.
std::pair<const StmtNode*, bool> narrow(const Stmt& s, const std::vector<const Var*>& streamed) {
  const Stmt* body = nullptr;
  switch (s->kind()) {
    case NodeKind::SeqStmt: {
      const Stmt* holder = nullptr;
      for (const Stmt& item : static_cast<const SeqStmt*>(s.get())->seq) {
        if (!holds_streaming_store(item, streamed)) continue;
        if (holder != nullptr) return {s.get(), false};
        holder = &item;
      }
      if (holder == nullptr) return {s.get(), false};
      return {narrow(*holder, streamed).first, true};
    }
    case NodeKind::For:
      body = &static_cast<const For*>(s.get())->body;
      break;
    case NodeKind::LetStmt:
      body = &static_cast<const LetStmt*>(s.get())->body;
      break;
    case NodeKind::Allocate:
      body = &static_cast<const Allocate*>(s.get())->body;
      break;
    default:
      return {s.get(), false};
  }
  std::pair<const StmtNode*, bool> inner = narrow(*body, streamed);
  if (inner.second) return inner;
  return {s.get(), false};
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
      if (is_contiguous_vector(*store) &&
          std::find(stored.begin(), stored.end(), data) == stored.end()) {
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

const StmtNode* streaming_point(const For& loop, const std::vector<const Var*>& streamed) {
  auto [inner, left_out] = narrow(loop.body, streamed);
  return left_out ? inner : &loop;
}

}  // namespace kiln::tir
