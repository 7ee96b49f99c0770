// Loading IR from JSON, the nodes (kiln/ir/serialize.h): one function per node kind that reads
// the kind's fields, plus the checks of structure that later code relies on (a node of the right
// family in each field, a call's arity, one index per buffer dimension, iterators bound as many
// times as a block has them).
#include <optional>
#include <unordered_map>

#include "kiln/ir/op.h"
#include "kiln/ir/serialize.h"
#include "kiln/support/error.h"
#include "src/ir/serialize_reader.h"
#include "src/ir/serialize_text.h"

namespace kiln::ir::serialize {

namespace {

// Node kinds by their names; the names, not the enum's numbers, are what documents hold.
const std::unordered_map<std::string_view, NodeKind>& kinds_by_name() {
  static const auto* kinds = [] {
    auto* map = new std::unordered_map<std::string_view, NodeKind>();
#define KILN_KIND_BY_NAME(Name) map->emplace(#Name, NodeKind::Name);
    KILN_EXPR_NODE_LIST(KILN_KIND_BY_NAME)
    KILN_STMT_NODE_LIST(KILN_KIND_BY_NAME)
    KILN_OTHER_NODE_LIST(KILN_KIND_BY_NAME)
#undef KILN_KIND_BY_NAME
    return map;
  }();
  return *kinds;
}

const char* expected_text(Expect expect) {
  switch (expect) {
    case Expect::kAny:
      return "a node";
    case Expect::kExpr:
      return "an expression";
    case Expect::kStmt:
      return "a statement";
    case Expect::kBlock:
      return "a Block";
    case Expect::kCommReducer:
      return "a CommReducer";
    case Expect::kPrimFunc:
      return "a PrimFunc";
  }
  return "a node";
}

bool fits(NodeKind kind, Expect expect) {
  switch (expect) {
    case Expect::kAny:
      return true;
    case Expect::kExpr:
      return is_expr_kind(kind);
    case Expect::kStmt:
      return is_stmt_kind(kind);
    case Expect::kBlock:
      return kind == NodeKind::Block;
    case Expect::kCommReducer:
      return kind == NodeKind::CommReducer;
    case Expect::kPrimFunc:
      return kind == NodeKind::PrimFunc;
  }
  return false;
}

template <class T>
const T* tag() {
  return nullptr;
}

}  // namespace

// --- Nodes -------------------------------------------------------------------------------------

NodeKind Reader::node_kind(const Json& j, Expect expect) {
  auto it = j.is_string() ? kinds_by_name().find(j.text()) : kinds_by_name().end();
  if (it == kinds_by_name().end()) mismatch(j, "the name of a node kind, such as \"Add\"");
  if (!fits(it->second, expect)) {
    fail(std::string("expected ") + expected_text(expect) + ", found a " + kind_name(it->second));
  }
  return it->second;
}

void Reader::fail_not_node(const Json& j, Expect expect) const {
  mismatch(j, (std::string(expected_text(expect)) + " (an object with \"kind\")").c_str());
}

Ref<Node> Reader::node(const Json& j, Expect expect, bool nullable) {
  // This function recurses once per level of the tree: errors are built in functions of their
  // own so that its stack frame stays small.
  if (j.is_null() && nullable) return nullptr;
  if (!j.is_object()) fail_not_node(j, expect);
  if (depth_ >= kMaxSerializedDepth) fail_too_deep();
  Object o(this, j, "a node");
  NodeKind kind;
  {
    const Json& v = o.get("kind");
    At at(this, "kind");
    kind = node_kind(v, expect);
  }
  ++depth_;
  Ref<Node> result = node_fields(o, kind);
  --depth_;
  o.finish();
  return result;
}

void Reader::fail_too_deep() const {
  fail("the tree is nested deeper than " + std::to_string(kMaxSerializedDepth) + " nodes");
}

Expr Reader::expr(const Json& j, bool nullable) {
  return Expr(static_cast<ExprNode*>(node(j, Expect::kExpr, nullable).get()));
}

Stmt Reader::stmt(const Json& j, bool nullable) {
  return Stmt(static_cast<StmtNode*>(node(j, Expect::kStmt, nullable).get()));
}

std::vector<Expr> Reader::exprs(const Json& j) {
  array(j, "an array of expressions");
  std::vector<Expr> result;
  result.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    At at(this, i);
    result.push_back(expr(j[i]));
  }
  return result;
}

