// Tests of make_packed_api: the bindings of the packed arguments, the attributes, the argument
// spec as JSON, and the errors for parameters that a spec cannot describe.
#include "kiln/tir/make_packed_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <vector>

#include "flat_program.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"

namespace kiln::tir {
namespace {

using namespace flat_testing;

// def add(A: (n, 4) float32, B: (n, 4) float32, alpha: float32, k: int64): body
struct AddFunc {
  Ref<Var> n = make_size_var("n");
  Ref<Var> alpha = make_var("alpha", DataType::float32());
  Ref<Var> k = make_var("k", DataType::int64());
  Ref<Buffer> a = decl_buffer({n, i32(4)}, DataType::float32(), "A");
  Ref<Buffer> b = decl_buffer({n, i32(4)}, DataType::float32(), "B");
  Ref<Buffer> a_flat = decl_buffer({n * 4}, DataType::float32(), "A");
  Ref<Buffer> b_flat = decl_buffer({n * 4}, DataType::float32(), "B");
  Ref<Var> i = make_var("i");
  Ref<PrimFunc> func;

  AddFunc() {
    a_flat->data = a->data;
    b_flat->data = b->data;
    Expr value = add(mul(buffer_load(a_flat, {i}), alpha), cast(DataType::float32(), k));
    Stmt body = loop(i, i32(0), n * 4, buffer_store(b_flat, value, {i}));
    func = make_func({a, b, alpha, k}, body);
  }
};

nlohmann::json spec_of(const Ref<PrimFunc>& func) {
  auto it = func->attrs.find("kiln.arg_spec");
  EXPECT_NE(it, func->attrs.end());
  return nlohmann::json::parse(it->second.as<StringImm>()->value);
}

TEST(MakePackedApi, BindsArgumentsInParameterOrder) {
  AddFunc f;
  Ref<PrimFunc> result = make_packed_api(f.func, "add");
  EXPECT_EQ(to_script(result->body),
            "with T.LetStmt(T.packed_arg_data(0)) as A:\n"
            "    with T.LetStmt(T.Cast(\"int32\", T.packed_arg_shape(0, 0))) as n:\n"
            "        with T.LetStmt(T.packed_arg_data(1)) as B:\n"
            "            with T.LetStmt(T.Cast(\"float32\", T.packed_arg_float(2))) as alpha:\n"
            "                with T.LetStmt(T.packed_arg_int(3)) as k:\n"
            "                    for i in range(n * 4):\n"
            "                        B_1[i] = A_1[i] * alpha + T.Cast(\"float32\", k)");
  // The bindings are the very builtins the code generator reads.
  const auto* data = result->body.as<LetStmt>();
  ASSERT_NE(data, nullptr);
  EXPECT_TRUE(data->var.same_as(f.a->data));
  const auto* call = data->value.as<Call>();
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->op, Builtin::PackedArgData);
  EXPECT_EQ(call->dtype, DataType::handle());
  // Parameters and buffers are kept; the function is new.
  EXPECT_FALSE(result.same_as(f.func));
  EXPECT_EQ(result->params.size(), 4u);
  EXPECT_TRUE(result->buffer_map[0].second.same_as(f.a));
}

TEST(MakePackedApi, SetsTheAttributesOfTheEntryPoint) {
  AddFunc f;
  f.func->attrs["tir.noalias"] = bool_const(true);
  Ref<PrimFunc> result = make_packed_api(f.func, "add");
  EXPECT_EQ(result->attrs.at("global_symbol").as<StringImm>()->value, "kiln_unchecked_add");
  EXPECT_TRUE(is_const_int(result->attrs.at("kiln.packed"), 1));
  EXPECT_TRUE(is_const_int(result->attrs.at("kiln.noalias"), 1));
  EXPECT_TRUE(is_const_int(result->attrs.at("tir.noalias"), 1));
  // A global symbol that is already there is kept.
  f.func->attrs["global_symbol"] = make<StringImm>("my_add");
  EXPECT_EQ(make_packed_api(f.func, "add")->attrs.at("global_symbol").as<StringImm>()->value,
            "my_add");
}

TEST(MakePackedApi, ArgSpecIsTheManifestEntry) {
  AddFunc f;
  nlohmann::json spec = spec_of(make_packed_api(f.func, "add"));
  // The loop runs to n * 4 in int32: n may be at most INT32_MAX / 4.
  nlohmann::json expected = nlohmann::json::parse(R"({
    "name": "add", "symbol": "kiln_unchecked_add", "sym_vars": ["n"], "sym_var_dtypes": ["int32"],
    "sym_var_max": [536870911],
    "args": [
      {"name": "A", "kind": "tensor", "dtype": "float32", "ndim": 2, "shape": ["n", 4],
       "strides": null, "device": "cpu", "alignment": 4, "written": false},
      {"name": "B", "kind": "tensor", "dtype": "float32", "ndim": 2, "shape": ["n", 4],
       "strides": null, "device": "cpu", "alignment": 4, "written": true},
      {"name": "alpha", "kind": "scalar", "dtype": "float32"},
      {"name": "k", "kind": "scalar", "dtype": "int64"}]})");
  EXPECT_EQ(spec, expected) << spec.dump(2);
}

