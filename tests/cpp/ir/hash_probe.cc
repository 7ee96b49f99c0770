// Prints the structural hashes of a fixed set of functions and expressions, one `name hash` line
// each. structural_test.cc runs it in two processes and compares both outputs with golden
// values: the tuning database relies on hashes being the same in every process.
#include <cinttypes>
#include <cstdio>
#include <limits>

#include "kiln/ir/structural.h"
#include "tests/cpp/ir/sample_funcs.h"

namespace {

using namespace kiln::ir;

void print_hash(const char* name, const Ref<Node>& node, bool map_free_vars = false) {
  std::printf("%s %016" PRIx64 "\n", name, structural_hash(node, map_free_vars));
}

}  // namespace

int main() {
  try {
    print_hash("matmul_128", samples::matmul());
    print_hash("matmul_64", samples::matmul(64));
    print_hash("scale_symbolic", samples::scale_symbolic());
    print_hash("vector_add_loop", samples::vector_add_loop());

    Ref<Var> x = make_var("x");
    Ref<Var> y = make_var("y", DataType::int64());
    print_hash("expr_arith", floordiv(x * 4 + 1, cast(DataType::int32(), y)), true);
    print_hash("expr_free_strict", x + 1);
    Ref<Var> v = make_var("v");
    print_hash("expr_let", let(v, x * 2, v + v), true);
    print_hash("expr_float",
               make_const(DataType::float32(), 0.1) +
                   make_const(DataType::float32(), std::numeric_limits<double>::quiet_NaN()));
    print_hash("expr_call", call(Builtin::Exp, {cast(DataType::float32(), x)}), true);
    print_hash("expr_string", make<StringImm>("global_symbol"));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hash_probe: %s\n", e.what());
    return 1;
  }
  return 0;
}