Range Reader::range(const Json& j) {
  if (!j.is_array() || j.size() != 2) mismatch(j, "a range [min, extent]");
  Range r;
  {
    At at(this, size_t{0});
    r.min = expr(j[0]);
  }
  At at(this, size_t{1});
  r.extent = expr(j[1]);
  return r;
}

std::vector<IterVar> Reader::iter_vars(const Json& j) {
  array(j, "an array of iterators");
  std::vector<IterVar> result(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    At at(this, i);
    Object o(this, j[i], "an iterator {\"var\", \"dom\", \"type\"}");
    result[i].var = field(o, "var", [&](const Json& v) { return var_ref(v); });
    result[i].dom = field(o, "dom", [&](const Json& v) { return range(v); });
    result[i].type = field(o, "type", [&](const Json& v) {
      return enumeration(v, &iter_type_name, static_cast<int>(IterType::kOpaque) + 1,
                         "an iterator type");
    });
    o.finish();
  }
  return result;
}

std::vector<BufferRegion> Reader::regions(const Json& j) {
  array(j, "an array of buffer regions");
  std::vector<BufferRegion> result(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    At at(this, i);
    Object o(this, j[i], "a buffer region {\"buffer\", \"region\"}");
    result[i].buffer = field(o, "buffer", [&](const Json& v) { return buffer_ref(v); });
    result[i].region = field(o, "region", [&](const Json& v) {
      array(v, "an array of ranges");
      std::vector<Range> ranges;
      ranges.reserve(v.size());
      for (size_t d = 0; d < v.size(); ++d) {
        At at_range(this, d);
        ranges.push_back(range(v[d]));
      }
      check_rank(*result[i].buffer, ranges.size(), "ranges");
      return ranges;
    });
    o.finish();
  }
  return result;
}

Attrs Reader::attrs(const Json& j) {
  array(j, "an array of [name, value] pairs");
  Attrs result;
  for (size_t i = 0; i < j.size(); ++i) {
    At at(this, i);
    const Json& pair = j[i];
    if (!pair.is_array() || pair.size() != 2) mismatch(pair, "a [name, value] pair");
    std::string name;
    {
      At at_name(this, size_t{0});
      name = text(pair[0]);
    }
    Expr value;
    {
      At at_value(this, size_t{1});
      value = expr(pair[1]);
    }
    if (!result.emplace(name, value).second) fail("the name " + quoted(name) + " appears twice");
  }
  return result;
}

std::vector<Ref<Var>> Reader::var_list(const Json& j) {
  array(j, "an array of variable indices");
  std::vector<Ref<Var>> result;
  result.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    At at(this, i);
    result.push_back(var_ref(j[i]));
  }
  return result;
}

// --- One function per kind ---------------------------------------------------------------------

namespace {

// Reads the fields of one kind of node; `dtype` is the expression's (unused by other kinds).
class NodeReader {
 public:
  NodeReader(Reader* r, Reader::Object* o, DataType dtype) : r_(r), o_(o), dtype_(dtype) {}