TEST(MakePackedApi, StridesAndDistinctVariablesWithOneName) {
  // Two different variables called n, and constant strides.
  Ref<Var> n1 = make_size_var("n"), n2 = make_size_var("n");
  Ref<Buffer> a = decl_buffer({n1}, DataType::int_(8), "A");
  Ref<Buffer> b = decl_buffer({n2, i32(3)}, DataType::bool_(), "B");
  b->strides = {i32(4), i32(1)};
  b->data_alignment = 16;
  Ref<PrimFunc> func = make_func({a, b}, make<Evaluate>(add(n1, n2)));
  nlohmann::json spec = spec_of(make_packed_api(func, "f"));
  EXPECT_EQ(spec["sym_vars"], nlohmann::json::parse(R"(["n", "n_1"])"));
  EXPECT_EQ(spec["args"][1]["shape"], nlohmann::json::parse(R"(["n_1", 3])"));
  EXPECT_EQ(spec["args"][1]["strides"], nlohmann::json::parse("[4, 1]"));
  EXPECT_EQ(spec["args"][1]["dtype"], "bool");
  EXPECT_EQ(spec["args"][1]["alignment"], 16);
  EXPECT_EQ(spec["args"][0]["dtype"], "int8");
}

TEST(MakePackedApi, RepeatedDimensionIsBoundOnce) {
  AddFunc f;
  Ref<PrimFunc> result = make_packed_api(f.func, "add");
  int shape_reads = count_calls(result->body, Builtin::PackedArgShape);
  EXPECT_EQ(shape_reads, 1);
}

TEST(MakePackedApi, ScalarThatIsAlsoADimensionTakesTheDimension) {
  Ref<Var> n = make_size_var("n");
  Ref<Buffer> a = decl_buffer({n}, DataType::float32(), "A");
  Ref<PrimFunc> func = make_func({a, n}, make<Evaluate>(n));
  Ref<PrimFunc> result = make_packed_api(func, "f");
  EXPECT_EQ(to_script(result->body),
            "with T.LetStmt(T.packed_arg_data(0)) as A:\n"
            "    with T.LetStmt(T.Cast(\"int32\", T.packed_arg_shape(0, 0))) as n:\n"
            "        T.evaluate(n)");
  EXPECT_EQ(spec_of(result)["args"][1],
            nlohmann::json::parse(R"({"name": "n", "kind": "scalar", "dtype": "int32"})"));
}

TEST(MakePackedApi, SymbolicVariablesKeepTheirDtypes) {
  Ref<Var> n = make_var("n", DataType::int64());
  Ref<Var> m = make_size_var("m");
  Ref<Buffer> a = decl_buffer({n, m}, DataType::float32(), "A");
  Ref<PrimFunc> func = make_func({a}, make<Evaluate>(i32(0)));
  nlohmann::json spec = spec_of(make_packed_api(func, "f"));
  EXPECT_EQ(spec["sym_vars"], nlohmann::json::parse(R"(["n", "m"])"));
  EXPECT_EQ(spec["sym_var_dtypes"], nlohmann::json::parse(R"(["int64", "int32"])"));
}

// The "written" flag of each tensor of `func`, in parameter order.
std::vector<bool> written_flags(const Ref<PrimFunc>& func) {
  std::vector<bool> flags;
  nlohmann::json spec = spec_of(make_packed_api(func, "f"));
  for (const auto& arg : spec["args"]) {
    if (arg["kind"] == "tensor") flags.push_back(arg["written"].get<bool>());
  }
  return flags;
}

TEST(MakePackedApi, WrittenCountsStoresInsideNestedStatements) {
  // for i: if i < 2: for j: C[j] = A[j] + B[i]: C is written deep inside, A and B only read.
  Ref<Buffer> a = buffer_1d("A", i32(4)), b = buffer_1d("B", i32(4)), c = buffer_1d("C", i32(4));
  Ref<Var> i = make_var("i"), j = make_var("j");
  Stmt store = buffer_store(c, add(buffer_load(a, {j}), buffer_load(b, {i})), {j});
  Stmt body = loop(i, 4, make<IfThenElse>(lt(i, i32(2)), loop(j, 4, store), Stmt()));
  EXPECT_EQ(written_flags(make_func({a, b, c}, body)), (std::vector<bool>{false, false, true}));
}

