// The one traversal behind structural equality and structural hashing (kiln/ir/structural.h).
// It walks two trees in lockstep, field by field, in a fixed order; a handler decides what a
// field means. Equality compares the two sides; the hash walks a tree against itself and mixes
// the left side into its state. Sharing the walk is what makes "equal implies same hash" hold.
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/function.h"

namespace kiln::ir::structural {

// What a handler knows about a variable or buffer pair met at a use site.
enum class Binding {
  kBound,     // both were defined (or matched) together
  kUnbound,   // neither has been defined
  kMismatch,  // one is bound to something else
};

// The handler H provides:
//   bool kind(NodeKind a, NodeKind b);
//   bool symbol(const char* a, const char* b);    // an enum value by its name
//   bool dtype(DataType a, DataType b);
//   bool integer(int64_t a, int64_t b);
//   bool real(double a, double b);
//   bool text(const std::string& a, const std::string& b);
//   Binding lookup(const Node* a, const Node* b);  // a variable or buffer at a use site
//   void bind(const Node* a, const Node* b);       // a definition
//   bool same_free(const Node* a, const Node* b);  // a free variable or buffer, strict mode
//   void fail(const Node* a, const Node* b, const char* field, const char* what);
//   void path(const char* field, int index, const std::string* key);  // outermost last
// The comparisons return false on a difference; the walker then calls fail() once for the
// innermost nodes and path() for each enclosing field while it unwinds.
template <class H>
class Walker {
 public:
  Walker(H* handler, bool map_free_vars) : h_(handler), map_free_vars_(map_free_vars) {}

  // Any node, or null.
  bool node(const Node* a, const Node* b) {
    if (!h_->integer(a == nullptr, b == nullptr)) {
      h_->fail(a, b, nullptr, "one side is null");
      return false;
    }
    if (a == nullptr) return true;
    if (!h_->kind(a->kind(), b->kind())) {
      h_->fail(a, b, "kind", "differs");
      return false;
    }
    if (is_expr_kind(a->kind())) {
      const auto* ea = static_cast<const ExprNode*>(a);
      const auto* eb = static_cast<const ExprNode*>(b);
      if (!h_->dtype(ea->dtype, eb->dtype)) {
        h_->fail(a, b, "dtype", "differs");
        return false;
      }
    }
    switch (a->kind()) {
#define KILN_WALK_DISPATCH(Name) \
  case NodeKind::Name:           \
    return fields(static_cast<const Name*>(a), static_cast<const Name*>(b));
      KILN_EXPR_NODE_LIST(KILN_WALK_DISPATCH)
      KILN_STMT_NODE_LIST(KILN_WALK_DISPATCH)
      KILN_OTHER_NODE_LIST(KILN_WALK_DISPATCH)
#undef KILN_WALK_DISPATCH
    }
    return true;
  }

 private:
  // Adds the field to the failure path while unwinding.
  bool at(bool ok, const char* field, int index = -1, const std::string* key = nullptr) {
    if (!ok) h_->path(field, index, key);
    return ok;
  }

  template <class T>
  bool child(const char* field, const Ref<T>& a, const Ref<T>& b, int index = -1) {
    return at(node(a.get(), b.get()), field, index);
  }

  bool integer(const char* field, int64_t x, int64_t y, const Node* a, const Node* b) {
    if (h_->integer(x, y)) return true;
    h_->fail(a, b, field, "differs");
    return false;
  }
  bool text(const char* field, const std::string& x, const std::string& y, const Node* a,
            const Node* b) {
    if (h_->text(x, y)) return true;
    h_->fail(a, b, field, "differs");
    return false;
  }
  bool symbol(const char* field, const char* x, const char* y, const Node* a, const Node* b) {
    if (h_->symbol(x, y)) return true;
    h_->fail(a, b, field, "differs");
    return false;
  }
  bool length(const char* field, size_t x, size_t y, const Node* a, const Node* b) {
    if (h_->integer(static_cast<int64_t>(x), static_cast<int64_t>(y))) return true;
    h_->fail(a, b, field, "differ in length");
    return false;
  }

