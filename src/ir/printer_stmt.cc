// Printing of statements, blocks, functions and modules as TVMScript-like Python text: perfectly
// nested serial loops fold into T.grid, block iterators bound to their loops fold into
// T.axis.remap, and a function's implicit root block is shown as a comment.
#include "kiln/ir/structural.h"
#include "src/ir/script_printer.h"

namespace kiln::ir::script {

namespace {

// A loop that T.grid can fold: serial from zero, nothing attached.
bool grid_foldable(const For* loop) {
  return loop->kind == ForKind::kSerial && is_const_int(loop->min, 0) &&
         loop->annotations.empty() && loop->thread_tag.empty();
}

// The root block that create_prim_func puts around a function body, printed as a comment.
bool is_implicit_root(const BlockRealize* realize) {
  const Block* b = realize->block.get();
  return b != nullptr && b->name == "root" && realize->iter_values.empty() &&
         (!realize->predicate.defined() || is_const_int(realize->predicate, 1)) &&
         b->iter_vars.empty() && b->reads.empty() && b->writes.empty() && !b->init.defined() &&
         b->annotations.empty();
}

// Variables a function uses without defining them, in order of first use.
class FreeVarCollector : public IRVisitor {
 public:
  std::vector<const Var*> collect(const PrimFunc& f) {
    for (const Ref<Var>& p : f.params) defined_.insert(p.get());
    for (const auto& [param, buffer] : f.buffer_map) {
      defined_.insert(buffer->data.get());
      visit_buffer(buffer.get());
    }
    visit_stmt(f.body);
    std::vector<const Var*> free;
    for (const Var* v : uses_) {
      if (defined_.count(v) == 0) free.push_back(v);
    }
    return free;
  }

 protected:
  using IRVisitor::visit;
  void visit(const Var* op) override {
    if (seen_.insert(op).second) uses_.push_back(op);
  }
  void visit(const Let* op) override {
    defined_.insert(op->var.get());
    IRVisitor::visit(op);
  }
  void visit(const Reduce* op) override {
    for (const IterVar& iv : op->axis) defined_.insert(iv.var.get());
    IRVisitor::visit(op);
  }
  void visit(const LetStmt* op) override {
    defined_.insert(op->var.get());
    IRVisitor::visit(op);
  }
  void visit(const Allocate* op) override {
    defined_.insert(op->buffer->data.get());
    IRVisitor::visit(op);
  }
  void visit(const For* op) override {
    defined_.insert(op->loop_var.get());
    IRVisitor::visit(op);
  }
  void visit(const Block* op) override {
    for (const IterVar& iv : op->iter_vars) defined_.insert(iv.var.get());
    for (const Ref<Buffer>& b : op->alloc_buffers) defined_.insert(b->data.get());
    IRVisitor::visit(op);
  }