TEST(MakePackedApi, WrittenThroughAnotherBufferOfTheSameData) {
  // A flattened view of A shares its data variable; a store through it writes A, which is read
  // too (an in-place update).
  Ref<Buffer> a = decl_buffer({i32(2), i32(2)}, DataType::float32(), "A");
  Ref<Buffer> a_flat = buffer_1d("A", i32(4));
  a_flat->data = a->data;
  Ref<Var> i = make_var("i");
  Stmt body =
      loop(i, 4,
           buffer_store(a_flat, add(buffer_load(a_flat, {i}), make_const(DataType::float32(), 1.0)),
                        {i}));
  EXPECT_EQ(written_flags(make_func({a}, body)), (std::vector<bool>{true}));
}

TEST(MakePackedApi, WrittenWhenItsAddressReachesAnExternCall) {
  // call_extern may write through the pointers it is given; a pure call may not.
  Ref<Buffer> a = buffer_1d("A", i32(4)), b = buffer_1d("B", i32(4));
  Expr a_address = call(DataType::handle(), Builtin::AddressOf, {buffer_load(a, {i32(0)})});
  Expr b_address = call(DataType::handle(), Builtin::AddressOf, {buffer_load(b, {i32(0)})});
  Stmt body = make<Evaluate>(
      call(DataType::int32(), Builtin::CallExtern, {make<StringImm>("fill"), a_address}));
  body = make<SeqStmt>(
      std::vector<Stmt>{body, make<Evaluate>(call(DataType::int32(), Builtin::CallPureExtern,
                                                  {make<StringImm>("sum"), b_address}))});
  EXPECT_EQ(written_flags(make_func({a, b}, body)), (std::vector<bool>{true, false}));
}

TEST(MakePackedApi, WrittenThroughAHandleBoundToTheData) {
  // p = A's data; call_extern("fill", p): A is written.
  Ref<Buffer> a = buffer_1d("A", i32(4));
  Ref<Var> p = make_var("p", DataType::handle());
  Stmt body = make<LetStmt>(
      p, a->data,
      make<Evaluate>(call(DataType::int32(), Builtin::CallExtern, {make<StringImm>("fill"), p})));
  EXPECT_EQ(written_flags(make_func({a}, body)), (std::vector<bool>{true}));
}

TEST(MakePackedApiErrors, DimensionThatIsAnExpression) {
  Ref<Var> n = make_size_var("n");
  Ref<Buffer> a = decl_buffer({n * 2}, DataType::float32(), "A");
  Ref<PrimFunc> func = make_func({a}, make<Evaluate>(i32(0)));
  EXPECT_EQ(error_of([&] { make_packed_api(func, "f"); }),
            "make_packed_api: function f, parameter 0 (A): dimension 0 is n * 2; argument specs "
            "allow only constants and variables");
}

TEST(MakePackedApiErrors, StrideVariableThatIsNotADimension) {
  Ref<Var> s = make_size_var("s");
  Ref<Buffer> a = decl_buffer({i32(4), i32(4)}, DataType::float32(), "A");
  a->strides = {s, i32(1)};
  Ref<PrimFunc> func = make_func({a}, make<Evaluate>(i32(0)));
  EXPECT_EQ(error_of([&] { make_packed_api(func, "f"); }),
            "make_packed_api: function f, parameter 0 (A): stride 0 is the variable s, which is "
            "not a dimension of a tensor parameter");
}

TEST(MakePackedApiErrors, ElementOffset) {
  Ref<Buffer> a = decl_buffer({i32(4)}, DataType::float32(), "A");
  a->elem_offset = i32(2);
  Ref<PrimFunc> func = make_func({a}, make<Evaluate>(i32(0)));
  EXPECT_EQ(error_of([&] { make_packed_api(func, "f"); }),
            "make_packed_api: function f, parameter 0 (A): the element offset 2 is not zero; pass "
            "a view of the tensor instead");
}

TEST(MakePackedApiErrors, HandleScalar) {
  Ref<Var> p = make_var("p", DataType::handle());
  Ref<PrimFunc> func = make_func({p}, make<Evaluate>(i32(0)));
  EXPECT_EQ(error_of([&] { make_packed_api(func, "f"); }),
            "make_packed_api: function f, parameter 0 (p): a scalar parameter must be an integer, "
            "bool or float, found dtype handle");
}

TEST(MakePackedApiErrors, FreeVariable) {
  Ref<Var> m = make_var("m");
  Ref<Buffer> a = decl_buffer({i32(4)}, DataType::float32(), "A");
  Ref<PrimFunc> func = make_func({a}, make<Evaluate>(m));
  EXPECT_EQ(error_of([&] { make_packed_api(func, "f"); }),
            "make_packed_api: function f uses the variable m, which is neither a parameter nor a "
            "dimension of a tensor parameter");
}

}  // namespace
}  // namespace kiln::tir
