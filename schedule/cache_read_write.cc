// Cache stages: cache_read, cache_write.
#include "kiln/schedule/cache_read_write.h"

#include <algorithm>
#include <unordered_map>

#include "buffer_util.h"
#include "instruction_registry.h"
#include "kiln/arith/analyzer.h"
#include "kiln/arith/int_set.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "schedule_util.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// The blocks of one scope that touch a buffer: its writer (if any) and its readers.
struct BufferUsers {
  const BlockLocation* writer = nullptr;
  std::vector<const BlockLocation*> readers;
};

// Where a cache stage goes: before statement `position` of the body of `container` (a loop,
// or the scope block itself).
struct CacheSite {
  const StmtNode* container = nullptr;
  size_t position = 0;
};

const For* as_loop(const StmtNode* stmt) {
  return stmt->kind() == NodeKind::For ? static_cast<const For*>(stmt) : nullptr;
}

const Stmt& body_of(const StmtNode* container) {
  if (const For* loop = as_loop(container)) return loop->body;
  return static_cast<const Block*>(container)->body;
}

std::vector<Stmt> statements_of(const Stmt& body) {
  if (const auto* s = body.as<SeqStmt>()) return s->seq;
  return {body};
}

std::string describe(const StmtNode* container) {
  if (const For* loop = as_loop(container)) return "loop '" + loop->loop_var->name + "'";
  return "block '" + static_cast<const Block*>(container)->name + "'";
}

// The position, among the statements of `container`'s body, of the one that holds `target`.
size_t position_in(const FunctionIndex& index, const StmtNode* container, const StmtNode* target) {
  const StmtNode* node = target;
  while (true) {
    const StmtNode* parent = index.parent(node);
    internal_check(parent != nullptr) << "cache stage: a block is not under its scope";
    if (parent == container) return 0;
    if (parent->kind() == NodeKind::SeqStmt && index.parent(parent) == container) {
      const auto* s = static_cast<const SeqStmt*>(parent);
      for (size_t k = 0; k < s->seq.size(); ++k) {
        if (s->seq[k].get() == node) return k;
      }
    }
    node = parent;
  }
}

// The writers and readers of `buffer` among the blocks of `scope`.
BufferUsers find_users(const FunctionIndex& index, const Block* scope, const Buffer* buffer,
                       std::vector<const BlockLocation*>* writers) {
  BufferUsers users;
  for (const std::string& name : index.block_names()) {
    const BlockLocation* loc = index.find_block(name);
    if (loc->scope != scope) continue;
    bool writes = accesses(loc->block->writes, buffer);
    if (writes) writers->push_back(loc);
    if (!writes && accesses(loc->block->reads, buffer)) users.readers.push_back(loc);
  }
  if (writers->size() == 1) users.writer = writers->front();
  return users;
}

// Throws NotSingleWriteBlockError when several blocks of the scope write `buffer`.
void check_single_writer(const std::vector<const BlockLocation*>& writers, const Buffer* buffer,
                         const char* primitive, const Ref<PrimFunc>& func) {
  if (writers.size() <= 1) return;
  std::string names;
  for (const BlockLocation* w : writers)
    names += (names.empty() ? "'" : ", '") + w->block->name + "'";
  schedule_error("NotSingleWriteBlockError", primitive,
                 "buffer " + buffer->name + " is written by " + std::to_string(writers.size()) +
                     " blocks of the scope (" + names + "); a cache stage needs a single writer",
                 func, writers[1]->realize);
}

