// unroll_loops: copies the bodies of loops marked for unrolling, within step and size limits
// that loop annotations can change.
#include "kiln/tir/unroll_loops.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "tir/pass_util.h"
#include "tir/renew_definitions.h"

namespace kiln::tir {

using namespace ir;

namespace {

constexpr int64_t kDefaultMaxStep = 64;
// The most IR nodes that the copies of one loop's body may add up to.
constexpr int64_t kMaxUnrolledNodes = 4096;

constexpr const char* kAutoMaxStep = "pragma_auto_unroll_max_step";
constexpr const char* kExplicit = "pragma_unroll_explicit";
constexpr const char* kLlvmUnroll = "pragma_llvm_unroll";

// What the enclosing annotations ask for.
struct Settings {
  int64_t max_step = kDefaultMaxStep;
  bool automatic = false;   // serial loops are unrolled too (rule 2)
  bool copy = true;         // copy bodies, or only mark loops kUnrolled
  bool llvm_unroll = true;  // LLVM may unroll and vectorize the loops that stay loops
};

// The most stores to memory (buffers other than "local" ones, which become registers; a vector
// store counts one per kLanesPerStep lanes, as it becomes that many machine stores) that
// automatic unrolling (rule 2) may leave in one loop body: LLVM's loop access analysis (for its
// loop vectorizer and load elimination) and its instruction schedulers compare pairs of them,
// so a body of hundreds (a packing copy unrolled 256 times; 64 copies of a 64-lane partial sum
// kept in memory, 512 stores, two seconds) takes seconds to build and runs no faster.
constexpr int64_t kMaxAutoUnrolledStores = 64;
constexpr int64_t kLanesPerStep = 8;

// The registers a vector of `lanes` lanes takes, as unrolling counts them (at least one).
int64_t registers_of(int lanes) {
  return std::max<int64_t>(1, (lanes + kLanesPerStep - 1) / kLanesPerStep);
}

int64_t count_memory_stores(const Stmt& s) {
  int64_t n = 0;
  post_order_visit(s, [&n](const Node* node) {
    if (node->kind() != NodeKind::BufferStore) return;
    const auto* store = static_cast<const BufferStore*>(node);
    if (store->buffer->scope == "local") return;
    n += registers_of(store->value->dtype.lanes());
  });
  return n;
}

int64_t count_nodes(const Stmt& s) {
  int64_t n = 0;
  post_order_visit(s, [&n](const Node*) { ++n; });
  return n;
}

// The steps of one statement: one per kLanesPerStep lanes of the value it stores (a vector
// statement becomes an instruction per register of lanes, and LLVM's build time grows with
// the instructions of the straight-line code unrolling makes), kStepsPerMathCall more per
// transcendental call (exp, tanh, ...: code generators expand each into a polynomial of some
// twenty instructions, so unrolling a loop of them saves nothing worth its build: 64 copies of
// a 64-lane exp took LLVM two seconds to compile), and one more per lane of a gather, a vector
// load whose lanes are not consecutive (each lane is a load of its own: 64 copies of a
// statement reading two 64-lane columns of a 4096-column matrix took LLVM four seconds).
constexpr int64_t kStepsPerMathCall = 8;

// Whether a load's index reads consecutive lanes (a scalar index of a vector element, a ramp of
// stride 1, or a broadcast).
bool consecutive(const Expr& index) {
  if (index->dtype.lanes() == 1) return true;
  if (const auto* ramp = index.as<Ramp>()) return is_const_int(ramp->stride, 1);
  return index.is<Broadcast>();
}

int64_t statement_steps(const Stmt& s) {
  int lanes = 1;
  if (const auto* store = s.as<BufferStore>()) lanes = store->value->dtype.lanes();
  int64_t math_calls = 0, gathered_lanes = 0;
  post_order_visit(s, [&](const Node* node) {
    if (node->kind() == NodeKind::Call &&
        builtin_is_transcendental(static_cast<const Call*>(node)->op)) {
      ++math_calls;
    }
    if (node->kind() == NodeKind::BufferLoad) {
      const auto* load = static_cast<const BufferLoad*>(node);
      if (load->dtype.lanes() > 1 && !load->indices.empty() && !consecutive(load->indices.back())) {
        gathered_lanes += load->dtype.lanes();
      }
    }
  });
  return registers_of(lanes) * (1 + kStepsPerMathCall * math_calls) + gathered_lanes;
}

// How many steps (statements: stores and evaluations, statement_steps each) `s` runs once its
// unrolled loops are unrolled, or -1 when it holds another loop: what rule 2 counts.
int64_t count_steps(const Stmt& s) {
  switch (s->kind()) {
    case NodeKind::For: {
      const auto* loop = s.as<For>();
      const int64_t* extent = as_const_int(loop->extent);
      int64_t body = count_steps(loop->body);
      if (loop->kind != ForKind::kUnrolled || extent == nullptr || body < 0) return -1;
      return *extent * body;
    }
    case NodeKind::SeqStmt: {
      int64_t total = 0;
      for (const Stmt& part : s.as<SeqStmt>()->seq) {
        int64_t n = count_steps(part);
        if (n < 0) return -1;
        total += n;
      }
      return total;
    }
    case NodeKind::IfThenElse: {
      const auto* branch = s.as<IfThenElse>();
      int64_t then_steps = count_steps(branch->then_case);
      int64_t else_steps = branch->else_case.defined() ? count_steps(branch->else_case) : 0;
      return then_steps < 0 || else_steps < 0 ? -1 : then_steps + else_steps;
    }
    case NodeKind::LetStmt:
      return count_steps(s.as<LetStmt>()->body);
    case NodeKind::AssertStmt:
      return count_steps(s.as<AssertStmt>()->body);
    case NodeKind::Allocate:
      return count_steps(s.as<Allocate>()->body);
    default:
      return statement_steps(s);
  }
}

class LoopUnroller : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const For* op) override {
    Settings saved = settings_;
    auto loop = copy(op);
    bool annotated = take_settings(loop.get());
    Settings here = settings_;
    Stmt body = mutate(op->body);
    settings_ = saved;
    loop->body = body;