  template <class T>
  bool children(const char* field, const std::vector<Ref<T>>& x, const std::vector<Ref<T>>& y,
                const Node* a, const Node* b) {
    if (!length(field, x.size(), y.size(), a, b)) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!child(field, x[i], y[i], static_cast<int>(i))) return false;
    }
    return true;
  }

  bool range(const Range& x, const Range& y) {
    return child("min", x.min, y.min) && child("extent", x.extent, y.extent);
  }

  bool attrs(const char* field, const Attrs& x, const Attrs& y, const Node* a, const Node* b) {
    if (!length(field, x.size(), y.size(), a, b)) return false;
    for (auto ix = x.begin(), iy = y.begin(); ix != x.end(); ++ix, ++iy) {
      if (!text(field, ix->first, iy->first, a, b)) return false;
      if (!at(node(ix->second.get(), iy->second.get()), field, -1, &ix->first)) return false;
    }
    return true;
  }

  // --- Variables and buffers -----------------------------------------------------------------

  bool define_var(const Var* a, const Var* b) {
    if (!h_->dtype(a->dtype, b->dtype)) {
      h_->fail(a, b, "dtype", "differs");
      return false;
    }
    if (!integer("is_size_var", a->is_size_var, b->is_size_var, a, b)) return false;
    h_->bind(a, b);
    return true;
  }

  // A variable at its definition site.
  bool def_var(const char* field, const Ref<Var>& a, const Ref<Var>& b, int index = -1) {
    bool ok;
    if (!h_->integer(a == nullptr, b == nullptr)) {
      h_->fail(a.get(), b.get(), nullptr, "one side is null");
      ok = false;
    } else {
      ok = a == nullptr || define_var(a.get(), b.get());
    }
    return at(ok, field, index);
  }

  bool use_var(const Var* a, const Var* b) {
    switch (h_->lookup(a, b)) {
      case Binding::kBound:
        return true;
      case Binding::kMismatch:
        h_->fail(a, b, nullptr, "variables do not correspond (each is bound to another)");
        return false;
      case Binding::kUnbound:
        break;
    }
    if (map_free_vars_ || define_on_first_use_) return define_var(a, b);
    if (!integer("is_size_var", a->is_size_var, b->is_size_var, a, b)) return false;
    if (h_->same_free(a, b)) return true;
    h_->fail(a, b, nullptr,
             "free variables are different objects (map_free_vars=True matches them)");
    return false;
  }

  // A buffer's fields, then the binding of the pair. `define_shape_vars`: variables first seen
  // in the shape, strides or offset are defined there (buffers of a function's buffer_map).
  bool define_buffer(const Buffer* a, const Buffer* b, bool define_shape_vars) {
    if (!h_->dtype(a->dtype, b->dtype)) {
      h_->fail(a, b, "dtype", "differs");
      return false;
    }
    if (!text("scope", a->scope, b->scope, a, b)) return false;
    if (!integer("data_alignment", a->data_alignment, b->data_alignment, a, b)) return false;
    if (!integer("offset_factor", a->offset_factor, b->offset_factor, a, b)) return false;
    bool outer = define_on_first_use_;
    define_on_first_use_ = outer || define_shape_vars;
    bool ok = children("shape", a->shape, b->shape, a, b) &&
              children("strides", a->strides, b->strides, a, b) &&
              child("elem_offset", a->elem_offset, b->elem_offset);
    define_on_first_use_ = outer;
    if (!ok || !def_var("data", a->data, b->data)) return false;
    h_->bind(a, b);
    return true;
  }

  bool def_buffer(const char* field, const Ref<Buffer>& a, const Ref<Buffer>& b, int index = -1,
                  bool define_shape_vars = false) {
    bool ok;
    if (!h_->integer(a == nullptr, b == nullptr)) {
      h_->fail(a.get(), b.get(), nullptr, "one side is null");
      ok = false;
    } else {
      ok = a == nullptr || define_buffer(a.get(), b.get(), define_shape_vars);
    }
    return at(ok, field, index);
  }

  bool use_buffer(const char* field, const Ref<Buffer>& ra, const Ref<Buffer>& rb) {
    const Buffer* a = ra.get();
    const Buffer* b = rb.get();
    if (!h_->integer(a == nullptr, b == nullptr)) {
      h_->fail(a, b, nullptr, "one side is null");
      return at(false, field);
    }
    if (a == nullptr) return true;
    switch (h_->lookup(a, b)) {
      case Binding::kBound:
        return true;
      case Binding::kMismatch:
        h_->fail(a, b, nullptr, "buffers do not correspond (each is bound to another)");
        return at(false, field);
      case Binding::kUnbound:
        break;
    }
    if (map_free_vars_) return at(define_buffer(a, b, false), field);
    bool ok =
        h_->dtype(a->dtype, b->dtype) && h_->integer(a->ndim(), b->ndim()) && h_->same_free(a, b);
    if (!ok) {
      h_->fail(a, b, nullptr,
               "free buffers are different objects (map_free_vars=True matches them)");
    }
    return at(ok, field);
  }

  bool regions(const char* field, const std::vector<BufferRegion>& x,
               const std::vector<BufferRegion>& y, const Node* a, const Node* b) {
    if (!length(field, x.size(), y.size(), a, b)) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      int index = static_cast<int>(i);
      if (!at(use_buffer("buffer", x[i].buffer, y[i].buffer), field, index)) return false;
      if (!at(length("region", x[i].region.size(), y[i].region.size(), a, b), field, index)) {
        return false;
      }
      for (size_t d = 0; d < x[i].region.size(); ++d) {
        bool ok = at(range(x[i].region[d], y[i].region[d]), "region", static_cast<int>(d));
        if (!at(ok, field, index)) return false;
      }
    }
    return true;
  }

  // Iterators: the domain (outside the iterator's scope), the type, then the definition.
  bool iter_vars(const char* field, const std::vector<IterVar>& x, const std::vector<IterVar>& y,
                 const Node* a, const Node* b) {
    if (!length(field, x.size(), y.size(), a, b)) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      int index = static_cast<int>(i);
      bool ok = at(range(x[i].dom, y[i].dom), "dom") &&
                symbol("iter_type", iter_type_name(x[i].type), iter_type_name(y[i].type), a, b) &&
                def_var("var", x[i].var, y[i].var);
      if (!at(ok, field, index)) return false;
    }
    return true;
  }

  // --- Expressions ---------------------------------------------------------------------------

  bool fields(const IntImm* a, const IntImm* b) {
    return integer("value", a->value, b->value, a, b);
  }
  bool fields(const FloatImm* a, const FloatImm* b) {
    if (h_->real(a->value, b->value)) return true;
    h_->fail(a, b, "value", "differs");
    return false;
  }
  bool fields(const StringImm* a, const StringImm* b) {
    return text("value", a->value, b->value, a, b);
  }
  bool fields(const Var* a, const Var* b) {
    return use_var(a, b);
  }

  bool binary(const BinaryNode* a, const BinaryNode* b) {
    return child("a", a->a, b->a) && child("b", a->b, b->b);
  }