// The place of the copy: descend into a loop while the writer and every reader are under it,
// then go before the first reader (after the writer when nothing reads the buffer).
CacheSite find_site(const FunctionIndex& index, const Block* scope, const BufferUsers& users,
                    const Buffer* buffer, const char* primitive, const Ref<PrimFunc>& func) {
  CacheSite site{scope, 0};
  if (users.writer != nullptr && !users.readers.empty()) {
    while (true) {
      size_t p = position_in(index, site.container, users.writer->realize);
      bool together = true;
      for (const BlockLocation* r : users.readers) {
        together &= position_in(index, site.container, r->realize) == p;
      }
      Stmt child = statements_of(body_of(site.container))[p];
      if (!together || !child.is<For>()) break;
      site.container = child.get();
    }
  }
  const BlockLocation* first_reader = nullptr;
  size_t first = 0;
  for (const BlockLocation* r : users.readers) {
    size_t position = position_in(index, site.container, r->realize);
    if (first_reader == nullptr || position < first) {
      first_reader = r;
      first = position;
    }
  }
  if (users.writer == nullptr) {
    site.position = first;
    return site;
  }
  size_t p = position_in(index, site.container, users.writer->realize);
  if (first_reader == nullptr) {
    site.position = p + 1;
    return site;
  }
  if (p >= first) {
    std::string where = "in the body of " + describe(site.container);
    std::string why =
        p == first ? "block '" + users.writer->block->name + "', which writes buffer " +
                         buffer->name + ", and block '" + first_reader->block->name +
                         "', which reads it, are in the same statement " + where +
                         ", and other readers are outside of it"
                   : "block '" + first_reader->block->name + "' reads buffer " + buffer->name +
                         " before block '" + users.writer->block->name + "' writes it " + where;
    schedule_error("CacheLocationError", primitive,
                   "there is no place for the copy between the writer and the readers: " + why,
                   func, first_reader->realize);
  }
  site.position = first;
  return site;
}

// The region of `buffer` that a block accesses (its reads or writes) while the loops between
// `container` and the block run; a dimension without bounds takes the whole buffer.
std::vector<arith::IntSet> accessed_sets(const BlockLocation& loc,
                                         const std::vector<BufferRegion>& regions,
                                         const Buffer* buffer, const StmtNode* container,
                                         arith::Analyzer* analyzer) {
  VarMap bindings = block_bindings(loc);
  auto first_inner = loc.loops.begin();
  auto it = std::find(loc.loops.begin(), loc.loops.end(), container);
  if (it != loc.loops.end()) first_inner = it + 1;
  std::unordered_map<const Var*, Range> inner;
  for (auto l = first_inner; l != loc.loops.end(); ++l) {
    inner[(*l)->loop_var.get()] = Range{(*l)->min, (*l)->extent};
  }
  arith::IntSetMap dom = arith::int_set_map(inner);
  std::vector<arith::IntSet> sets(buffer->ndim(), arith::IntSet::nothing());
  for (const BufferRegion& region : regions) {
    if (region.buffer.get() != buffer) continue;
    std::vector<Range> ranges;
    for (const Range& r : region.region) {
      ranges.push_back(Range{substitute(r.min, bindings), substitute(r.extent, bindings)});
    }
    std::vector<Range> covered = arith::eval_region(ranges, dom, analyzer, buffer->shape);
    for (size_t d = 0; d < covered.size(); ++d) {
      sets[d] = arith::union_sets({sets[d], arith::IntSet::from_range(covered[d])}, analyzer);
    }
  }
  return sets;
}

// The union of `sets` as ranges clipped to the buffer's shape.
std::vector<Range> clipped_region(const std::vector<arith::IntSet>& sets, const Buffer& buffer,
                                  arith::Analyzer* analyzer) {
  std::vector<Range> region;
  for (size_t d = 0; d < sets.size(); ++d) {
    const Expr& extent = buffer.shape[d];
    Range full{make_zero(extent->dtype), extent};
    Range r = sets[d].cover_range(full, analyzer);
    Expr lo = analyzer->simplify(max(cast(extent->dtype, r.min), make_zero(extent->dtype)));
    Expr hi = analyzer->simplify(min(cast(extent->dtype, r.min + r.extent), extent));
    region.push_back(Range{lo, analyzer->simplify(hi - lo)});
  }
  return region;
}

