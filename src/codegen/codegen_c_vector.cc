// Vector code of the C-like GPU code generators: arithmetic lane by lane, memory through the
// language's vector types where the access is contiguous and aligned (see "Vectors" in
// codegen_c.h).
#include <algorithm>

#include "codegen_c.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"
#include "kiln/support/error.h"

namespace kiln::codegen {

using namespace ir;

namespace {

// Whether every value of an expression with modular set `m` is a multiple of `n`.
bool is_multiple(const arith::ModularSet& m, int64_t n) {
  if (m.coeff == 0) return ((m.base % n) + n) % n == 0;
  return m.coeff % n == 0 && m.base % n == 0;
}

std::string describe(const arith::ModularSet& m) {
  if (m.coeff == 0) return std::to_string(m.base);
  if (m.coeff == 1) return "any integer";
  return std::to_string(m.coeff) + " * k + " + std::to_string(m.base);
}

// The operands of a node that has expression children, in order.
std::vector<Expr> children(const Expr& e) {
  switch (e->kind()) {
#define KILN_BINARY_CHILDREN(T) case NodeKind::T:
    KILN_BINARY_NODE_LIST(KILN_BINARY_CHILDREN) {
      const auto* op = static_cast<const BinaryNode*>(e.get());
      return {op->a, op->b};
    }
#undef KILN_BINARY_CHILDREN
    case NodeKind::Not:
      return {e.as<Not>()->a};
    case NodeKind::Select: {
      const auto* op = e.as<Select>();
      return {op->condition, op->true_value, op->false_value};
    }
    case NodeKind::Cast:
      return {e.as<Cast>()->value};
    case NodeKind::Call:
      return e.as<Call>()->args;
    case NodeKind::Ramp:
      return {e.as<Ramp>()->base, e.as<Ramp>()->stride};
    case NodeKind::Broadcast:
      return {e.as<Broadcast>()->value};
    case NodeKind::Let:
      return {e.as<Let>()->value, e.as<Let>()->body};
    case NodeKind::BufferLoad:
      return e.as<BufferLoad>()->indices;
    default:
      return {};
  }
}

}  // namespace

std::string CodeGenC::element_address(const Buffer& buffer, const Expr& index) {
  return "(" + data_of(buffer) + " + " + dispatch(index) + ")";
}

CodeGenC::VectorAccess CodeGenC::plan_vector_access(const Buffer& buffer, const Expr& index) {
  VectorAccess access;
  // Registers: a vector type would only hide the elements from the register allocator.
  if (buffer.scope == "local") return access;
  int lanes = index->dtype.lanes();
  const auto* ramp = index.as<Ramp>();
  if (ramp == nullptr || !is_const_int(ramp->stride, 1)) {
    access.why = "its index " + to_script(index) + " is not a ramp of stride 1";
    return access;
  }
  std::string element = storage_type(buffer.dtype);
  std::string type = vector_type(element, lanes);
  if (type.empty()) {
    access.why = "the language has no vector type of " + std::to_string(lanes) + " " + element;
    return access;
  }
  int64_t bytes = int64_t{lanes} * buffer.dtype.bytes();
  auto known = data_alignment_.find(buffer.data.get());
  int64_t alignment = known != data_alignment_.end() ? known->second : buffer.alignment();
  arith::ModularSet base = analyzer_->modular_set(ramp->base);
  access.aligned = alignment % bytes == 0 && is_multiple(base, lanes);
  if (!access.aligned && !has_unaligned_vector_access()) {
    access.why = "its address is not provably a multiple of " + std::to_string(bytes) +
                 " bytes (the data is aligned to " + std::to_string(alignment) +
                 " bytes; the first index " + to_script(ramp->base) + " is " + describe(base) + ")";
    return access;
  }
  access.whole = true;
  access.type = type;
  access.base = ramp->base;
  return access;
}

Expr CodeGenC::lane_of(const Expr& e, int lane) {
  int lanes = e->dtype.lanes();
  if (lanes == 1) return e;
  DataType t = e->dtype.with_lanes(1);
  switch (e->kind()) {
#define KILN_LANE_OF_BINARY(T)                                     \
  case NodeKind::T: {                                              \
    const auto* op = static_cast<const BinaryNode*>(e.get());      \
    return make<T>(t, lane_of(op->a, lane), lane_of(op->b, lane)); \
  }
    KILN_BINARY_NODE_LIST(KILN_LANE_OF_BINARY)
#undef KILN_LANE_OF_BINARY
    case NodeKind::Ramp: {
      const auto* op = e.as<Ramp>();
      if (lane == 0) return op->base;
      const int64_t* stride = as_const_int(op->stride);
      Expr offset = stride != nullptr ? make_const(t, *stride * lane)
                                      : mul(op->stride, make_const(t, int64_t{lane}));
      return add(op->base, offset);
    }
    case NodeKind::Broadcast:
      return e.as<Broadcast>()->value;
    case NodeKind::Not:
      return make<Not>(t, lane_of(e.as<Not>()->a, lane));
    case NodeKind::Select: {
      const auto* op = e.as<Select>();
      return make<Select>(t, lane_of(op->condition, lane), lane_of(op->true_value, lane),
                          lane_of(op->false_value, lane));
    }
    case NodeKind::Cast:
      return make<Cast>(t, lane_of(e.as<Cast>()->value, lane));
    case NodeKind::Call: {
      const auto* op = e.as<Call>();
      std::vector<Expr> args;
      for (const Expr& arg : op->args) args.push_back(lane_of(arg, lane));
      return make<Call>(t, op->op, std::move(args));
    }
    case NodeKind::Let: {
      const auto* op = e.as<Let>();
      Expr value = lane_of(op->value, lane);
      if (op->value->dtype.lanes() == 1)
        return make<Let>(t, op->var, value, lane_of(op->body, lane));
      // A vector variable: each lane binds a scalar of its own.
      auto var = make<Var>(op->var->name, op->var->dtype.with_lanes(1));
      std::vector<Ref<Var>> vars(static_cast<size_t>(op->var->dtype.lanes()));
      vars[static_cast<size_t>(lane)] = var;
      auto saved = vector_lets_.find(op->var.get());
      std::vector<Ref<Var>> outer;
      if (saved != vector_lets_.end()) outer = saved->second;
      vector_lets_[op->var.get()] = vars;
      Expr body = lane_of(op->body, lane);
      if (outer.empty()) {
        vector_lets_.erase(op->var.get());
      } else {
        vector_lets_[op->var.get()] = outer;
      }
      return make<Let>(t, var, value, body);
    }
    case NodeKind::Var: {
      auto it = vector_lets_.find(static_cast<const Var*>(e.get()));
      internal_check(it != vector_lets_.end() && it->second.size() > static_cast<size_t>(lane) &&
                     it->second[static_cast<size_t>(lane)].defined())
          << "codegen: kernel " << kernel_name_ << ": the vector variable "
          << static_cast<const Var*>(e.get())->name << " is not bound by a let";
      return it->second[static_cast<size_t>(lane)];
    }
    case NodeKind::BufferLoad: {
      const auto* op = e.as<BufferLoad>();
      auto hoisted = hoisted_loads_.find(op);
      if (hoisted != hoisted_loads_.end()) return hoisted->second[static_cast<size_t>(lane)];
      if (op->indices.size() != 1) {
        unsupported("a vector load of buffer " + op->buffer->name + " that is not flattened");
      }
      return make<BufferLoad>(t, op->buffer, std::vector<Expr>{lane_of(op->indices[0], lane)});
    }
    default:
      unsupported(std::string("a vector expression of kind ") + kind_name(e->kind()) + ": " +
                  to_script(e));
  }
}

void CodeGenC::hoist_vector_loads(const Expr& e) {
  if (e->kind() == NodeKind::Call && e.as<Call>()->op == Builtin::IfThenElse) {
    hoist_vector_loads(e.as<Call>()->args[0]);
    return;
  }
  // A load inside a let's body may index with the let's variable, which has no value yet here.
  if (e->kind() == NodeKind::Let) {
    hoist_vector_loads(e.as<Let>()->value);
    return;
  }
  for (const Expr& child : children(e)) hoist_vector_loads(child);
  const auto* load = e.as<BufferLoad>();
  if (load == nullptr || e->dtype.lanes() == 1 || hoisted_loads_.count(load) != 0) return;
  if (load->indices.size() != 1) return;
  // The same load written twice (e.g. max(A[i], A[i] * 2)) is one vector variable.
  for (const auto& [other, components] : hoisted_loads_) {
    const auto* earlier = static_cast<const BufferLoad*>(other);
    if (earlier->buffer->data.same_as(load->buffer->data) && earlier->dtype == load->dtype &&
        structural_equal(earlier->indices[0], load->indices[0])) {
      std::vector<Ref<Var>> same = components;  // copied: inserting may rehash the map
      auto name = hoisted_vector_names_.find(other);
      if (name != hoisted_vector_names_.end()) {
        std::string vector_name = name->second;
        hoisted_vector_names_[load] = vector_name;
      }
      hoisted_loads_[load] = std::move(same);
      return;
    }
  }
  VectorAccess access = plan_vector_access(*load->buffer, load->indices[0]);
  if (!access.whole) {
    if (!access.why.empty()) {
      std::string note = "kernel " + kernel_name_ + ": the vector load of " + load->buffer->name +
                         " (" + std::to_string(e->dtype.lanes()) +
                         " lanes) is done lane by lane: " + access.why;
      if (notes_set_.insert(note).second) notes_.push_back(note);
    }
    return;
  }
  int lanes = e->dtype.lanes();
  std::string name = "kiln_vec" + std::to_string(vector_temps_++);
  line() << "const " << access.type << " " << name << " = "
         << vector_load(access.type, lanes, element_address(*load->buffer, access.base),
                        load->buffer->scope, access.aligned)
         << ";\n";
  DataType t = e->dtype.with_lanes(1);
  std::vector<Ref<Var>> components;
  for (int l = 0; l < lanes; ++l) {
    auto var = make<Var>(name, t);
    std::string component = vector_component(name, l);
    if (t.is_float16()) component = "kiln_half_to_float(" + component + ")";
    if (t.is_bfloat16()) component = "kiln_bf16_to_float(" + component + ")";
    let_values_[var.get()] = component;
    components.push_back(var);
  }
  hoisted_loads_[load] = std::move(components);
  hoisted_vector_names_[load] = name;
}

void CodeGenC::emit_vector_store(const BufferStore* op) {
  const Buffer& buffer = *op->buffer;
  if (op->indices.size() != 1) {
    unsupported("a vector store to buffer " + buffer.name + " that is not flattened");
  }
  hoisted_loads_.clear();
  hoisted_vector_names_.clear();
  hoist_vector_loads(op->value);
  const Expr& index = op->indices[0];
  int lanes = index->dtype.lanes();
  VectorAccess access = plan_vector_access(buffer, index);
  if (access.whole) {
    std::string value = vector_expression(op->value);
    if (!value.empty()) {
      line() << vector_store(access.type, lanes, element_address(buffer, access.base), buffer.scope,
                             access.aligned, value)
             << "\n";
      return;
    }
  }
  // A copy stores the loaded vector whole, and 16-bit floats move as bits, without converting
  // them to float and back.
  const auto* copied = op->value.as<BufferLoad>();
  bool copy = copied != nullptr && copied->dtype.with_lanes(1) == buffer.dtype;
  bool copy_bits = copy && (buffer.dtype.is_float16() || buffer.dtype.is_bfloat16());
  auto hoisted = copy ? hoisted_vector_names_.find(copied) : hoisted_vector_names_.end();
  if (access.whole && hoisted != hoisted_vector_names_.end()) {
    line() << vector_store(access.type, lanes, element_address(buffer, access.base), buffer.scope,
                           access.aligned, hoisted->second)
           << "\n";
    return;
  }
  std::vector<std::string> values;
  for (int l = 0; l < lanes; ++l) {
    if (copy_bits) {
      values.push_back(hoisted != hoisted_vector_names_.end()
                           ? vector_component(hoisted->second, l)
                           : data_of(*copied->buffer) + "[" +
                                 dispatch(lane_of(copied->indices[0], l)) + "]");
      continue;
    }
    std::string value = dispatch(lane_of(op->value, l));
    if (buffer.dtype.is_float16()) value = "kiln_float_to_half(" + value + ")";
    if (buffer.dtype.is_bfloat16()) value = "kiln_float_to_bf16(" + value + ")";
    values.push_back(value);
  }
  if (access.whole) {
    line() << vector_store(access.type, lanes, element_address(buffer, access.base), buffer.scope,
                           access.aligned, make_vector(access.type, values))
           << "\n";
  } else {
    if (!access.why.empty()) {
      std::string note = "kernel " + kernel_name_ + ": the vector store to " + buffer.name + " (" +
                         std::to_string(lanes) + " lanes) is done lane by lane: " + access.why;
      if (notes_set_.insert(note).second) notes_.push_back(note);
    }
    // Each lane writes an address no other lane reads (vectorize_loops checks it), so the
    // stores may go one after the other.
    for (int l = 0; l < lanes; ++l) {
      line() << data_of(buffer) << "[" << dispatch(lane_of(index, l))
             << "] = " << values[static_cast<size_t>(l)] << ";\n";
    }
  }
}

void CodeGenC::emit_vector_let(const LetStmt* op) {
  hoisted_loads_.clear();
  hoisted_vector_names_.clear();
  hoist_vector_loads(op->value);
  int lanes = op->var->dtype.lanes();
  DataType t = op->var->dtype.with_lanes(1);
  std::vector<Ref<Var>> vars;
  std::string value = vector_expression(op->value);
  if (!value.empty()) {
    // One vector variable; lane_of reads its components.
    std::string name = name_of(op->var.get());
    line() << "const " << vector_type(type_name(t), lanes) << " " << name << " = " << value
           << ";\n";
    for (int l = 0; l < lanes; ++l) {
      auto var = make<Var>(name, t);
      let_values_[var.get()] = vector_component(name, l);
      vars.push_back(var);
    }
    vector_let_names_[op->var.get()] = name;
    vector_lets_[op->var.get()] = std::move(vars);
    emit_stmt(op->body);
    return;
  }
  for (int l = 0; l < lanes; ++l) {
    auto var = make<Var>(op->var->name + "_" + std::to_string(l), t);
    line() << "const " << type_name(t) << " " << name_of(var.get()) << " = "
           << dispatch(lane_of(op->value, l)) << ";\n";
    vars.push_back(var);
  }
  vector_lets_[op->var.get()] = std::move(vars);
  emit_stmt(op->body);
}

void CodeGenC::plan_array_alignment(const Stmt& body) {
  // The largest whole vector access of each buffer; an array of "shared" memory is declared
  // aligned to it, so that accesses at multiples of their lanes are aligned.
  post_order_visit(body, [&](const Node* node) {
    const Buffer* buffer = nullptr;
    const Expr* index = nullptr;
    if (node->kind() == NodeKind::BufferLoad) {
      const auto* load = static_cast<const BufferLoad*>(node);
      buffer = load->buffer.get();
      if (load->indices.size() == 1) index = &load->indices[0];
    } else if (node->kind() == NodeKind::BufferStore) {
      const auto* store = static_cast<const BufferStore*>(node);
      buffer = store->buffer.get();
      if (store->indices.size() == 1) index = &store->indices[0];
    }
    if (index == nullptr || buffer->scope != "shared") return;
    const auto* ramp = index->as<Ramp>();
    if (ramp == nullptr || !is_const_int(ramp->stride, 1)) return;
    if (vector_type(storage_type(buffer->dtype), ramp->lanes).empty()) return;
    int64_t bytes = int64_t{ramp->lanes} * buffer->dtype.bytes();
    int64_t& alignment = data_alignment_[buffer->data.get()];
    alignment = std::max({alignment, bytes, int64_t{buffer->alignment()}});
  });
}

}  // namespace kiln::codegen
