// Layout transformation: transform_layout.
#include "kiln/schedule/layout_transformation.h"

#include <numeric>
#include <sstream>
#include <unordered_map>

#include "buffer_util.h"
#include "instruction_registry.h"
#include "kiln/arith/analyzer.h"
#include "kiln/arith/int_set.h"
#include "kiln/arith/iter_map.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "schedule_util.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// Rewrites every use of `old_buffer` in a function's body to `new_buffer` through the map,
// simplifying the new indices with the ranges of the enclosing loops and block iterators.
class LayoutRewriter : public IRMutator {
 public:
  LayoutRewriter(const Buffer* old_buffer, Ref<Buffer> new_buffer, const IndexMap& map)
      : old_(old_buffer), new_(std::move(new_buffer)), map_(map) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Ref<Buffer> mutate_buffer(const Ref<Buffer>& buffer) override {
    return buffer.get() == old_ ? new_ : buffer;
  }

  Stmt visit(const For* op) override {
    analyzer_.bind(op->loop_var, Range{op->min, op->extent}, /*allow_override=*/true);
    return IRMutator::visit(op);
  }

  Stmt visit(const Block* op) override {
    for (const IterVar& iv : op->iter_vars) {
      analyzer_.bind(iv.var, iv.dom, /*allow_override=*/true);
    }
    Stmt result = IRMutator::visit(op);
    const auto* block = result.as<Block>();
    if (!accesses(block->reads, new_.get()) && !accesses(block->writes, new_.get())) {
      return result;
    }
    auto rewritten = copy(block);
    for (auto* regions : {&rewritten->reads, &rewritten->writes}) {
      for (BufferRegion& r : *regions) {
        if (r.buffer.same_as(new_)) r.region = map_region(r.region);
      }
    }
    return rewritten;
  }

  Expr visit(const BufferLoad* op) override {
    Expr e = IRMutator::visit(op);
    const auto* load = e.as<BufferLoad>();
    if (op->buffer.get() != old_) return e;
    return make<BufferLoad>(load->dtype, new_, map_point(load->indices));
  }

  Stmt visit(const BufferStore* op) override {
    Stmt s = IRMutator::visit(op);
    const auto* store = s.as<BufferStore>();
    if (op->buffer.get() != old_) return s;
    return make<BufferStore>(new_, store->value, map_point(store->indices));
  }

 private:
  std::vector<Expr> map_point(const std::vector<Expr>& indices) {
    std::vector<Expr> mapped = map_.map_indices(indices);
    for (Expr& e : mapped) e = analyzer_.simplify(e);
    return mapped;
  }

  // The region of the new buffer that covers the old region's image, within the new shape.
  std::vector<Range> map_region(const std::vector<Range>& region) {
    bool point = true;
    for (const Range& r : region) point &= is_const_int(r.extent, 1);
    std::vector<Range> out;
    if (point) {
      std::vector<Expr> mins;
      for (const Range& r : region) mins.push_back(r.min);
      for (const Expr& e : map_point(mins)) out.push_back(Range{e, make_one(e->dtype)});
      return out;
    }
    std::vector<Ref<Var>> vars;
    std::vector<Expr> indices;
    std::unordered_map<const Var*, Range> ranges;
    for (const Range& r : region) {
      vars.push_back(make_var("r", r.min->dtype));
      indices.push_back(vars.back());
      ranges[vars.back().get()] = r;
    }
    std::vector<Range> covered = arith::eval_region(
        map_.map_indices(indices), arith::int_set_map(ranges), &analyzer_, new_->shape);
    for (size_t d = 0; d < covered.size(); ++d) {
      const Expr& extent = new_->shape[d];
      DataType t = extent->dtype;
      Expr lo = analyzer_.simplify(max(cast(t, covered[d].min), make_zero(t)));
      Expr hi = analyzer_.simplify(min(cast(t, covered[d].min + covered[d].extent), extent));
      out.push_back(Range{lo, analyzer_.simplify(hi - lo)});
    }
    return out;
  }

  const Buffer* old_;
  Ref<Buffer> new_;
  const IndexMap& map_;
  arith::Analyzer analyzer_;
};