  Expr expr(const char* name, bool nullable = false) {
    return r_->field(*o_, name, [&](const Json& v) { return r_->expr(v, nullable); });
  }
  Stmt stmt(const char* name, bool nullable = false) {
    return r_->field(*o_, name, [&](const Json& v) { return r_->stmt(v, nullable); });
  }
  std::vector<Expr> exprs(const char* name) {
    return r_->field(*o_, name, [&](const Json& v) { return r_->exprs(v); });
  }
  Ref<Var> var(const char* name) {
    return r_->field(*o_, name, [&](const Json& v) { return r_->var_ref(v); });
  }
  Ref<Buffer> buffer(const char* name) {
    return r_->field(*o_, name, [&](const Json& v) { return r_->buffer_ref(v); });
  }
  std::string text(const char* name) {
    return r_->field(*o_, name, [&](const Json& v) { return r_->text(v); });
  }
  int64_t integer(const char* name, int64_t min, int64_t max) {
    return r_->field(*o_, name, [&](const Json& v) { return r_->integer(v, min, max); });
  }
  Attrs attrs(const char* name) {
    return r_->field(*o_, name, [&](const Json& v) { return r_->attrs(v); });
  }
  int lanes() { return static_cast<int>(integer("lanes", 1, 65535)); }
  // Checks an access's index count against its buffer, with the indices on the path.
  void check_rank(const Ref<Buffer>& buffer, const std::vector<Expr>& indices) {
    Reader::At at(r_, "indices");
    r_->check_rank(*buffer, indices.size(), "indices");
  }

  // --- Expressions ---------------------------------------------------------------------------