// The loops and block that copy `region` of `src` into `dst` (same shape):
//   for ax0, ax1 in T.grid(…): with T.block(name): dst[v0, v1] = src[v0, v1]
Stmt make_copy_stage(const std::string& name, const Ref<Buffer>& src, const Ref<Buffer>& dst,
                     const std::vector<Range>& region) {
  auto block = make<Block>();
  block->name = name;
  std::vector<Ref<Var>> loop_vars;
  std::vector<Expr> values, point;
  std::vector<Range> unit;
  for (size_t d = 0; d < region.size(); ++d) {
    DataType dtype = src->shape[d]->dtype;
    Ref<Var> loop_var = make_var("ax" + std::to_string(d), region[d].extent->dtype);
    Ref<Var> iter = make_var("v" + std::to_string(d), dtype);
    block->iter_vars.push_back(
        IterVar{iter, Range{make_zero(dtype), src->shape[d]}, IterType::kDataPar});
    loop_vars.push_back(loop_var);
    Expr value = cast(dtype, loop_var);
    if (!is_const_int(region[d].min, 0)) value = cast(dtype, region[d].min) + value;
    values.push_back(value);
    point.push_back(iter);
    unit.push_back(Range{iter, make_one(dtype)});
  }
  block->reads = {BufferRegion{src, unit}};
  block->writes = {BufferRegion{dst, unit}};
  block->body = buffer_store(dst, buffer_load(src, point), point);
  Stmt nest = make<BlockRealize>(values, bool_const(true), block);
  for (size_t d = region.size(); d-- > 0;) {
    nest = make<For>(loop_vars[d], make_zero(region[d].extent->dtype), region[d].extent,
                     ForKind::kSerial, nest);
  }
  return nest;
}

// Inserts the copy at its site, allocates the new buffer in the scope block, and renames the
// buffer in the blocks of `renamed`.
class CacheRewriter : public IRMutator {
 public:
  CacheRewriter(const CacheSite& site, Stmt stage, const Block* scope, Ref<Buffer> alloc,
                std::vector<const Block*> renamed, BufferMap rename)
      : site_(site),
        stage_(std::move(stage)),
        scope_(scope),
        alloc_(std::move(alloc)),
        renamed_(std::move(renamed)),
        rename_(std::move(rename)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const For* op) override {
    if (op != site_.container) return IRMutator::visit(op);
    auto loop = copy(op);
    loop->body = insert(op->body);
    return loop;
  }

  Stmt visit(const Block* op) override {
    if (std::find(renamed_.begin(), renamed_.end(), op) != renamed_.end()) {
      return replace_buffers(Stmt(op), rename_);
    }
    if (op != scope_) return IRMutator::visit(op);
    auto block = copy(op);
    block->body = op == site_.container ? insert(op->body) : mutate(op->body);
    block->alloc_buffers.push_back(alloc_);
    return block;
  }

 private:
  Stmt insert(const Stmt& body) {
    std::vector<Stmt> stmts;
    for (const Stmt& s : statements_of(body)) stmts.push_back(mutate(s));
    stmts.insert(stmts.begin() + static_cast<std::ptrdiff_t>(site_.position), stage_);
    return seq(std::move(stmts));
  }

  CacheSite site_;
  Stmt stage_;
  const Block* scope_;
  Ref<Buffer> alloc_;
  std::vector<const Block*> renamed_;
  BufferMap rename_;
};

// Binds the ranges of the loops that enclose the copy (down to `container`, when it is one of
// the block's loops) in `analyzer`.
void bind_outer_loops(const BlockLocation& loc, const StmtNode* container,
                      arith::Analyzer* analyzer) {
  if (std::find(loc.loops.begin(), loc.loops.end(), container) == loc.loops.end()) return;
  for (const For* loop : loc.loops) {
    analyzer->bind(loop->loop_var, Range{loop->min, loop->extent}, /*allow_override=*/true);
    if (loop == container) break;
  }
}

// Whether `body` loads an element of `buffer` (block read regions may leave out what a
// reduction update reads of its own output).
bool loads_buffer(const Stmt& body, const Buffer* buffer) {
  bool found = false;
  post_order_visit(body, [&](const Node* node) {
    found |= node->kind() == NodeKind::BufferLoad &&
             static_cast<const BufferLoad*>(node)->buffer.get() == buffer;
  });
  return found;
}

