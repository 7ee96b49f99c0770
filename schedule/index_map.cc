// IndexMap: the checks of its expressions, its text form (writer and parser) and its
// application to indices.
#include "kiln/schedule/index_map.h"

#include <cctype>
#include <cstdint>
#include <set>
#include <unordered_map>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/support/error.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// Throws unless `e` uses only the operators of an index map, constants and `vars`.
void check_index_expr(const Expr& e, const std::set<const Var*>& vars, const Expr& whole) {
  auto fail = [&](const std::string& why) {
    user_error(ErrorKind::kValue) << "IndexMap: final index " << to_script(whole) << " " << why
                                  << "; an index map uses + - * // % of its indices and integer "
                                     "constants";
  };
  if (!e->dtype.is_integer() || !e->dtype.is_scalar()) fail("is not a scalar integer");
  switch (e->kind()) {
    case NodeKind::IntImm:
      return;
    case NodeKind::Var:
      if (vars.count(e.as<Var>()) == 0) {
        fail("uses variable '" + e.as<Var>()->name + "', which is not one of the map's indices");
      }
      return;
    case NodeKind::Add:
    case NodeKind::Sub:
    case NodeKind::Mul:
    case NodeKind::FloorDiv:
    case NodeKind::FloorMod: {
      const auto* b = static_cast<const BinaryNode*>(e.get());
      check_index_expr(b->a, vars, whole);
      check_index_expr(b->b, vars, whole);
      return;
    }
    default:
      fail("contains " + to_script(e));
  }
}

// Operator precedences of the text form (Python's).
enum Precedence { kSum = 1, kProduct = 2, kUnary = 3, kAtom = 4 };

struct Text {
  std::string text;
  int precedence;
};

class IndexMapWriter {
 public:
  explicit IndexMapWriter(std::unordered_map<const Var*, std::string> names)
      : names_(std::move(names)) {}

  Text write(const Expr& e) {
    switch (e->kind()) {
      case NodeKind::IntImm: {
        int64_t v = e.as<IntImm>()->value;
        return {std::to_string(v), v < 0 ? kUnary : kAtom};
      }
      case NodeKind::Var:
        return {names_.at(e.as<Var>()), kAtom};
      case NodeKind::Add:
        return binary(e, " + ", kSum);
      case NodeKind::Sub: {
        const auto* s = e.as<Sub>();
        if (is_const_int(s->a, 0)) return {"-" + operand(s->b, kUnary), kUnary};
        return binary(e, " - ", kSum);
      }
      case NodeKind::Mul:
        return binary(e, " * ", kProduct);
      case NodeKind::FloorDiv:
        return binary(e, " // ", kProduct);
      case NodeKind::FloorMod:
        return binary(e, " % ", kProduct);
      default:
        internal_error << "IndexMap: no text form for " << to_script(e);
    }
  }

 private:
  // Left-associative: the right operand needs a strictly higher precedence.
  Text binary(const Expr& e, const char* symbol, int precedence) {
    const auto* b = static_cast<const BinaryNode*>(e.get());
    return {operand(b->a, precedence) + symbol + operand(b->b, precedence + 1), precedence};
  }
  std::string operand(const Expr& e, int min_precedence) {
    Text t = write(e);
    return t.precedence < min_precedence ? "(" + t.text + ")" : t.text;
  }

  std::unordered_map<const Var*, std::string> names_;
};

bool is_identifier(const std::string& name) {
  static const std::set<std::string> kKeywords = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return kKeywords.count(name) == 0;
}

// A recursive-descent reader of the text form; `pos_` indexes `text_`.
class IndexMapParser {
 public:
  explicit IndexMapParser(const std::string& text) : text_(text) {}