 private:
  std::vector<const Var*> uses_;
  std::unordered_set<const Var*> seen_;
  std::unordered_set<const Var*> defined_;
};

}  // namespace

void ScriptPrinter::stmt(const Stmt& s) {
  if (!s.defined()) return;
  if (is_marked(s.get())) pending_mark_ = true;
  switch (s->kind()) {
#define KILN_PRINT_DISPATCH(Name) \
  case NodeKind::Name:            \
    return print_stmt(static_cast<const Name*>(s.get()));
    KILN_STMT_NODE_LIST(KILN_PRINT_DISPATCH)
#undef KILN_PRINT_DISPATCH
    default:
      line(std::string("# ") + kind_name(s->kind()));
  }
}

// An indented body; Python needs at least one line.
void ScriptPrinter::body(const Stmt& s) {
  ++indent_;
  if (s.defined()) {
    stmt(s);
  } else {
    line("pass");
  }
  --indent_;
}

void ScriptPrinter::print_stmt(const LetStmt* op) {
  std::string value = expr(op->value);
  line("with T.LetStmt(" + value + ") as " + name(op->var.get()) + ":");
  body(op->body);
}

void ScriptPrinter::print_stmt(const AssertStmt* op) {
  line("with T.Assert(" + expr(op->condition) + ", " + quote(op->message) + "):");
  body(op->body);
}

void ScriptPrinter::print_stmt(const BufferStore* op) {
  line(name(op->buffer.get()) + indices(op->indices) + " = " + expr(op->value));
}

void ScriptPrinter::print_stmt(const Allocate* op) {
  const Buffer* buffer = op->buffer.get();
  if (is_marked(buffer)) pending_mark_ = true;
  declare(buffer);
  line("with T.allocate(" + buffer_args(buffer) + ") as " + name(buffer) + ":");
  body(op->body);
}

std::string ScriptPrinter::loop_header(const For* op) {
  std::string range = range_args(Range{op->min, op->extent});
  std::string keywords = op->annotations.empty() ? "" : ", annotations=" + dict(op->annotations);
  switch (op->kind) {
    case ForKind::kSerial:
      if (keywords.empty()) return "range(" + range + ")";
      return "T.serial(" + range + keywords + ")";
    case ForKind::kParallel:
      return "T.parallel(" + range + keywords + ")";
    case ForKind::kVectorized:
      return "T.vectorized(" + range + keywords + ")";
    case ForKind::kUnrolled:
      return "T.unroll(" + range + keywords + ")";
    case ForKind::kThreadBinding:
      return "T.thread_binding(" + range + ", thread=" + quote(op->thread_tag) + keywords + ")";
  }
  return "range(" + range + ")";
}

void ScriptPrinter::print_stmt(const For* op) {
  // Fold perfectly nested serial loops whose extents do not depend on each other into T.grid.
  std::vector<const For*> chain{op};
  if (grid_foldable(op)) {
    while (const For* inner = chain.back()->body.as<For>()) {
      bool depends = uses_var(inner->extent, [&](const Var* v) {
        for (const For* outer : chain) {
          if (outer->loop_var.get() == v) return true;
        }
        return false;
      });
      if (!grid_foldable(inner) || depends) break;
      chain.push_back(inner);
    }
  }
  if (chain.size() == 1) {
    line("for " + name(op->loop_var.get()) + " in " + loop_header(op) + ":");
  } else {
    std::string vars, extents;
    for (const For* loop : chain) {
      if (is_marked(loop)) pending_mark_ = true;
      vars += (vars.empty() ? "" : ", ") + name(loop->loop_var.get());
    }
    for (const For* loop : chain) extents += (extents.empty() ? "" : ", ") + expr(loop->extent);
    line("for " + vars + " in T.grid(" + extents + "):");
  }
  loops_.insert(loops_.end(), chain.begin(), chain.end());
  body(chain.back()->body);
  loops_.resize(loops_.size() - chain.size());
}

void ScriptPrinter::print_stmt(const SeqStmt* op) {
  for (const Stmt& s : op->seq) stmt(s);
}

void ScriptPrinter::print_stmt(const IfThenElse* op) {
  line("if " + expr(op->condition) + ":");
  body(op->then_case);
  if (op->else_case.defined()) {
    line("else:");
    body(op->else_case);
  }
}

void ScriptPrinter::print_stmt(const Evaluate* op) {
  line("T.evaluate(" + expr(op->value) + ")");
}

void ScriptPrinter::print_stmt(const Block* op) {
  block(nullptr, op);
}

void ScriptPrinter::print_stmt(const BlockRealize* op) {
  block(op, op->block.get());
}

std::string ScriptPrinter::regions(const std::vector<BufferRegion>& regions) {
  std::string out;
  for (const BufferRegion& r : regions) {
    if (!out.empty()) out += ", ";
    out += name(r.buffer.get());
    if (r.region.empty()) {
      out += "[()]";
      continue;
    }
    out += "[";
    for (size_t d = 0; d < r.region.size(); ++d) {
      if (d > 0) out += ", ";
      const Range& range = r.region[d];
      out += expr(range.min);
      if (!is_const_int(range.extent, 1)) out += ":" + range_end(range);
    }
    out += "]";
  }
  return out;
}

void ScriptPrinter::alloc_buffer(const Buffer* buffer) {
  if (is_marked(buffer)) pending_mark_ = true;
  declare(buffer);
  line(name(buffer) + " = T.alloc_buffer(" + buffer_args(buffer) + ")");
}

// Iterators bound to a loop variable of an enclosing loop with the same domain print together
// as `vi, vk = T.axis.remap("SR", [i, k])`, on the line of the first of them; the others as
// `vi = T.axis.spatial(extent, value)`.
void ScriptPrinter::block_iter_vars(const BlockRealize* realize, const Block* op) {
  size_t n = op->iter_vars.size();
  std::vector<bool> remap(n, false);
  std::unordered_set<const Var*> bound_loops;
  for (size_t i = 0; realize != nullptr && i < n && i < realize->iter_values.size(); ++i) {
    const IterVar& iv = op->iter_vars[i];
    const auto* loop_var = realize->iter_values[i].as<Var>();
    if (loop_var == nullptr || bound_loops.count(loop_var) > 0) continue;
    if (iv.type != IterType::kDataPar && iv.type != IterType::kCommReduce) continue;
    if (iv.var->dtype != loop_var->dtype) continue;
    for (const For* loop : loops_) {
      if (loop->loop_var.get() == loop_var && structural_equal(loop->min, iv.dom.min) &&
          structural_equal(loop->extent, iv.dom.extent)) {
        remap[i] = true;
        bound_loops.insert(loop_var);
        break;
      }
    }
  }
  bool remap_printed = false;
  for (size_t i = 0; i < n; ++i) {
    const IterVar& iv = op->iter_vars[i];
    if (remap[i]) {
      if (remap_printed) continue;
      remap_printed = true;
      std::string vars, kinds, values;
      for (size_t j = i; j < n; ++j) {
        if (!remap[j]) continue;
        if (!vars.empty()) {
          vars += ", ";
          values += ", ";
        }
        vars += name(op->iter_vars[j].var.get());
        kinds += op->iter_vars[j].type == IterType::kDataPar ? "S" : "R";
        values += expr(realize->iter_values[j]);
      }
      line(vars + " = T.axis.remap(" + quote(kinds) + ", [" + values + "])");
      continue;
    }
    std::string dom = is_const_int(iv.dom.min, 0)
                          ? expr(iv.dom.extent)
                          : "(" + expr(iv.dom.min) + ", " + range_end(iv.dom) + ")";
    if (realize != nullptr && i < realize->iter_values.size()) {
      dom += ", " + expr(realize->iter_values[i]);
    }
    line(name(iv.var.get()) + " = T.axis." + iter_type_name(iv.type) + "(" + dom + ")");
  }
}

void ScriptPrinter::block(const BlockRealize* realize, const Block* op) {
  if (op == nullptr) {
    line("# BlockRealize without a block");
    return;
  }
  if (is_marked(op)) pending_mark_ = true;
  line("with T.block(" + quote(op->name) + "):");
  ++indent_;
  block_iter_vars(realize, op);
  if (realize != nullptr && realize->predicate.defined() && !is_const_int(realize->predicate, 1)) {
    line("T.where(" + expr(realize->predicate) + ")");
  }
  line("T.reads(" + regions(op->reads) + ")");
  line("T.writes(" + regions(op->writes) + ")");
  if (!op->annotations.empty()) line("T.block_attr(" + dict(op->annotations) + ")");
  for (const Ref<Buffer>& b : op->alloc_buffers) alloc_buffer(b.get());
  if (op->init.defined()) {
    line("with T.init():");
    body(op->init);
  }
  stmt(op->body);
  --indent_;
}

void ScriptPrinter::func(const PrimFunc& f, const std::string& func_name, bool with_import) {
  if (with_import) line("# from kiln.script import tir as T");
  line("@T.prim_func");
  if (is_marked(&f)) pending_mark_ = true;
  std::string params;
  for (const Ref<Var>& p : f.params) {
    if (!params.empty()) params += ", ";
    Ref<Buffer> buffer = f.buffer_of(p);
    if (buffer.defined()) {
      params += buffer_param(buffer.get());
    } else {
      params += name(p.get()) + ": T." + p->dtype.str();
    }
  }
  line("def " + func_name + "(" + params + "):");
  ++indent_;
  if (!f.attrs.empty()) line("T.func_attr(" + dict(f.attrs) + ")");
  for (const Var* v : FreeVarCollector().collect(f)) {
    line(name(v) + " = T." + v->dtype.str() + "()");
  }
  const auto* root = f.body.as<BlockRealize>();
  if (root != nullptr && is_implicit_root(root) && !is_marked(root->block.get())) {
    if (is_marked(root)) pending_mark_ = true;
    line("# with T.block(\"root\"):");
    for (const Ref<Buffer>& b : root->block->alloc_buffers) alloc_buffer(b.get());
    stmt(root->block->body);
  } else if (f.body.defined()) {
    stmt(f.body);
  } else {
    line("pass");
  }
  --indent_;
}

void ScriptPrinter::module(const IRModule& m) {
  line("# from kiln.script import ir as I");
  line("# from kiln.script import tir as T");
  line("@I.ir_module");
  if (is_marked(&m)) pending_mark_ = true;
  line("class Module:");
  ++indent_;
  bool first = true;
  for (const auto& [func_name, f] : m.functions) {
    if (!first) line("");
    first = false;
    reset_names();
    if (f.defined()) func(*f, func_name, false);
  }
  if (first) line("pass");
  --indent_;
}

}  // namespace kiln::ir::script
