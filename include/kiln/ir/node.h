// The base of every IR node, the intrusive reference `Ref<T>` that shares nodes, and the one
// list of node kinds from which the kind enum and the visitor/mutator dispatch are generated.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <utility>

namespace kiln::ir {

// The binary expression kinds (BinaryNode, expr.h): arithmetic, comparisons, logical.
#define KILN_BINARY_NODE_LIST(X) \
  X(Add)                         \
  X(Sub)                         \
  X(Mul)                         \
  X(Div)                         \
  X(Mod)                         \
  X(FloorDiv)                    \
  X(FloorMod)                    \
  X(Min)                         \
  X(Max)                         \
  X(EQ)                          \
  X(NE)                          \
  X(LT)                          \
  X(LE)                          \
  X(GT)                          \
  X(GE)                          \
  X(And)                         \
  X(Or)

// Every expression kind, in a fixed order. Adding a kind here and a struct in expr.h is all the
// dispatch needs; the visitors and mutators are generated from this list.
#define KILN_EXPR_NODE_LIST(X) \
  X(IntImm)                    \
  X(FloatImm)                  \
  X(StringImm)                 \
  X(Var)                       \
  KILN_BINARY_NODE_LIST(X)     \
  X(Not)                       \
  X(Select)                    \
  X(Cast)                      \
  X(Call)                      \
  X(Ramp)                      \
  X(Broadcast)                 \
  X(Let)                       \
  X(BufferLoad)                \
  X(Reduce)

// Every statement kind.
#define KILN_STMT_NODE_LIST(X) \
  X(LetStmt)                   \
  X(AssertStmt)                \
  X(BufferStore)               \
  X(Allocate)                  \
  X(For)                       \
  X(SeqStmt)                   \
  X(IfThenElse)                \
  X(Evaluate)                  \
  X(Block)                     \
  X(BlockRealize)

// Nodes that are neither expressions nor statements.
#define KILN_OTHER_NODE_LIST(X) \
  X(Buffer)                     \
  X(CommReducer)                \
  X(PrimFunc)                   \
  X(IRModule)

enum class NodeKind : uint8_t {
#define KILN_DECLARE_KIND(Name) Name,
  KILN_EXPR_NODE_LIST(KILN_DECLARE_KIND) KILN_STMT_NODE_LIST(KILN_DECLARE_KIND)
      KILN_OTHER_NODE_LIST(KILN_DECLARE_KIND)
#undef KILN_DECLARE_KIND
};

// The name of a kind, e.g. "FloorDiv".
const char* kind_name(NodeKind kind);
bool is_expr_kind(NodeKind kind);
bool is_stmt_kind(NodeKind kind);

// Base of all IR nodes. Nodes are immutable once shared: a pass that changes a node builds a new
// one (see IRMutator). The reference count is intrusive so that a `Ref` can be rebuilt from a
// raw node pointer, which the visitors hand around.
class Node {
 public:
  explicit Node(NodeKind kind) : kind_(kind) {}
  Node(const Node& other) : kind_(other.kind_) {}
  Node& operator=(const Node&) = delete;
  virtual ~Node() = default;

  NodeKind kind() const { return kind_; }
  static bool matches(NodeKind) { return true; }

 private:
  template <class T>
  friend class Ref;
  mutable std::atomic<int32_t> ref_count_{0};
  NodeKind kind_;
};

// A shared, possibly null handle to a node. Identity is the node: two Refs are equal when they
// point at the same node (structural comparison lives in kiln/ir/structural.h).
template <class T>
class Ref {
 public:
  Ref() = default;
  Ref(std::nullptr_t) {}  // NOLINT(google-explicit-constructor)
  Ref(const T* node) : node_(const_cast<T*>(node)) { retain(); }  // NOLINT
  Ref(const Ref& other) : node_(other.node_) { retain(); }
  Ref(Ref&& other) noexcept : node_(other.node_) { other.node_ = nullptr; }
  template <class U, class = std::enable_if_t<std::is_base_of_v<T, U>>>
  Ref(const Ref<U>& other) : node_(other.get()) {  // NOLINT
    retain();
  }
  ~Ref() { release(); }

  Ref& operator=(Ref other) noexcept {
    std::swap(node_, other.node_);
    return *this;
  }

  T* get() const { return node_; }
  T* operator->() const { return node_; }
  T& operator*() const { return *node_; }
  bool defined() const { return node_ != nullptr; }
  explicit operator bool() const { return node_ != nullptr; }
  bool same_as(const Ref& other) const { return node_ == other.node_; }
  bool operator==(const Ref& other) const { return node_ == other.node_; }
  bool operator!=(const Ref& other) const { return node_ != other.node_; }
  bool operator<(const Ref& other) const { return std::less<T*>()(node_, other.node_); }

  // The node as a U, or nullptr when it is of another kind.
  template <class U>
  const U* as() const {
    if (node_ != nullptr && U::matches(node_->kind())) return static_cast<const U*>(node_);
    return nullptr;
  }
  template <class U>
  bool is() const {
    return as<U>() != nullptr;
  }

 private:
  void retain() {
    if (node_ != nullptr) node_->ref_count_.fetch_add(1, std::memory_order_relaxed);
  }
  void release() {
    if (node_ != nullptr && node_->ref_count_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete node_;
    }
    node_ = nullptr;
  }
  T* node_ = nullptr;
};

// Allocates a node. Fill its fields before sharing it.
template <class T, class... Args>
Ref<T> make(Args&&... args) {
  return Ref<T>(new T(std::forward<Args>(args)...));
}

// Downcast a Ref whose kind is known; nullptr Ref when it is of another kind.
template <class U, class T>
Ref<U> cast(const Ref<T>& ref) {
  return Ref<U>(ref.template as<U>());
}

// A fresh copy of a node, for the build-a-changed-node step of a mutator.
template <class T>
Ref<T> copy(const T* node) {
  return Ref<T>(new T(*node));
}

// Declares the kind constant and matcher of a concrete node struct.
#define KILN_NODE_KIND(Name)                                                \
  static constexpr ::kiln::ir::NodeKind kKind = ::kiln::ir::NodeKind::Name; \
  static bool matches(::kiln::ir::NodeKind k) {                             \
    return k == kKind;                                                      \
  }

}  // namespace kiln::ir

template <class T>
struct std::hash<kiln::ir::Ref<T>> {
  size_t operator()(const kiln::ir::Ref<T>& ref) const { return std::hash<T*>()(ref.get()); }
};