    const int64_t* extent = as_const_int(op->extent);
    bool marked = op->kind == ForKind::kUnrolled;
    int64_t body_steps = count_steps(body);
    bool automatic = here.automatic && op->kind == ForKind::kSerial && extent != nullptr &&
                     body_steps >= 0 && *extent * body_steps <= here.max_step &&
                     *extent * count_memory_stores(body) <= kMaxAutoUnrolledStores;
    bool copies = (marked || automatic) && extent != nullptr && *extent <= here.max_step &&
                  *extent * count_nodes(body) <= kMaxUnrolledNodes && here.copy;
    if (!copies) {
      if (automatic) loop->kind = ForKind::kUnrolled;
      if (!here.llvm_unroll &&
          (loop->kind == ForKind::kSerial || loop->kind == ForKind::kParallel)) {
        loop->annotations[kLlvmLoopFixedAnnotation] = make_const(DataType::int32(), 1);
        return loop;
      }
      if (!annotated && body.same_as(op->body) && loop->kind == op->kind) return op;
      return loop;
    }
    std::vector<Stmt> bodies;
    for (int64_t k = 0; k < *extent; ++k) {
      Expr value = add(op->min, make_const(op->loop_var->dtype, k));
      Stmt s = substitute(body, {{op->loop_var.get(), value}});
      bodies.push_back(k == 0 ? s : renew_definitions(s));
    }
    return seq(std::move(bodies));
  }

 private:
  // Reads and removes the annotations of `loop`; returns whether it had one.
  bool take_settings(For* loop) {
    bool found = false;
    if (std::optional<int64_t> value = take_integer(loop, kAutoMaxStep, &found)) {
      settings_.max_step = *value;
      settings_.automatic = *value > 0;
    }
    if (std::optional<int64_t> value = take_integer(loop, kLlvmUnroll, &found)) {
      settings_.llvm_unroll = *value != 0;
    }
    if (std::optional<int64_t> value = take_integer(loop, kExplicit, &found)) {
      settings_.copy = *value != 0;
    }
    return found;
  }

  // The integer value of annotation `key` of `loop`, removed from it (*found set), or nothing
  // when the loop has none.
  static std::optional<int64_t> take_integer(For* loop, const char* key, bool* found) {
    auto it = loop->annotations.find(key);
    if (it == loop->annotations.end()) return std::nullopt;
    const int64_t* value = as_const_int(it->second);
    user_check(value != nullptr) << "unroll_loops: annotation " << key << " of loop "
                                 << loop->loop_var->name << " must be an integer constant";
    int64_t result = *value;
    loop->annotations.erase(it);
    *found = true;
    return result;
  }

  Settings settings_;
};

}  // namespace

Ref<PrimFunc> unroll_loops(const Ref<PrimFunc>& func) {
  return with_body(func, LoopUnroller().mutate(func->body));
}

}  // namespace kiln::tir