// The extents of a buffer the function allocates padded for a map that cuts an index by
// constants that do not divide its extent (i // 6 and i % 6 over 1024 rows): each constant
// extent rounded up to a multiple of the constants that divide or take the modulo of its own
// index in the map (`vars`, one per dimension); the others as they are.
std::vector<Expr> padded_extents(const std::vector<Expr>& mapped, const std::vector<Ref<Var>>& vars,
                                 const std::vector<Expr>& shape) {
  std::unordered_map<const Node*, int64_t> multiple;  // index var -> lcm of its divisors
  auto note = [&](const Expr& a, const Expr& b) {
    const int64_t* c = as_const_int(b);
    if (c == nullptr || *c <= 1 || a.as<Var>() == nullptr) return;
    int64_t& m = multiple.try_emplace(a.get(), 1).first->second;
    m = std::lcm(m, *c);
  };
  for (const Expr& e : mapped) {
    post_order_visit(e, [&](const Node* node) {
      if (const auto* d = dynamic_cast<const FloorDiv*>(node)) note(d->a, d->b);
      if (const auto* m = dynamic_cast<const FloorMod*>(node)) note(m->a, m->b);
    });
  }
  std::vector<Expr> padded = shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    auto found = multiple.find(vars[d].get());
    const int64_t* extent = as_const_int(shape[d]);
    if (found == multiple.end() || extent == nullptr || *extent % found->second == 0) continue;
    int64_t rounded = (*extent + found->second - 1) / found->second * found->second;
    padded[d] = make_const(shape[d]->dtype, rounded);
  }
  return padded;
}

Ref<Buffer> resolve_buffer(const Ref<PrimFunc>& func, const BlockLocation& loc,
                           const BufferSpec& spec, const char* primitive) {
  if (const auto* pair = std::get_if<std::pair<BufferIndexType, int64_t>>(&spec)) {
    return nth_accessed_buffer(func, loc, pair->second, pair->first == BufferIndexType::kWrite,
                               primitive);
  }
  const std::string& name = std::get<std::string>(spec);
  std::vector<Ref<Buffer>> found;
  std::string names;
  for (const auto* regions : {&loc.block->reads, &loc.block->writes}) {
    for (const BufferRegion& r : *regions) {
      bool seen = false;
      for (const Ref<Buffer>& b : found) seen |= b.same_as(r.buffer);
      if (r.buffer->name == name && !seen) found.push_back(r.buffer);
      if (names.find(" " + r.buffer->name + ",") == std::string::npos) {
        names += " " + r.buffer->name + ",";
      }
    }
  }
  if (found.size() != 1) {
    if (!names.empty()) names.pop_back();
    schedule_error("BufferNotFoundError", primitive,
                   "block '" + loc.block->name + "' accesses " +
                       (found.empty() ? "no buffer" : "several buffers") + " named '" + name +
                       "' (it accesses" + (names.empty() ? " none" : names) + ")",
                   func, loc.realize);
  }
  return found[0];
}

Json spec_json(const BufferSpec& spec) {
  if (const auto* name = std::get_if<std::string>(&spec)) return Json(*name);
  const auto& [type, index] = std::get<std::pair<BufferIndexType, int64_t>>(spec);
  return Json::array({type == BufferIndexType::kRead ? "read" : "write", index});
}

BufferSpec spec_from_json(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  user_check(value.is_array() && value.size() == 2 && value[0].is_string())
      << "trace: transform_layout expected a buffer (\"read\"|\"write\", index) or a name, found "
      << value.dump();
  const std::string kind = value[0].get<std::string>();
  user_check(kind == "read" || kind == "write")
      << "trace: transform_layout expected \"read\" or \"write\", found \"" << kind << "\"";
  return std::make_pair(kind == "read" ? BufferIndexType::kRead : BufferIndexType::kWrite,
                        value[1].get<int64_t>());
}

}  // namespace