Ref<Buffer> cache_buffer(const Buffer& buffer, const std::string& scope) {
  return decl_buffer(buffer.shape, buffer.dtype, buffer.name + "_" + scope, scope);
}

}  // namespace

RV cache_read(Schedule& sch, const RV& block_rv, int64_t read_buffer_index,
              const std::string& storage_scope, const std::vector<RV>& consumer_blocks) {
  const char* primitive = "cache_read";
  // Step 1. Resolve the buffer and check the scope.
  const std::string& func_name = sch.func_name(block_rv);
  Ref<PrimFunc> func = sch.func(func_name);
  const BlockLocation& loc = sch.block(block_rv, primitive);
  Ref<Buffer> buffer = nth_accessed_buffer(func, loc, read_buffer_index, false, primitive);
  check_storage_scope(storage_scope, primitive, func, loc.realize);
  if (accesses(loc.block->writes, buffer.get())) {
    schedule_error("ReadWriteBufferError", primitive,
                   "block '" + loc.block->name + "' both reads and writes buffer " + buffer->name +
                       "; cache_read copies a buffer that the block only reads",
                   func, loc.realize);
  }
  // Step 2. Find the writer and the readers in the block's scope, and the place of the copy.
  const FunctionIndex& index = sch.index(func_name);
  std::vector<const BlockLocation*> writers;
  BufferUsers users = find_users(index, loc.scope, buffer.get(), &writers);
  check_single_writer(writers, buffer.get(), primitive, func);
  if (!consumer_blocks.empty()) {
    // Only the given consumers read the copy; the others keep reading the buffer.
    std::vector<const BlockLocation*> chosen;
    for (const RV& rv : consumer_blocks) {
      const BlockLocation& consumer = sch.block(rv, primitive);
      if (std::find(users.readers.begin(), users.readers.end(), &consumer) == users.readers.end()) {
        schedule_error("NotAConsumerError", primitive,
                       "block '" + consumer.block->name + "' does not read buffer " + buffer->name +
                           " in the scope of block '" + loc.block->name +
                           "'; consumer_blocks must be readers of the cached buffer",
                       func, consumer.realize);
      }
      if (std::find(chosen.begin(), chosen.end(), &consumer) == chosen.end()) {
        chosen.push_back(&consumer);
      }
    }
    users.readers = chosen;
  }
  CacheSite site = find_site(index, loc.scope, users, buffer.get(), primitive, func);
  // Step 3. Build the copy of the region that the readers read, below the site.
  arith::Analyzer analyzer;
  std::vector<arith::IntSet> sets(buffer->ndim(), arith::IntSet::nothing());
  for (const BlockLocation* reader : users.readers) {
    bind_outer_loops(*reader, site.container, &analyzer);
    std::vector<arith::IntSet> read =
        accessed_sets(*reader, reader->block->reads, buffer.get(), site.container, &analyzer);
    for (size_t d = 0; d < sets.size(); ++d) {
      sets[d] = arith::union_sets({sets[d], read[d]}, &analyzer);
    }
  }
  Ref<Buffer> cached = cache_buffer(*buffer, storage_scope);
  std::string name = fresh_block_name(index, buffer->name + "_" + storage_scope);
  Stmt stage = make_copy_stage(name, buffer, cached, clipped_region(sets, *buffer, &analyzer));
  std::vector<const Block*> readers;
  for (const BlockLocation* r : users.readers) readers.push_back(r->block);
  CacheRewriter rewriter(site, stage, loc.scope, cached, readers,
                         BufferMap{{buffer.get(), cached}});
  Stmt body = rewriter.mutate(func->body);
  // Step 4. Replace and record.
  sch.replace(func_name, with_body(func, body), primitive);
  RV out = sch.new_block_rv(func_name, name);
  Json inputs = Json::array({block_rv.name()});
  if (!consumer_blocks.empty()) {
    Json consumers = Json::array();
    for (const RV& rv : consumer_blocks) consumers.push_back(rv.name());
    inputs.push_back(consumers);
  }
  sch.record(
      Instruction{primitive,
                  inputs,
                  {{"read_buffer_index", read_buffer_index}, {"storage_scope", storage_scope}},
                  {out},
                  Json()});
  return out;
}