  Ref<Node> read(const IntImm*) {
    if (!(dtype_.is_integer() || dtype_.is_bool()) || !dtype_.is_scalar()) {
      Reader::At at(r_, "dtype");
      r_->fail("an IntImm has a scalar integer or bool dtype, found " + dtype_.str());
    }
    int64_t value = r_->field(*o_, "value", [&](const Json& v) -> int64_t {
      if (dtype_.is_uint() && dtype_.bits() == 64) {
        // Written as the unsigned number; kept as the int64 with the same bits.
        if (v.is_number_unsigned()) return static_cast<int64_t>(v.as_uint());
        r_->mismatch(v, "an integer in [0, 18446744073709551615] (the dtype is uint64)");
      }
      int64_t x = r_->integer(v, INT64_MIN, INT64_MAX);
      if (!fits_dtype(x, dtype_)) {
        r_->fail("the constant " + std::to_string(x) + " does not fit " + dtype_.str() +
                 " (its range is " + dtype_range(dtype_) + ")");
      }
      return x;
    });
    return make<IntImm>(dtype_, value);
  }
  Ref<Node> read(const FloatImm*) {
    if (!dtype_.is_float() || !dtype_.is_scalar()) {
      Reader::At at(r_, "dtype");
      r_->fail("a FloatImm has a scalar float dtype, found " + dtype_.str());
    }
    return make<FloatImm>(dtype_,
                          r_->field(*o_, "value", [&](const Json& v) { return r_->real(v); }));
  }
  Ref<Node> read(const StringImm*) {
    auto n = make<StringImm>(text("value"));
    n->dtype = dtype_;
    return n;
  }
  Ref<Node> read(const Var*) { return var("var"); }
  template <class T>
  Ref<Node> binary() {
    Expr a = expr("a");
    Expr b = expr("b");
    return make<T>(dtype_, std::move(a), std::move(b));
  }
  Ref<Node> read(const Add*) { return binary<Add>(); }
  Ref<Node> read(const Sub*) { return binary<Sub>(); }
  Ref<Node> read(const Mul*) { return binary<Mul>(); }
  Ref<Node> read(const Div*) { return binary<Div>(); }
  Ref<Node> read(const Mod*) { return binary<Mod>(); }
  Ref<Node> read(const FloorDiv*) { return binary<FloorDiv>(); }
  Ref<Node> read(const FloorMod*) { return binary<FloorMod>(); }
  Ref<Node> read(const Min*) { return binary<Min>(); }
  Ref<Node> read(const Max*) { return binary<Max>(); }
  Ref<Node> read(const EQ*) { return binary<EQ>(); }
  Ref<Node> read(const NE*) { return binary<NE>(); }
  Ref<Node> read(const LT*) { return binary<LT>(); }
  Ref<Node> read(const LE*) { return binary<LE>(); }
  Ref<Node> read(const GT*) { return binary<GT>(); }
  Ref<Node> read(const GE*) { return binary<GE>(); }
  Ref<Node> read(const And*) { return binary<And>(); }
  Ref<Node> read(const Or*) { return binary<Or>(); }
  Ref<Node> read(const Not*) { return make<Not>(dtype_, expr("a")); }
  Ref<Node> read(const Select*) {
    Expr condition = expr("condition");
    Expr true_value = expr("true_value");
    Expr false_value = expr("false_value");
    return make<Select>(dtype_, condition, true_value, false_value);
  }
  Ref<Node> read(const Cast*) { return make<Cast>(dtype_, expr("value")); }
  Ref<Node> read(const Call*) {
    Builtin op = r_->field(*o_, "op", [&](const Json& v) {
      std::optional<Builtin> found;
      if (v.is_string()) found = builtin_from_name(std::string(v.text()));
      if (!found) r_->mismatch(v, "the name of a builtin, such as \"exp\" (see builtin.h)");
      return *found;
    });
    std::vector<Expr> args = exprs("args");
    int arity = builtin_arity(op);
    if (arity >= 0 && static_cast<size_t>(arity) != args.size()) {
      Reader::At at(r_, "args");
      r_->fail(std::string(builtin_name(op)) + " takes " + std::to_string(arity) +
               (arity == 1 ? " argument" : " arguments") + ", found " +
               std::to_string(args.size()));
    }
    return make<Call>(dtype_, op, std::move(args));
  }
  Ref<Node> read(const Ramp*) {
    Expr base = expr("base");
    Expr stride = expr("stride");
    return make<Ramp>(dtype_, base, stride, lanes());
  }
  Ref<Node> read(const Broadcast*) {
    Expr value = expr("value");
    return make<Broadcast>(dtype_, value, lanes());
  }
  Ref<Node> read(const Let*) {
    Ref<Var> v = var("var");
    Expr value = expr("value");
    Expr body = expr("body");
    return make<Let>(dtype_, v, value, body);
  }
  Ref<Node> read(const BufferLoad*) {
    Ref<Buffer> b = buffer("buffer");
    std::vector<Expr> indices = exprs("indices");
    check_rank(b, indices);
    return make<BufferLoad>(dtype_, b, std::move(indices));
  }
  Ref<Node> read(const Reduce*) {
    auto n = make<Reduce>(dtype_);
    n->combiner = cast<CommReducer>(r_->field(
        *o_, "combiner", [&](const Json& v) { return r_->node(v, Expect::kCommReducer); }));
    n->source = exprs("source");
    n->axis = r_->field(*o_, "axis", [&](const Json& v) { return r_->iter_vars(v); });
    n->condition = expr("condition", true);
    n->value_index = static_cast<int>(integer("value_index", 0, INT32_MAX));
    n->init = exprs("init");
    size_t components = n->combiner->result.size();
    if (n->source.size() != components || (!n->init.empty() && n->init.size() != components)) {
      r_->fail("a Reduce over a combiner of " + std::to_string(components) + " components has " +
               std::to_string(n->source.size()) + " sources and " + std::to_string(n->init.size()) +
               " initial values");
    }
    if (static_cast<size_t>(n->value_index) >= components) {
      Reader::At at(r_, "value_index");
      r_->fail("component " + std::to_string(n->value_index) + " of a combiner of " +
               std::to_string(components) + " components");
    }
    return n;
  }

  // --- Statements ----------------------------------------------------------------------------