void transform_layout(Schedule& sch, const RV& block_rv, const BufferSpec& spec,
                      const IndexMap& index_map) {
  const char* primitive = "transform_layout";
  // Step 1. Resolve the buffer and check the map's arity.
  const std::string& func_name = sch.func_name(block_rv);
  Ref<PrimFunc> func = sch.func(func_name);
  const BlockLocation& loc = sch.block(block_rv, primitive);
  Ref<Buffer> buffer = resolve_buffer(func, loc, spec, primitive);
  const std::string map_text = index_map.to_text();
  if (index_map.initial_indices().size() != buffer->shape.size()) {
    schedule_error(
        "InvalidIndexMapError", primitive,
        "index map '" + map_text + "' takes " + std::to_string(index_map.initial_indices().size()) +
            (index_map.initial_indices().size() == 1 ? " index" : " indices") + ", but buffer " +
            buffer->name + " has " + std::to_string(buffer->ndim()) + " dimension(s)",
        func, loc.realize);
  }
  // Step 2. Check that the map is a bijection of the old index space onto a box that starts at
  // zero, and take the box as the new shape. A buffer the function allocates may be padded: a
  // map that is a bijection once the extents it cuts are rounded up (padded_extents) is one of
  // the old index space into the padded box, whose extra elements nothing reads or writes.
  std::vector<Ref<Var>> vars;
  std::vector<Expr> indices;
  for (size_t d = 0; d < buffer->shape.size(); ++d) {
    vars.push_back(make_var(index_map.initial_indices()[d]->name, buffer->shape[d]->dtype));
    indices.push_back(vars.back());
  }
  std::vector<Expr> mapped = index_map.map_indices(indices);
  std::vector<Expr> extents = buffer->shape;
  // Not a "warp" buffer either: a fragment layout spreads whole tiles over a warp's lanes.
  if (!is_param_buffer(*func, buffer.get()) && buffer->scope != "warp") {
    extents = padded_extents(mapped, vars, buffer->shape);
  }
  arith::Analyzer analyzer;
  arith::IterRanges ranges;
  std::unordered_map<const Var*, Range> domain;
  for (size_t d = 0; d < vars.size(); ++d) {
    ranges[vars[d].get()] = domain[vars[d].get()] = Range{make_zero(extents[d]->dtype), extents[d]};
    analyzer.bind(vars[d], ranges[vars[d].get()]);
  }
  arith::IterMapResult detected = arith::detect_iter_map(
      mapped, ranges, bool_const(true), arith::IterMapLevel::kBijective, &analyzer);
  std::string shape_text;
  for (const Expr& e : buffer->shape) shape_text += (shape_text.empty() ? "" : ", ") + to_script(e);
  if (!detected.ok()) {
    std::string why;
    for (const std::string& e : detected.errors) why += "\n  " + e;
    schedule_error("NonBijectiveIndexMapError", primitive,
                   "index map '" + map_text + "' is not a bijection over the shape (" + shape_text +
                       ") of buffer " + buffer->name + ":" + why,
                   func, loc.realize);
  }
  arith::IntSetMap dom = arith::int_set_map(domain);
  std::vector<Expr> new_shape;
  for (size_t k = 0; k < mapped.size(); ++k) {
    arith::IntSet set = arith::eval_set(analyzer.simplify(mapped[k]), dom, &analyzer);
    if (!set.has_lower_bound() || !set.has_upper_bound() ||
        !analyzer.can_prove_equal(set.min(), make_zero(set.min()->dtype))) {
      std::ostringstream range;
      range << set;
      schedule_error("NonBijectiveIndexMapError", primitive,
                     "final index " + std::to_string(k) + " of index map '" + map_text +
                         "' ranges over " + range.str() + " on the shape (" + shape_text +
                         ") of buffer " + buffer->name + "; the new indices must start at 0",
                     func, loc.realize);
    }
    new_shape.push_back(analyzer.simplify(set.max() + 1));
  }
  // Step 3. Declare the buffer in its new shape and rewrite every use.
  auto transformed = copy(buffer.get());
  transformed->shape = std::move(new_shape);
  transformed->strides = {};
  auto new_func = copy(func.get());
  new_func->body = LayoutRewriter(buffer.get(), transformed, index_map).mutate(func->body);
  for (auto& [param, b] : new_func->buffer_map) {
    if (b.same_as(buffer)) b = transformed;
  }
  // Step 4. Replace and record.
  sch.replace(func_name, new_func, primitive);
  sch.record(Instruction{primitive,
                         Json::array({block_rv.name()}),
                         {{"buffer", spec_json(spec)}, {"index_map", map_text}},
                         {},
                         Json()});
}

void register_layout_transformation_instructions(std::vector<InstructionKind>* kinds) {
  kinds->push_back({"transform_layout",
                    {"block"},
                    false,
                    [](Schedule& sch, const Json& in, const Json& attrs, const Json&) {
                      transform_layout(sch, rv_from_json(in.at(0), "transform_layout"),
                                       spec_from_json(attrs.at("buffer")),
                                       IndexMap::parse(attrs.at("index_map").get<std::string>()));
                      return std::vector<RV>{};
                    }});
}

}  // namespace kiln::schedule