RV cache_write(Schedule& sch, const RV& block_rv, int64_t write_buffer_index,
               const std::string& storage_scope) {
  const char* primitive = "cache_write";
  // Step 1. Resolve the buffer and check the scope.
  const std::string& func_name = sch.func_name(block_rv);
  Ref<PrimFunc> func = sch.func(func_name);
  const BlockLocation& loc = sch.block(block_rv, primitive);
  Ref<Buffer> buffer = nth_accessed_buffer(func, loc, write_buffer_index, true, primitive);
  check_storage_scope(storage_scope, primitive, func, loc.realize);
  // Step 2. Check that the block is the only writer and writes what it reads, and find the
  // place of the copy.
  const FunctionIndex& index = sch.index(func_name);
  std::vector<const BlockLocation*> writers;
  BufferUsers users = find_users(index, loc.scope, buffer.get(), &writers);
  check_single_writer(writers, buffer.get(), primitive, func);
  // A block that loads what it writes, with no init of its own, reads values written outside
  // of it (by the init of an enclosing block, or by a separate init block): the cache would
  // start uninitialized.
  if (!loc.block->init.defined() && loads_buffer(loc.block->body, buffer.get())) {
    schedule_error("ReadWriteBufferError", primitive,
                   "block '" + loc.block->name + "' reads buffer " + buffer->name +
                       ", which it writes, and has no init: the values it reads are written "
                       "outside of it, and a cache of the buffer would not hold them",
                   func, loc.realize);
  }
  CacheSite site = find_site(index, loc.scope, users, buffer.get(), primitive, func);
  // Step 3. Build the copy of the region that the block writes, below the site.
  arith::Analyzer analyzer;
  bind_outer_loops(loc, site.container, &analyzer);
  std::vector<arith::IntSet> sets =
      accessed_sets(loc, loc.block->writes, buffer.get(), site.container, &analyzer);
  Ref<Buffer> cached = cache_buffer(*buffer, storage_scope);
  std::string name = fresh_block_name(index, buffer->name + "_" + storage_scope);
  Stmt stage = make_copy_stage(name, cached, buffer, clipped_region(sets, *buffer, &analyzer));
  CacheRewriter rewriter(site, stage, loc.scope, cached, {loc.block},
                         BufferMap{{buffer.get(), cached}});
  Stmt body = rewriter.mutate(func->body);
  // Step 4. Replace and record.
  sch.replace(func_name, with_body(func, body), primitive);
  RV out = sch.new_block_rv(func_name, name);
  sch.record(
      Instruction{primitive,
                  Json::array({block_rv.name()}),
                  {{"write_buffer_index", write_buffer_index}, {"storage_scope", storage_scope}},
                  {out},
                  Json()});
  return out;
}

void register_cache_read_write_instructions(std::vector<InstructionKind>* kinds) {
  kinds->push_back({"cache_read",
                    {"block", "consumer_blocks"},
                    false,
                    [](Schedule& sch, const Json& in, const Json& attrs, const Json&) {
                      std::vector<RV> consumers;
                      if (in.size() > 1) {
                        for (const Json& c : in.at(1)) {
                          consumers.push_back(rv_from_json(c, "cache_read"));
                        }
                      }
                      return std::vector<RV>{
                          cache_read(sch, rv_from_json(in.at(0), "cache_read"),
                                     attrs.at("read_buffer_index").get<int64_t>(),
                                     attrs.at("storage_scope").get<std::string>(), consumers)};
                    }});
  kinds->push_back({"cache_write",
                    {"block"},
                    false,
                    [](Schedule& sch, const Json& in, const Json& attrs, const Json&) {
                      return std::vector<RV>{
                          cache_write(sch, rv_from_json(in.at(0), "cache_write"),
                                      attrs.at("write_buffer_index").get<int64_t>(),
                                      attrs.at("storage_scope").get<std::string>())};
                    }});
}

}  // namespace kiln::schedule