#define KILN_WALK_BINARY(Name)                \
  bool fields(const Name* a, const Name* b) { \
    return binary(a, b);                      \
  }
  KILN_WALK_BINARY(Add)
  KILN_WALK_BINARY(Sub)
  KILN_WALK_BINARY(Mul)
  KILN_WALK_BINARY(Div)
  KILN_WALK_BINARY(Mod)
  KILN_WALK_BINARY(FloorDiv)
  KILN_WALK_BINARY(FloorMod)
  KILN_WALK_BINARY(Min)
  KILN_WALK_BINARY(Max)
  KILN_WALK_BINARY(EQ)
  KILN_WALK_BINARY(NE)
  KILN_WALK_BINARY(LT)
  KILN_WALK_BINARY(LE)
  KILN_WALK_BINARY(GT)
  KILN_WALK_BINARY(GE)
  KILN_WALK_BINARY(And)
  KILN_WALK_BINARY(Or)
#undef KILN_WALK_BINARY

  bool fields(const Not* a, const Not* b) {
    return child("a", a->a, b->a);
  }
  bool fields(const Select* a, const Select* b) {
    return child("condition", a->condition, b->condition) &&
           child("true_value", a->true_value, b->true_value) &&
           child("false_value", a->false_value, b->false_value);
  }
  bool fields(const Cast* a, const Cast* b) {
    return child("value", a->value, b->value);
  }
  bool fields(const Call* a, const Call* b) {
    return symbol("op", builtin_name(a->op), builtin_name(b->op), a, b) &&
           children("args", a->args, b->args, a, b);
  }
  bool fields(const Ramp* a, const Ramp* b) {
    return child("base", a->base, b->base) && child("stride", a->stride, b->stride) &&
           integer("lanes", a->lanes, b->lanes, a, b);
  }
  bool fields(const Broadcast* a, const Broadcast* b) {
    return child("value", a->value, b->value) && integer("lanes", a->lanes, b->lanes, a, b);
  }
  bool fields(const Let* a, const Let* b) {
    return child("value", a->value, b->value) && def_var("var", a->var, b->var) &&
           child("body", a->body, b->body);
  }
  bool fields(const BufferLoad* a, const BufferLoad* b) {
    return use_buffer("buffer", a->buffer, b->buffer) &&
           children("indices", a->indices, b->indices, a, b);
  }
  bool fields(const Reduce* a, const Reduce* b) {
    return child("combiner", a->combiner, b->combiner) &&
           iter_vars("axis", a->axis, b->axis, a, b) &&
           children("source", a->source, b->source, a, b) &&
           child("condition", a->condition, b->condition) &&
           integer("value_index", a->value_index, b->value_index, a, b) &&
           children("init", a->init, b->init, a, b);
  }

  // --- Statements ----------------------------------------------------------------------------

  bool fields(const LetStmt* a, const LetStmt* b) {
    return child("value", a->value, b->value) && def_var("var", a->var, b->var) &&
           child("body", a->body, b->body);
  }
  bool fields(const AssertStmt* a, const AssertStmt* b) {
    return child("condition", a->condition, b->condition) &&
           text("message", a->message, b->message, a, b) && child("body", a->body, b->body);
  }
  bool fields(const BufferStore* a, const BufferStore* b) {
    return use_buffer("buffer", a->buffer, b->buffer) && child("value", a->value, b->value) &&
           children("indices", a->indices, b->indices, a, b);
  }
  bool fields(const Allocate* a, const Allocate* b) {
    return def_buffer("buffer", a->buffer, b->buffer) && child("body", a->body, b->body);
  }
  bool fields(const For* a, const For* b) {
    return child("min", a->min, b->min) && child("extent", a->extent, b->extent) &&
           def_var("loop_var", a->loop_var, b->loop_var) &&
           symbol("kind", for_kind_name(a->kind), for_kind_name(b->kind), a, b) &&
           text("thread_tag", a->thread_tag, b->thread_tag, a, b) &&
           attrs("annotations", a->annotations, b->annotations, a, b) &&
           child("body", a->body, b->body);
  }
  bool fields(const SeqStmt* a, const SeqStmt* b) {
    return children("seq", a->seq, b->seq, a, b);
  }
  bool fields(const IfThenElse* a, const IfThenElse* b) {
    return child("condition", a->condition, b->condition) &&
           child("then_case", a->then_case, b->then_case) &&
           child("else_case", a->else_case, b->else_case);
  }
  bool fields(const Evaluate* a, const Evaluate* b) {
    return child("value", a->value, b->value);
  }
  bool fields(const Block* a, const Block* b) {
    if (!text("name", a->name, b->name, a, b)) return false;
    if (!iter_vars("iter_vars", a->iter_vars, b->iter_vars, a, b)) return false;
    if (!length("alloc_buffers", a->alloc_buffers.size(), b->alloc_buffers.size(), a, b)) {
      return false;
    }
    for (size_t i = 0; i < a->alloc_buffers.size(); ++i) {
      if (!def_buffer("alloc_buffers", a->alloc_buffers[i], b->alloc_buffers[i],
                      static_cast<int>(i))) {
        return false;
      }
    }
    return regions("reads", a->reads, b->reads, a, b) &&
           regions("writes", a->writes, b->writes, a, b) &&
           attrs("annotations", a->annotations, b->annotations, a, b) &&
           child("init", a->init, b->init) && child("body", a->body, b->body);
  }
  bool fields(const BlockRealize* a, const BlockRealize* b) {
    return children("iter_values", a->iter_values, b->iter_values, a, b) &&
           child("predicate", a->predicate, b->predicate) && child("block", a->block, b->block);
  }

  // --- Other nodes ---------------------------------------------------------------------------

  bool fields(const Buffer* a, const Buffer* b) {
    return define_buffer(a, b, false);
  }
  bool fields(const CommReducer* a, const CommReducer* b) {
    if (!length("lhs", a->lhs.size(), b->lhs.size(), a, b)) return false;
    if (!length("rhs", a->rhs.size(), b->rhs.size(), a, b)) return false;
    for (size_t i = 0; i < a->lhs.size(); ++i) {
      if (!def_var("lhs", a->lhs[i], b->lhs[i], static_cast<int>(i))) return false;
    }
    for (size_t i = 0; i < a->rhs.size(); ++i) {
      if (!def_var("rhs", a->rhs[i], b->rhs[i], static_cast<int>(i))) return false;
    }
    return children("result", a->result, b->result, a, b) &&
           children("identity", a->identity, b->identity, a, b);
  }
  bool fields(const PrimFunc* a, const PrimFunc* b) {
    if (!length("params", a->params.size(), b->params.size(), a, b)) return false;
    for (size_t i = 0; i < a->params.size(); ++i) {
      if (!def_var("params", a->params[i], b->params[i], static_cast<int>(i))) return false;
    }
    if (!length("buffer_map", a->buffer_map.size(), b->buffer_map.size(), a, b)) return false;
    for (size_t i = 0; i < a->buffer_map.size(); ++i) {
      int index = static_cast<int>(i);
      const auto& [va, ba] = a->buffer_map[i];
      const auto& [vb, bb] = b->buffer_map[i];
      bool ok = child("param", va, vb) && def_buffer("buffer", ba, bb, -1, true);
      if (!at(ok, "buffer_map", index)) return false;
    }
    return attrs("attrs", a->attrs, b->attrs, a, b) && child("body", a->body, b->body);
  }
  bool fields(const IRModule* a, const IRModule* b) {
    if (!length("functions", a->functions.size(), b->functions.size(), a, b)) return false;
    for (auto ia = a->functions.begin(), ib = b->functions.begin(); ia != a->functions.end();
         ++ia, ++ib) {
      if (!text("functions", ia->first, ib->first, a, b)) return false;
      if (!at(node(ia->second.get(), ib->second.get()), "functions", -1, &ia->first)) {
        return false;
      }
    }
    return true;
  }

  H* h_;
  bool map_free_vars_;
  bool define_on_first_use_ = false;
};

}  // namespace kiln::ir::structural