  Ref<Node> read(const LetStmt*) {
    Ref<Var> v = var("var");
    Expr value = expr("value");
    Stmt body = stmt("body");
    return make<LetStmt>(v, value, body);
  }
  Ref<Node> read(const AssertStmt*) {
    Expr condition = expr("condition");
    std::string message = text("message");
    Stmt body = stmt("body");
    return make<AssertStmt>(condition, std::move(message), body);
  }
  Ref<Node> read(const BufferStore*) {
    Ref<Buffer> b = buffer("buffer");
    Expr value = expr("value");
    std::vector<Expr> indices = exprs("indices");
    check_rank(b, indices);
    return make<BufferStore>(b, value, std::move(indices));
  }
  Ref<Node> read(const Allocate*) {
    Ref<Buffer> b = buffer("buffer");
    return make<Allocate>(b, stmt("body"));
  }
  Ref<Node> read(const For*) {
    Ref<Var> loop_var = var("loop_var");
    Expr min = expr("min");
    Expr extent = expr("extent");
    ForKind kind = r_->field(*o_, "for_kind", [&](const Json& v) {
      return r_->enumeration(v, &for_kind_name, static_cast<int>(ForKind::kThreadBinding) + 1,
                             "a loop kind");
    });
    auto n = make<For>(loop_var, min, extent, kind, nullptr);
    n->thread_tag = text("thread_tag");
    n->annotations = attrs("annotations");
    n->body = stmt("body");
    return n;
  }
  Ref<Node> read(const SeqStmt*) {
    std::vector<Stmt> seq = r_->field(*o_, "seq", [&](const Json& v) {
      r_->array(v, "an array of statements");
      std::vector<Stmt> items;
      items.reserve(v.size());
      for (size_t i = 0; i < v.size(); ++i) {
        Reader::At at(r_, i);
        items.push_back(r_->stmt(v[i]));
      }
      return items;
    });
    return make<SeqStmt>(std::move(seq));
  }
  Ref<Node> read(const IfThenElse*) {
    Expr condition = expr("condition");
    Stmt then_case = stmt("then_case");
    Stmt else_case = stmt("else_case", true);
    return make<IfThenElse>(condition, then_case, else_case);
  }
  Ref<Node> read(const Evaluate*) { return make<Evaluate>(expr("value")); }
  Ref<Node> read(const Block*) {
    auto n = make<Block>();
    n->name = text("name");
    n->iter_vars = r_->field(*o_, "iter_vars", [&](const Json& v) { return r_->iter_vars(v); });
    n->reads = r_->field(*o_, "reads", [&](const Json& v) { return r_->regions(v); });
    n->writes = r_->field(*o_, "writes", [&](const Json& v) { return r_->regions(v); });
    n->alloc_buffers = r_->field(*o_, "alloc_buffers", [&](const Json& v) {
      r_->array(v, "an array of buffer indices");
      std::vector<Ref<Buffer>> buffers;
      for (size_t i = 0; i < v.size(); ++i) {
        Reader::At at(r_, i);
        buffers.push_back(r_->buffer_ref(v[i]));
      }
      return buffers;
    });
    n->init = stmt("init", true);
    n->body = stmt("body");
    n->annotations = attrs("annotations");
    return n;
  }
  Ref<Node> read(const BlockRealize*) {
    std::vector<Expr> iter_values = exprs("iter_values");
    Expr predicate = expr("predicate");
    auto block = cast<Block>(
        r_->field(*o_, "block", [&](const Json& v) { return r_->node(v, Expect::kBlock); }));
    if (iter_values.size() != block->iter_vars.size()) {
      Reader::At at(r_, "iter_values");
      r_->fail(std::to_string(iter_values.size()) + " values for the " +
               std::to_string(block->iter_vars.size()) + " iterators of block " +
               quoted(block->name));
    }
    return make<BlockRealize>(std::move(iter_values), predicate, block);
  }

  // --- Other nodes ---------------------------------------------------------------------------

