// The IR printer's public functions (kiln/ir/printer.h) and the parts of ScriptPrinter shared by
// expressions and statements: unique names, output lines, and the underlining of a marked node.
#include <ostream>

#include "src/ir/script_printer.h"

namespace kiln::ir {

namespace script {

namespace {

// Names a printed variable must not take: the script's module aliases and Python keywords.
bool is_reserved(const std::string& name) {
  static const std::unordered_set<std::string> reserved = {
      "T",      "I",      "False",   "None",     "True",     "and",    "as",   "assert",
      "async",  "await",  "break",   "class",    "continue", "def",    "del",  "elif",
      "else",   "except", "finally", "for",      "from",     "global", "if",   "import",
      "in",     "is",     "lambda",  "nonlocal", "not",      "or",     "pass", "raise",
      "return", "try",    "while",   "with",     "yield",    "range"};
  return reserved.count(name) > 0;
}

// A name hint as a Python identifier.
std::string identifier(const std::string& hint) {
  if (hint.empty()) return "v";
  std::string out;
  for (char c : hint) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += ok ? c : '_';
  }
  if (out[0] >= '0' && out[0] <= '9') out = "_" + out;
  return out;
}

}  // namespace

std::string ScriptPrinter::unique_name(const Node* node, const std::string& hint) {
  auto it = names_.find(node);
  if (it != names_.end()) return it->second;
  std::string base = identifier(hint);
  std::string name = base;
  for (int k = 1; used_names_.count(name) > 0 || is_reserved(name); ++k) {
    name = base + "_" + std::to_string(k);
  }
  used_names_.insert(name);
  names_.emplace(node, name);
  return name;
}

std::string ScriptPrinter::name(const Var* var) {
  auto it = data_of_.find(var);
  if (it != data_of_.end()) return name(it->second) + ".data";
  return unique_name(var, var->name);
}

std::string ScriptPrinter::name(const Buffer* buffer) {
  return unique_name(buffer, buffer->name);
}

void ScriptPrinter::declare(const Buffer* buffer) {
  if (buffer->data.defined()) data_of_[buffer->data.get()] = buffer;
}

void ScriptPrinter::reset_names() {
  names_.clear();
  used_names_.clear();
  data_of_.clear();
}

void ScriptPrinter::line(const std::string& text) {
  if (text.empty()) {
    lines_.emplace_back();
    return;
  }
  std::string out(4 * indent_, ' ');
  if (pending_mark_) {
    out += kMarkBegin + text + kMarkEnd;
    pending_mark_ = false;
  } else {
    out += text;
  }
  lines_.push_back(std::move(out));
}

std::string ScriptPrinter::wrap_mark(const Node* node, std::string text) const {
  if (!is_marked(node)) return text;
  return kMarkBegin + text + kMarkEnd;
}

std::string ScriptPrinter::finish() const {
  std::string out;
  for (size_t i = 0; i < lines_.size(); ++i) {
    if (i > 0) out += '\n';
    const std::string& text = lines_[i];
    if (text.find(kMarkBegin) == std::string::npos) {
      out += text;
      continue;
    }
    // Strip the brackets and underline what they enclosed.
    std::string plain;
    std::string carets;
    bool inside = false;
    for (char c : text) {
      if (c == kMarkBegin) {
        inside = true;
      } else if (c == kMarkEnd) {
        inside = false;
      } else {
        plain += c;
        carets += inside ? '^' : ' ';
      }
    }
    while (!carets.empty() && carets.back() == ' ') carets.pop_back();
    if (!options_.mark_note.empty()) carets += " " + options_.mark_note;
    out += plain + '\n' + carets;
  }
  return out;
}

}  // namespace script

std::string to_script(const Expr& e) {
  script::ScriptPrinter printer(PrintOptions{});
  printer.expr_line(e);
  return printer.finish();
}

std::string to_script(const Stmt& s, const PrintOptions& options) {
  script::ScriptPrinter printer(options);
  printer.stmt(s);
  return printer.finish();
}

std::string to_script(const Ref<PrimFunc>& f, const std::string& name,
                      const PrintOptions& options) {
  if (!f.defined()) return "None";
  script::ScriptPrinter printer(options);
  printer.func(*f, name, true);
  return printer.finish();
}

std::string to_script(const Ref<IRModule>& m, const PrintOptions& options) {
  if (!m.defined()) return "None";
  script::ScriptPrinter printer(options);
  printer.module(*m);
  return printer.finish();
}

std::string to_script_node(const Ref<Node>& node, const PrintOptions& options) {
  if (!node.defined()) return "None";
  if (is_expr_kind(node->kind())) {
    script::ScriptPrinter printer(options);
    printer.expr_line(Expr(static_cast<const ExprNode*>(node.get())));
    return printer.finish();
  }
  if (is_stmt_kind(node->kind())) {
    return to_script(Stmt(static_cast<const StmtNode*>(node.get())), options);
  }
  script::ScriptPrinter printer(options);
  switch (node->kind()) {
    case NodeKind::PrimFunc: {
      Ref<PrimFunc> f(static_cast<const PrimFunc*>(node.get()));
      auto symbol = f->attrs.find("global_symbol");
      const auto* name = symbol != f->attrs.end() ? symbol->second.as<StringImm>() : nullptr;
      return to_script(f, name != nullptr ? name->value : "main", options);
    }
    case NodeKind::IRModule:
      return to_script(Ref<IRModule>(static_cast<const IRModule*>(node.get())), options);
    case NodeKind::Buffer:
      return printer.buffer_param(static_cast<const Buffer*>(node.get()));
    case NodeKind::CommReducer:
      return printer.comm_reducer(static_cast<const CommReducer*>(node.get()));
    default:
      return kind_name(node->kind());
  }
}

std::ostream& operator<<(std::ostream& os, const Expr& e) {
  return os << (e.defined() ? to_script(e) : std::string("None"));
}

std::ostream& operator<<(std::ostream& os, const Stmt& s) {
  return os << (s.defined() ? to_script(s) : std::string("None"));
}

}  // namespace kiln::ir