  IndexMap parse() {
    expect_word("lambda");
    std::vector<Ref<Var>> vars;
    skip_space();
    while (!peek(":")) {
      if (!vars.empty()) expect(",");
      std::string name = identifier();
      user_check(scope_.count(name) == 0)
          << error_prefix() << "index '" << name << "' is named twice";
      vars.push_back(make_var(name));
      scope_[name] = vars.back();
      skip_space();
    }
    expect(":");
    std::vector<Expr> exprs;
    skip_space();
    if (peek("[")) {
      exprs = list("[", "]");
    } else if (peek("(") && parenthesized_list()) {
      exprs = list("(", ")");
    } else {
      exprs.push_back(sum());
    }
    skip_space();
    user_check(pos_ == text_.size()) << error_prefix() << "unexpected text";
    return IndexMap(std::move(vars), std::move(exprs));
  }

 private:
  std::string error_prefix() const {
    return "IndexMap.parse: at position " + std::to_string(pos_) + " of '" + text_ + "': ";
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool peek(const char* token) {
    skip_space();
    return text_.compare(pos_, std::char_traits<char>::length(token), token) == 0;
  }
  void expect(const char* token) {
    user_check(peek(token)) << error_prefix() << "expected '" << token << "'";
    pos_ += std::char_traits<char>::length(token);
  }
  void expect_word(const char* word) {
    skip_space();
    user_check(identifier() == word) << error_prefix() << "expected '" << word << "'";
  }
  std::string identifier() {
    skip_space();
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    std::string name = text_.substr(start, pos_ - start);
    user_check(is_identifier(name) || name == "lambda")
        << error_prefix() << "expected a name, found '" << name << "'";
    return name;
  }

  // Whether the parenthesis at pos_ encloses a comma at its own depth (a tuple) and closes at
  // the end of the text.
  bool parenthesized_list() const {
    int depth = 0;
    bool comma = false;
    for (size_t k = pos_; k < text_.size(); ++k) {
      char c = text_[k];
      if (c == '(' || c == '[') ++depth;
      if (c == ')' || c == ']') {
        if (--depth == 0) {
          for (size_t rest = k + 1; rest < text_.size(); ++rest) {
            if (!std::isspace(static_cast<unsigned char>(text_[rest]))) return false;
          }
          return comma;
        }
      }
      if (c == ',' && depth == 1) comma = true;
    }
    return false;
  }

  std::vector<Expr> list(const char* open, const char* close) {
    expect(open);
    std::vector<Expr> exprs;
    while (!peek(close)) {
      exprs.push_back(sum());
      if (!peek(close)) expect(",");
    }
    expect(close);
    return exprs;
  }

  Expr sum() {
    Expr e = product();
    while (true) {
      if (peek("+")) {
        ++pos_;
        e = add(e, product());
      } else if (peek("-")) {
        ++pos_;
        e = sub(e, product());
      } else {
        return e;
      }
    }
  }

  Expr product() {
    Expr e = unary();
    while (true) {
      if (peek("//")) {
        pos_ += 2;
        e = floordiv(e, unary());
      } else if (peek("*")) {
        ++pos_;
        e = mul(e, unary());
      } else if (peek("%")) {
        ++pos_;
        e = floormod(e, unary());
      } else {
        return e;
      }
    }
  }

  Expr unary() {
    if (peek("-")) {
      ++pos_;
      return neg(unary());
    }
    if (peek("+")) {
      ++pos_;
      return unary();
    }
    return atom();
  }

  Expr atom() {
    skip_space();
    if (peek("(")) {
      ++pos_;
      Expr e = sum();
      expect(")");
      return e;
    }
    user_check(pos_ < text_.size()) << error_prefix() << "expected an index expression";
    if (std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      size_t start = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      int64_t value = 0;
      try {
        value = std::stoll(text_.substr(start, pos_ - start));
      } catch (const std::exception&) {
        user_error(ErrorKind::kValue) << error_prefix() << "the constant does not fit in 64 bits";
      }
      return value <= INT32_MAX ? int32_const(value) : make_const(DataType::int64(), value);
    }
    char c = text_[pos_];
    user_check(std::isalpha(static_cast<unsigned char>(c)) || c == '_')
        << error_prefix() << "expected an index expression, found '" << c << "'";
    std::string name = identifier();
    auto it = scope_.find(name);
    user_check(it != scope_.end())
        << error_prefix() << "'" << name << "' is not one of the map's indices";
    return it->second;
  }

  const std::string& text_;
  size_t pos_ = 0;
  std::unordered_map<std::string, Ref<Var>> scope_;
};

// Rebuilds an index expression with the builders, so that types promote around new operands.
Expr rebuild(const Expr& e, const VarMap& values) {
  switch (e->kind()) {
    case NodeKind::Var:
      return values.at(e.as<Var>());
    case NodeKind::Add:
      return add(rebuild(e.as<Add>()->a, values), rebuild(e.as<Add>()->b, values));
    case NodeKind::Sub:
      return sub(rebuild(e.as<Sub>()->a, values), rebuild(e.as<Sub>()->b, values));
    case NodeKind::Mul:
      return mul(rebuild(e.as<Mul>()->a, values), rebuild(e.as<Mul>()->b, values));
    case NodeKind::FloorDiv:
      return floordiv(rebuild(e.as<FloorDiv>()->a, values), rebuild(e.as<FloorDiv>()->b, values));
    case NodeKind::FloorMod:
      return floormod(rebuild(e.as<FloorMod>()->a, values), rebuild(e.as<FloorMod>()->b, values));
    default:
      return e;
  }
}

}  // namespace