  Ref<Node> read(const Buffer*) { return buffer("buffer"); }
  Ref<Node> read(const CommReducer*) {
    auto n = make<CommReducer>();
    n->lhs = r_->field(*o_, "lhs", [&](const Json& v) { return r_->var_list(v); });
    n->rhs = r_->field(*o_, "rhs", [&](const Json& v) { return r_->var_list(v); });
    n->result = exprs("result");
    n->identity = exprs("identity");
    size_t k = n->lhs.size();
    if (n->rhs.size() != k || n->result.size() != k || n->identity.size() != k) {
      r_->fail("a CommReducer has as many lhs, rhs, result and identity entries; found " +
               std::to_string(k) + ", " + std::to_string(n->rhs.size()) + ", " +
               std::to_string(n->result.size()) + " and " + std::to_string(n->identity.size()));
    }
    return n;
  }
  Ref<Node> read(const PrimFunc*) {
    auto n = make<PrimFunc>();
    n->params = r_->field(*o_, "params", [&](const Json& v) { return r_->var_list(v); });
    n->buffer_map = r_->field(*o_, "buffer_map", [&](const Json& v) {
      r_->array(v, "an array of [param, buffer] pairs");
      std::vector<std::pair<Ref<Var>, Ref<Buffer>>> map;
      for (size_t i = 0; i < v.size(); ++i) {
        Reader::At at(r_, i);
        if (!v[i].is_array() || v[i].size() != 2) r_->mismatch(v[i], "a [param, buffer] pair");
        Ref<Var> param;
        {
          Reader::At at_param(r_, size_t{0});
          param = r_->var_ref(v[i][0]);
          bool listed = false;
          for (const Ref<Var>& p : n->params) listed = listed || p == param;
          if (!listed) r_->fail("variable " + quoted(param->name) + " is not a parameter");
        }
        Reader::At at_buffer(r_, size_t{1});
        map.emplace_back(param, r_->buffer_ref(v[i][1]));
      }
      return map;
    });
    n->attrs = attrs("attrs");
    n->body = stmt("body");
    return n;
  }
  Ref<Node> read(const IRModule*) {
    auto n = make<IRModule>();
    r_->field(*o_, "functions", [&](const Json& v) {
      r_->array(v, "an array of [name, PrimFunc] pairs");
      for (size_t i = 0; i < v.size(); ++i) {
        Reader::At at(r_, i);
        if (!v[i].is_array() || v[i].size() != 2) r_->mismatch(v[i], "a [name, PrimFunc] pair");
        std::string name;
        {
          Reader::At at_name(r_, size_t{0});
          name = r_->text(v[i][0]);
        }
        Reader::At at_func(r_, size_t{1});
        auto func = cast<PrimFunc>(r_->node(v[i][1], Expect::kPrimFunc));
        if (!n->functions.emplace(name, func).second) {
          r_->fail("a second function named " + quoted(name));
        }
      }
      return 0;
    });
    return n;
  }

 private:
  Reader* r_;
  Reader::Object* o_;
  DataType dtype_;
};

// One function per kind, kept out of node_fields so that the recursion's frames hold only the
// kind being read.
template <class T>
[[gnu::noinline]] Ref<Node> read_kind(NodeReader& reader) {
  return reader.read(tag<T>());
}

}  // namespace

Ref<Node> Reader::node_fields(Object& o, NodeKind kind) {
  DataType t;
  if (is_expr_kind(kind) && kind != NodeKind::Var) {
    t = field(o, "dtype", [&](const Json& v) { return dtype(v); });
  }
  NodeReader reader(this, &o, t);
  switch (kind) {
#define KILN_READ_DISPATCH(Name) \
  case NodeKind::Name:           \
    return read_kind<Name>(reader);
    KILN_EXPR_NODE_LIST(KILN_READ_DISPATCH)
    KILN_STMT_NODE_LIST(KILN_READ_DISPATCH)
    KILN_OTHER_NODE_LIST(KILN_READ_DISPATCH)
#undef KILN_READ_DISPATCH
  }
  fail("unknown node kind");
}

}  // namespace kiln::ir::serialize
