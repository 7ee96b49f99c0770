// Structural equality and the first-difference report (kiln/ir/structural.h): the comparing
// handler of the shared walk in structural_walk.h.
#include <cmath>
#include <cstring>
#include <sstream>
#include <unordered_map>

#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"
#include "src/ir/structural_walk.h"

namespace kiln::ir {

namespace {

using structural::Binding;

// Compares the two sides; on the first difference it keeps what differs and where.
class EqualHandler {
 public:
  bool kind(NodeKind a, NodeKind b) { return a == b || differ(kind_name(a), kind_name(b)); }
  bool symbol(const char* a, const char* b) { return std::strcmp(a, b) == 0 || differ(a, b); }
  bool dtype(DataType a, DataType b) { return a == b || differ(a.str(), b.str()); }
  bool integer(int64_t a, int64_t b) {
    return a == b || differ(std::to_string(a), std::to_string(b));
  }
  bool real(double a, double b) {
    uint64_t bits_a, bits_b;
    std::memcpy(&bits_a, &a, sizeof(a));
    std::memcpy(&bits_b, &b, sizeof(b));
    if (bits_a == bits_b || (std::isnan(a) && std::isnan(b))) return true;
    std::ostringstream sa, sb;
    sa.precision(17);
    sb.precision(17);
    sa << a;
    sb << b;
    return differ(sa.str(), sb.str());
  }
  bool text(const std::string& a, const std::string& b) {
    return a == b || differ('"' + a + '"', '"' + b + '"');
  }

  Binding lookup(const Node* a, const Node* b) {
    auto ia = lhs_to_rhs_.find(a);
    auto ib = rhs_to_lhs_.find(b);
    if (ia == lhs_to_rhs_.end() && ib == rhs_to_lhs_.end()) return Binding::kUnbound;
    if (ia != lhs_to_rhs_.end() && ib != rhs_to_lhs_.end() && ia->second == b && ib->second == a) {
      return Binding::kBound;
    }
    return Binding::kMismatch;
  }
  // A later definition of the same object replaces the earlier one (a variable reused by two
  // sibling loops); stale reverse entries then fail the two-way check of lookup().
  void bind(const Node* a, const Node* b) {
    lhs_to_rhs_[a] = b;
    rhs_to_lhs_[b] = a;
  }
  bool same_free(const Node* a, const Node* b) { return a == b; }

  void fail(const Node* a, const Node* b, const char* field, const char* what) {
    lhs_ = Ref<Node>(a);
    rhs_ = Ref<Node>(b);
    std::ostringstream os;
    if (field != nullptr) {
      os << kind_name((a != nullptr ? a : b)->kind()) << "." << field << " " << what;
      if (!values_.empty()) os << ": " << values_;
    } else {
      os << what;
    }
    what_ = os.str();
  }
  void path(const char* field, int index, const std::string* key) {
    std::string segment = std::string(".") + field;
    if (index >= 0) segment += "[" + std::to_string(index) + "]";
    if (key != nullptr) segment += "[\"" + *key + "\"]";
    segments_.push_back(std::move(segment));
  }

  // The report of structural_diff.
  std::string report() const {
    std::string path = "root";
    for (auto it = segments_.rbegin(); it != segments_.rend(); ++it) path += *it;
    std::ostringstream os;
    os << path << ": " << what_ << "\n";
    os << "  lhs: " << indent(side(lhs_)) << "\n";
    os << "  rhs: " << indent(side(rhs_));
    return os.str();
  }

 private:
  bool differ(const std::string& a, const std::string& b) {
    values_ = a + " vs " + b;
    return false;
  }

  // The printed node, cut after kMaxLines lines: the innermost difference may be a whole block.
  static std::string side(const Ref<Node>& node) {
    constexpr int kMaxLines = 16;
    if (!node.defined()) return "(null)";
    std::istringstream text(to_script_node(node));
    std::string out, line;
    int count = 0;
    while (std::getline(text, line)) {
      if (count++ < kMaxLines) out += (count > 1 ? "\n" : "") + line;
    }
    if (count > kMaxLines) out += "\n... (" + std::to_string(count - kMaxLines) + " more lines)";
    return out;
  }
  // Continuation lines of a multi-line side line up under its first line.
  static std::string indent(const std::string& text) {
    std::string out;
    for (char c : text) {
      out += c;
      if (c == '\n') out += "       ";
    }
    return out;
  }

  std::unordered_map<const Node*, const Node*> lhs_to_rhs_;
  std::unordered_map<const Node*, const Node*> rhs_to_lhs_;
  std::string values_;
  std::string what_;
  Ref<Node> lhs_, rhs_;
  std::vector<std::string> segments_;
};

}  // namespace

bool structural_equal(const Ref<Node>& a, const Ref<Node>& b, bool map_free_vars) {
  if (a.same_as(b)) return true;
  EqualHandler handler;
  return structural::Walker<EqualHandler>(&handler, map_free_vars).node(a.get(), b.get());
}

std::string structural_diff(const Ref<Node>& a, const Ref<Node>& b, bool map_free_vars) {
  EqualHandler handler;
  if (structural::Walker<EqualHandler>(&handler, map_free_vars).node(a.get(), b.get())) return "";
  return handler.report();
}

}  // namespace kiln::ir