IndexMap::IndexMap(std::vector<Ref<Var>> initial_indices, std::vector<Expr> final_indices)
    : initial_(std::move(initial_indices)), final_(std::move(final_indices)) {
  std::set<const Var*> vars;
  for (const Ref<Var>& v : initial_) {
    user_check(v.defined() && v->dtype.is_integer() && v->dtype.is_scalar())
        << "IndexMap: the initial indices must be integer variables";
    user_check(vars.insert(v.get()).second)
        << "IndexMap: initial index '" << v->name << "' is given twice";
  }
  for (const Expr& e : final_) {
    user_check(e.defined()) << "IndexMap: a final index is None";
    check_index_expr(e, vars, e);
  }
}

IndexMap IndexMap::parse(const std::string& text) {
  return IndexMapParser(text).parse();
}

std::string IndexMap::to_text() const {
  // Names as written when they are distinct identifiers, else made so.
  std::unordered_map<const Var*, std::string> names;
  std::set<std::string> used;
  for (size_t k = 0; k < initial_.size(); ++k) {
    std::string name = initial_[k]->name;
    if (!is_identifier(name) || used.count(name) != 0) {
      int n = static_cast<int>(k);
      do {
        name = "i" + std::to_string(n++);
      } while (used.count(name) != 0);
    }
    used.insert(name);
    names[initial_[k].get()] = name;
  }
  std::string text = "lambda";
  for (size_t k = 0; k < initial_.size(); ++k) {
    text += (k == 0 ? " " : ", ") + names[initial_[k].get()];
  }
  text += ": [";
  IndexMapWriter writer(names);
  for (size_t k = 0; k < final_.size(); ++k) {
    text += (k == 0 ? "" : ", ") + writer.write(final_[k]).text;
  }
  return text + "]";
}

std::vector<Expr> IndexMap::map_indices(const std::vector<Expr>& indices) const {
  index_check(indices.size() == initial_.size())
      << "IndexMap.map_indices: the map takes " << initial_.size() << " indices, found "
      << indices.size();
  VarMap values;
  for (size_t k = 0; k < indices.size(); ++k) values[initial_[k].get()] = indices[k];
  std::vector<Expr> out;
  for (const Expr& e : final_) out.push_back(rebuild(e, values));
  return out;
}

}  // namespace kiln::schedule
