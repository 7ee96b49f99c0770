// Tests of IR serialization (kiln/ir/serialize.h): round trips of every node kind with equal
// structure and hash, exact constants and strings, the sharing of variables and buffers, the
// shape of the format, the errors of the writer and of the loader (with their paths), and a
// fuzzer that feeds the loader mutated and truncated documents.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <string>

#include "kiln/ir/functor.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/serialize.h"
#include "kiln/ir/structural.h"
#include "src/ir/serialize_reader.h"
#include "tests/cpp/ir/sample_funcs.h"

namespace kiln::ir {
namespace {

using Json = nlohmann::json;
using samples::add_buffer_param;
using samples::point;
using samples::range;

// The loaded copy of `node`, checked to be structurally equal with the same hash.
Ref<Node> round_trip(const Ref<Node>& node, bool map_free_vars = false) {
  std::string text = save_json(node);
  Ref<Node> loaded = load_json(text);
  EXPECT_EQ(structural_diff(node, loaded, map_free_vars), "");
  EXPECT_EQ(structural_hash(node, map_free_vars), structural_hash(loaded, map_free_vars));
  EXPECT_EQ(save_json(loaded), text) << "saving the loaded tree gives another document";
  return loaded;
}

// The message of the kiln::Error that `f` throws, after checking its kind.
std::string error_of(const std::function<void()>& f, ErrorKind kind = ErrorKind::kValue) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(kind)) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error was thrown";
  return "";
}

// --- A function with every kind of node ------------------------------------------------------

Ref<CommReducer> sum_reducer(DataType t) {
  auto r = make<CommReducer>();
  Ref<Var> x = make_var("x", t), y = make_var("y", t);
  r->lhs = {x};
  r->rhs = {y};
  r->result = {x + y};
  r->identity = {make_zero(t)};
  return r;
}

// Every expression and statement kind, in a function with a symbolic shape, a scalar parameter,
// a reduction block with init, an allocation and annotations of every value type.
Ref<PrimFunc> every_kind() {
  DataType f32 = DataType::float32(), i32 = DataType::int32();
  Ref<Var> n = make_size_var("n");
  Ref<Buffer> a = decl_buffer({n, int32_const(8)}, f32, "A");
  Ref<Buffer> b = decl_buffer({n}, f32, "B");
  Ref<Buffer> t = decl_buffer({int32_const(8)}, f32, "T", "local");
  Ref<Buffer> flat = decl_buffer({int32_const(64)}, f32, "flat");
  Ref<Var> scale = make_var("scale", f32);
  Ref<Var> i = make_var("i"), k = make_var("k"), vi = make_var("vi"), vk = make_var("vk");
  Ref<Var> x = make_var("x"), tmp = make_var("tmp");

  // Integer expressions of every binary kind, built with make<> so that nothing folds.
  Expr ints = make<Add>(i32, k, i);
  ints = make<Sub>(i32, ints, k);
  ints = make<Mul>(i32, ints, int32_const(3));
  ints = make<Div>(i32, ints, int32_const(2));
  ints = make<Mod>(i32, ints, int32_const(7));
  ints = make<FloorDiv>(i32, ints, int32_const(5));
  ints = make<FloorMod>(i32, ints, int32_const(9));
  ints = make<Min>(i32, ints, i);
  ints = make<Max>(i32, ints, k);
  Expr cond = make<EQ>(DataType::bool_(), ints, i);
  cond = make<Or>(DataType::bool_(), cond, make<NE>(DataType::bool_(), i, k));
  cond = make<And>(DataType::bool_(), cond, make<LT>(DataType::bool_(), i, n));
  cond = make<And>(DataType::bool_(), cond, make<LE>(DataType::bool_(), k, int32_const(8)));
  cond = make<Or>(DataType::bool_(), cond, make<GT>(DataType::bool_(), i, int32_const(1)));
  cond = make<Or>(DataType::bool_(), cond, make<GE>(DataType::bool_(), k, int32_const(0)));
  cond = make<Not>(DataType::bool_(), cond);

  Expr value = buffer_load(a, {vi, vk}) * make<FloatImm>(f32, 0.5);
  value = make<Select>(f32, cond, value, make<Cast>(f32, make<Let>(i32, x, ints, x * x)));
  value = call(Builtin::Exp, {value}) + scale;
  value = if_then_else(make<LT>(DataType::bool_(), vk, int32_const(4)), value, make_zero(f32));

  auto block = make<Block>();
  block->name = "B";
  block->iter_vars = {IterVar{vi, Range{int32_const(0), n}, IterType::kDataPar},
                      IterVar{vk, range(0, 8), IterType::kCommReduce}};
  block->reads = {BufferRegion{a, {point(vi), point(vk)}}};
  block->writes = {BufferRegion{b, {point(vi)}}};
  block->init = buffer_store(b, make_zero(f32), {vi});
  block->body = buffer_store(b, buffer_load(b, {vi}) + value, {vi});
  block->annotations = {{"meta", make<StringImm>("schedule_rule")}};
  Stmt nest = make<BlockRealize>(std::vector<Expr>{i, k}, bool_const(true), block);
  auto inner = make<For>(k, int32_const(0), int32_const(8), ForKind::kUnrolled, nest);
  inner->annotations = {{"pragma_auto_unroll_max_step", int32_const(16)},
                        {"ratio", make<FloatImm>(f32, 0.25)}};
  auto outer = make<For>(i, int32_const(0), n, ForKind::kParallel, Stmt(inner));

  // Lowered-style statements: vectors, an allocation, lets, an assert, an if, an extern call.
  Ref<Var> j = make_var("j");
  Expr lanes = make<Ramp>(DataType::int_(32, 8), j * 8, int32_const(1), 8);
  Stmt vector_store = buffer_store(
      flat, buffer_load(flat, {lanes}) + make<Broadcast>(DataType::float_(32, 8), scale, 8),
      {lanes});
  auto vector_loop =
      make<For>(j, int32_const(0), int32_const(8), ForKind::kVectorized, vector_store);
  auto bound = make<For>(make_var("tx"), int32_const(0), int32_const(4), ForKind::kThreadBinding,
                         make<Evaluate>(int32_const(0)));
  bound->thread_tag = "threadIdx.x";
  Stmt effects = seq({Stmt(vector_loop), Stmt(bound),
                      make<Evaluate>(call(DataType::int32(), Builtin::CallExtern,
                                          {make<StringImm>("printf"), make<StringImm>("done\n")})),
                      make<IfThenElse>(make<GT>(DataType::bool_(), n, int32_const(0)),
                                       buffer_store(t, make_zero(f32), {int32_const(0)})),
                      make<IfThenElse>(make<GT>(DataType::bool_(), n, int32_const(1)),
                                       buffer_store(t, make_one(f32), {int32_const(1)}),
                                       buffer_store(t, make_zero(f32), {int32_const(1)}))});
  Stmt lowered = make<LetStmt>(tmp, n * 2,
                               make<AssertStmt>(make<GE>(DataType::bool_(), tmp, int32_const(0)),
                                                "n is negative", make<Allocate>(flat, effects)));

  // A reduction expression (as TE bodies hold), evaluated for its value.
  Ref<Var> r = make_var("r");
  auto reduce = make<Reduce>(f32);
  reduce->combiner = sum_reducer(f32);
  reduce->source = {buffer_load(a, {int32_const(0), r})};
  reduce->axis = {IterVar{r, range(0, 8), IterType::kCommReduce}};
  reduce->condition = bool_const(true);

  auto f = make<PrimFunc>();
  add_buffer_param(f.get(), a);
  add_buffer_param(f.get(), b);
  f->params.push_back(scale);
  f->body = samples::root_block(seq({Stmt(outer), lowered, make<Evaluate>(Expr(reduce))}), {t});
  f->attrs = {{"global_symbol", make<StringImm>("every_kind")}, {"tir.noalias", bool_const(true)}};
  return f;
}

// The "kind" names found anywhere in a document.
void collect_kinds(const Json& j, std::set<std::string>* kinds) {
  if (j.is_object()) {
    auto it = j.find("kind");
    if (it != j.end() && it->is_string()) kinds->insert(it->get<std::string>());
    for (const auto& item : j) collect_kinds(item, kinds);
  } else if (j.is_array()) {
    for (const auto& item : j) collect_kinds(item, kinds);
  }
}

// --- Round trips -------------------------------------------------------------------------------

TEST(Serialize, EveryNodeKindRoundTrips) {
  Ref<PrimFunc> f = every_kind();
  auto mod = make<IRModule>();
  mod->functions["every_kind"] = f;
  mod->functions["matmul"] = samples::matmul(16);
  round_trip(mod);
  Ref<Buffer> buffer = f->buffer_map[0].second;
  round_trip(buffer, true);  // its shape names the free variable n

  std::set<std::string> kinds;
  collect_kinds(Json::parse(save_json(mod)), &kinds);
  collect_kinds(Json::parse(save_json(buffer)), &kinds);
  std::set<std::string> all;
#define KILN_ALL_KINDS(Name) all.insert(#Name);
  KILN_EXPR_NODE_LIST(KILN_ALL_KINDS)
  KILN_STMT_NODE_LIST(KILN_ALL_KINDS)
  KILN_OTHER_NODE_LIST(KILN_ALL_KINDS)
#undef KILN_ALL_KINDS
  for (const std::string& kind : all) EXPECT_TRUE(kinds.count(kind)) << kind << " not covered";
}

TEST(Serialize, SampleFunctionsRoundTrip) {
  round_trip(samples::matmul());
  round_trip(samples::scale_symbolic());
  Ref<Node> loaded = round_trip(load_prim_func(save_json(samples::matmul(64))));
  EXPECT_TRUE(loaded.is<PrimFunc>());
  // The loop's buffer is free (no function declares it): the loaded one is a new object, equal
  // when free variables may be mapped.
  Stmt loop = samples::vector_add_loop();
  Ref<Node> copy = load_json(save_json(loop));
  EXPECT_FALSE(structural_equal(loop, copy));
  EXPECT_TRUE(structural_equal(loop, copy, true));
  EXPECT_EQ(structural_hash(loop, true), structural_hash(copy, true));
}

TEST(Serialize, ExpressionsAndNullRoundTrip) {
  Ref<Var> x = make_var("x"), y = make_var("y", DataType::int64());
  round_trip(floordiv(x * 4 + 1, cast(DataType::int32(), y)), true);
  round_trip(make<StringImm>("global_symbol"));
  round_trip(sum_reducer(DataType::float32()));
  EXPECT_FALSE(load_json(save_json(nullptr)).defined());
  EXPECT_EQ(save_json(nullptr), R"({"kiln_ir_format":1,"vars":[],"buffers":[],"root":null})");
}

// --- Exact values ------------------------------------------------------------------------------

uint64_t bits_of(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
}

double from_bits(uint64_t bits) {
  double v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

TEST(Serialize, IntegersAreExact) {
  struct Case {
    DataType dtype;
    int64_t value;
  };
  const Case cases[] = {
      {DataType::int64(), std::numeric_limits<int64_t>::min()},
      {DataType::int64(), std::numeric_limits<int64_t>::max()},
      {DataType::int32(), -2147483648LL},
      {DataType::int_(8), -128},
      {DataType::uint(64), -1},  // 2^64 - 1: the bits of uint64's maximum
      {DataType::uint(64), std::numeric_limits<int64_t>::min()},  // 2^63
      {DataType::uint(32), 4294967295LL},
      {DataType::bool_(), 1},
  };
  for (const Case& c : cases) {
    Ref<Node> loaded = load_json(save_json(make<IntImm>(c.dtype, c.value)));
    const auto* imm = loaded.as<IntImm>();
    ASSERT_NE(imm, nullptr);
    EXPECT_EQ(imm->value, c.value) << c.dtype;
    EXPECT_EQ(imm->dtype, c.dtype);
  }
  EXPECT_NE(save_json(make<IntImm>(DataType::uint(64), -1)).find("18446744073709551615"),
            std::string::npos);
}

TEST(Serialize, FloatsAreExact) {
  const double values[] = {0.0,
                           -0.0,
                           0.1,
                           -1.5,
                           1e300,
                           -1e-300,
                           std::numeric_limits<double>::denorm_min(),
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::lowest(),
                           std::numeric_limits<double>::epsilon(),
                           1152921504606846976.0,  // 2^60, printed without an exponent
                           static_cast<double>(3.4028234663852886e38f),
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(),
                           -std::numeric_limits<double>::quiet_NaN(),
                           from_bits(0x7ff0000000000001ULL),  // a signalling NaN's payload
                           from_bits(0xfff8000000000abcULL)};
  for (double v : values) {
    for (DataType t : {DataType::float64(), DataType::float32()}) {
      Ref<Node> loaded = load_json(save_json(make<FloatImm>(t, v)));
      const auto* imm = loaded.as<FloatImm>();
      ASSERT_NE(imm, nullptr);
      EXPECT_EQ(bits_of(imm->value), bits_of(v)) << v;
      EXPECT_EQ(imm->dtype, t);
    }
  }
  std::string text = save_json(make<FloatImm>(DataType::float64(), -0.0));
  EXPECT_NE(text.find("\"value\":-0.0"), std::string::npos) << text;
  text = save_json(make<FloatImm>(DataType::float64(), 2.0));
  EXPECT_NE(text.find("\"value\":2.0"), std::string::npos) << text;
  text = save_json(make<FloatImm>(DataType::float64(), -HUGE_VAL));
  EXPECT_NE(text.find("\"value\":\"-inf\""), std::string::npos) << text;
}

TEST(Serialize, StringsKeepEveryByte) {
  std::string all_bytes;
  for (int c = 0; c < 256; ++c) all_bytes += static_cast<char>(c);
  const std::string values[] = {"",
                                std::string("nul\0inside", 10),
                                "quote \" backslash \\ newline \n tab \t \x01 \x1f \x7f",
                                "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",  // UTF-8
                                "\xff\xfe not UTF-8",
                                "\xed\xa0\x80 a surrogate",
                                "\xc0\xaf overlong",
                                "truncated \xe2\x82",
                                all_bytes};
  for (const std::string& s : values) {
    auto f = every_kind();
    auto copy = make<PrimFunc>(*f);
    copy->attrs[s] = make<StringImm>(s);
    Ref<Node> loaded = round_trip(copy);
    const auto& attrs = loaded.as<PrimFunc>()->attrs;
    ASSERT_TRUE(attrs.count(s));
    EXPECT_EQ(attrs.at(s).as<StringImm>()->value, s);

    auto v = make_var(s);
    Ref<Node> var = load_json(save_json(Expr(v)));
    EXPECT_EQ(var.as<Var>()->name, s);
    auto assert_stmt = make<AssertStmt>(bool_const(true), s, make<Evaluate>(int32_const(0)));
    EXPECT_EQ(load_json(save_json(Stmt(assert_stmt))).as<AssertStmt>()->message, s);
  }
  EXPECT_NE(save_json(make<StringImm>("\xff")).find(R"({"hex":"ff"})"), std::string::npos);
}

TEST(Serialize, DtypesRoundTrip) {
  for (DataType t :
       {DataType::float_(32, 8), DataType::int_(8, 4), DataType::bfloat16(), DataType::float_(16),
        DataType::uint(16, 2), DataType::bool_(32), DataType::handle(), DataType::void_()}) {
    Ref<Var> v = make_var("v", t);
    Ref<Node> loaded = load_json(save_json(Expr(v)));
    EXPECT_EQ(loaded.as<Var>()->dtype, t) << t;
  }
}

// --- Sharing -----------------------------------------------------------------------------------

TEST(Serialize, VariablesAndBuffersKeepTheirIdentity) {
  Ref<PrimFunc> f = samples::matmul(16);
  auto loaded = load_prim_func(save_json(f));
  // The buffer of the parameter C is the one the block writes and the body loads and stores.
  Ref<Buffer> c = loaded->buffer_map[2].second;
  EXPECT_TRUE(loaded->buffer_map[2].first.same_as(loaded->params[2]));
  const auto* root = loaded->body.as<BlockRealize>();
  const For* loop = root->block->body.as<For>();
  const For* loop_j = loop->body.as<For>();
  const For* loop_k = loop_j->body.as<For>();
  const auto* realize = loop_k->body.as<BlockRealize>();
  EXPECT_TRUE(realize->block->writes[0].buffer.same_as(c));
  const auto* store = realize->block->body.as<BufferStore>();
  EXPECT_TRUE(store->buffer.same_as(c));
  EXPECT_TRUE(store->value.as<Add>()->a.as<BufferLoad>()->buffer.same_as(c));
  // The loop variable i is the value bound to the block's first iterator.
  EXPECT_TRUE(realize->iter_values[0].same_as(loop->loop_var));
  // Block iterator vi appears in the regions, the init and the body: one object.
  const Var* vi = realize->block->iter_vars[0].var.get();
  EXPECT_EQ(realize->block->writes[0].region[0].min.get(), vi);
  EXPECT_EQ(store->indices[0].get(), vi);
  EXPECT_EQ(realize->block->init.as<BufferStore>()->indices[0].get(), vi);
  EXPECT_NE(vi, f->body.as<BlockRealize>()->block->body.as<For>()->loop_var.get());
}

TEST(Serialize, VariablesWithOneNameStayDistinct) {
  Ref<Var> a = make_var("x"), b = make_var("x");
  Expr e = make<Add>(DataType::int32(), make<Add>(DataType::int32(), a, b), a);
  Ref<Node> loaded = round_trip(e, true);
  const auto* sum = loaded.as<Add>();
  const auto* inner = sum->a.as<Add>();
  EXPECT_TRUE(inner->a.same_as(sum->b));
  EXPECT_FALSE(inner->a.same_as(inner->b));
  // Saving keeps one table entry per variable object, not per name.
  Json doc = Json::parse(save_json(e));
  EXPECT_EQ(doc["vars"].size(), 2u);
}

// --- The format --------------------------------------------------------------------------------

TEST(Serialize, DocumentsNameKindsAndCarryTheVersion) {
  Json doc = Json::parse(save_json(samples::matmul(16)));
  EXPECT_EQ(doc["kiln_ir_format"], kSerializedFormatVersion);
  EXPECT_EQ(doc["root"]["kind"], "PrimFunc");
  const Json& block = doc["root"]["body"]["block"];
  EXPECT_EQ(block["kind"], "Block");
  EXPECT_EQ(block["body"]["kind"], "For");
  EXPECT_EQ(block["body"]["for_kind"], "serial");
  EXPECT_EQ(doc["buffers"].size(), 3u);
  EXPECT_EQ(doc["buffers"][0]["name"], "A");
  EXPECT_EQ(doc["buffers"][0]["shape"][0]["kind"], "IntImm");
  std::string scalar = save_json(make<Add>(DataType::int32(), make_var("x"), int32_const(1)));
  EXPECT_EQ(scalar,
            R"({"kiln_ir_format":1,"vars":[{"name":"x","dtype":"int32","size_var":false}],)"
            R"("buffers":[],"root":{"kind":"Add","dtype":"int32","a":{"kind":"Var","var":0},)"
            R"("b":{"kind":"IntImm","dtype":"int32","value":1}}})");
}

// --- Errors of the writer ----------------------------------------------------------------------

TEST(SerializeErrors, WriterRefusesWhatItCannotWriteFaithfully) {
  auto loop = make<For>(make_var("i"), nullptr, int32_const(4), ForKind::kSerial,
                        make<Evaluate>(int32_const(0)));
  EXPECT_EQ(error_of([&] { save_json(Stmt(loop)); }),
            "save_json: For.min is null; the IR allows null only in IfThenElse.else_case, "
            "Block.init, Buffer.elem_offset and Reduce.condition");

  Ref<Buffer> self = decl_buffer({int32_const(4)}, DataType::int32(), "S");
  self->shape = {buffer_load(self, {int32_const(0)})};
  std::string message = error_of([&] { save_json(self); });
  EXPECT_NE(message.find("save_json: buffer \"S\" refers to itself"), std::string::npos) << message;
  self->shape.clear();  // break the reference cycle

  Ref<Var> odd = make_var("odd", DataType(DataType::kInt, 4));
  EXPECT_EQ(error_of([&] { save_json(Expr(odd)); }),
            "save_json: the dtype with code 0, 4 bits and 1 lanes has no text form that reads "
            "back as the same dtype");

  Expr deep = make_var("x");
  for (int i = 0; i < kMaxSerializedDepth; ++i) deep = make<Not>(DataType::bool_(), deep);
  message = error_of([&] { save_json(deep); });
  EXPECT_NE(message.find("nested deeper than"), std::string::npos) << message;
}

// --- Errors of the loader ----------------------------------------------------------------------

// The document of a small function, as JSON to edit.
Json matmul_doc() {
  return Json::parse(save_json(samples::matmul(16)));
}

std::string load_error(const Json& doc) {
  return error_of([&] { load_json(doc.dump()); });
}

TEST(SerializeErrors, TextThatIsNotADocument) {
  std::string message = error_of([] { load_json("{\"kiln_ir_format\": 1, "); });
  EXPECT_EQ(message.rfind("load_json: the text is not valid JSON: ", 0), 0u) << message;
  EXPECT_EQ(error_of([] { load_json("[1, 2]"); }),
            "load_json: at $: expected a kiln IR document (a JSON object with "
            "\"kiln_ir_format\"), found an array of 2 items");
  EXPECT_EQ(error_of([] { load_json("{\"version\": 1}"); }),
            "load_json: at $: missing field \"kiln_ir_format\"; this JSON is not a kiln IR "
            "document (save_json writes one)");
  Json doc = matmul_doc();
  doc["kiln_ir_format"] = 2;
  EXPECT_EQ(load_error(doc),
            "load_json: at $.kiln_ir_format: the document is in kiln IR format version 2, but "
            "this kiln reads version 1 (the document was written by a newer kiln)");
  doc = matmul_doc();
  doc["kiln_ir_format"] = "1";
  EXPECT_EQ(load_error(doc),
            "load_json: at $.kiln_ir_format: expected an integer in [0, 9223372036854775807], "
            "found the string \"1\"");
}

TEST(SerializeErrors, KindsAndFamilies) {
  Json doc = matmul_doc();
  doc["root"]["body"]["block"]["body"]["kind"] = "Loop";
  EXPECT_EQ(load_error(doc),
            "load_json: at $.root.body.block.body.kind: expected the name of a node kind, such "
            "as \"Add\", found the string \"Loop\"");
  doc = matmul_doc();
  doc["root"]["body"]["block"]["body"]["extent"] = doc["root"]["body"];
  EXPECT_EQ(load_error(doc),
            "load_json: at $.root.body.block.body.extent.kind: expected an expression, found a "
            "BlockRealize");
  doc = matmul_doc();
  doc["root"]["body"]["block"] = doc["root"]["body"]["block"]["body"];
  EXPECT_EQ(load_error(doc), "load_json: at $.root.body.block.kind: expected a Block, found a For");
  EXPECT_EQ(
      error_of([] { load_prim_func(save_json(samples::vector_add_loop())); }, ErrorKind::kType),
      "load_prim_func: the document holds a For, not a PrimFunc");
  EXPECT_EQ(error_of([] { load_module(save_json(samples::matmul(4))); }, ErrorKind::kType),
            "load_module: the document holds a PrimFunc, not an IRModule");
}

TEST(SerializeErrors, MissingExtraAndMistypedFields) {
  Json doc = matmul_doc();
  doc["root"]["body"]["block"]["body"].erase("min");
  EXPECT_EQ(load_error(doc), "load_json: at $.root.body.block.body: missing field \"min\"");
  doc = matmul_doc();
  doc["root"]["body"]["block"]["body"]["step"] = 1;
  EXPECT_EQ(load_error(doc), "load_json: at $.root.body.block.body: unexpected field \"step\"");
  doc = matmul_doc();
  doc["root"]["body"]["block"]["body"]["for_kind"] = "sequential";
  EXPECT_EQ(load_error(doc),
            "load_json: at $.root.body.block.body.for_kind: expected a loop kind (\"serial\", "
            "\"parallel\", \"vectorized\", \"unroll\", \"thread_binding\"), found the string "
            "\"sequential\"");
  doc = matmul_doc();
  doc["root"]["body"]["block"]["body"]["min"]["value"] = 1.5;
  EXPECT_EQ(load_error(doc),
            "load_json: at $.root.body.block.body.min.value: expected an integer in "
            "[-9223372036854775808, 9223372036854775807], found the number 1.5");
  doc = matmul_doc();
  doc["root"]["body"]["block"]["body"]["min"]["dtype"] = "int33";
  EXPECT_EQ(load_error(doc),
            "load_json: at $.root.body.block.body.min.dtype: expected a dtype such as "
            "\"float32\", \"int8x4\", \"bool\", \"handle\" or \"void\", found the string "
            "\"int33\"");
  doc = matmul_doc();
  doc["root"]["body"]["block"]["body"]["body"] = nullptr;
  EXPECT_EQ(load_error(doc),
            "load_json: at $.root.body.block.body.body: expected a statement (an object with "
            "\"kind\"), found null");
  std::string text = save_json(samples::matmul(16));
  size_t at = text.find("\"kind\":\"PrimFunc\"");
  text.insert(at, "\"kind\":\"PrimFunc\",");
  EXPECT_EQ(error_of([&] { load_json(text); }),
            "load_json: at $.root: the field \"kind\" appears twice");
  doc = matmul_doc();
  doc["vars"][0]["size_var"] = 0;
  EXPECT_EQ(load_error(doc),
            "load_json: at $.vars[0].size_var: expected true or false, found the number 0");
  doc = matmul_doc();
  doc["buffers"][1]["name"] = {{"hex", "4g"}};
  EXPECT_EQ(load_error(doc),
            "load_json: at $.buffers[1].name: expected a string or {\"hex\": \"<pairs of hex "
            "digits>\"}, found an object");
}

TEST(SerializeErrors, DanglingReferences) {
  Json doc = matmul_doc();
  size_t vars = doc["vars"].size();
  doc["root"]["params"][1] = vars;
  EXPECT_EQ(load_error(doc),
            "load_json: at $.root.params[1]: expected an index into \"vars\" (0 "
            "to " +
                std::to_string(vars - 1) + "), found the number " + std::to_string(vars));
  doc = matmul_doc();
  doc["root"]["buffer_map"][0][1] = -1;
  EXPECT_EQ(load_error(doc),
            "load_json: at $.root.buffer_map[0][1]: expected an index into \"buffers\" (0 to 2), "
            "found the number -1");
  doc = matmul_doc();
  doc["buffers"][0]["shape"][0] = {
      {"kind", "BufferLoad"},
      {"dtype", "float32"},
      {"buffer", 2},
      {"indices", Json::array({doc["buffers"][0]["shape"][0], doc["buffers"][0]["shape"][0]})}};
  EXPECT_EQ(load_error(doc),
            "load_json: at $.buffers[0].shape[0].buffer: refers to buffer 2 from entry 0 of "
            "\"buffers\"; an entry may refer only to entries before it");
  doc = matmul_doc();
  doc["vars"] = Json::array();
  EXPECT_EQ(load_error(doc),
            "load_json: at $.buffers[0].data: expected an index into \"vars\", which is empty, "
            "found the number " +
                doc["buffers"][0]["data"].dump());
  doc = matmul_doc();
  doc["root"]["buffer_map"][0][0] = doc["root"]["body"]["block"]["body"]["loop_var"];
  std::string message = load_error(doc);
  EXPECT_NE(message.find("at $.root.buffer_map[0][0]: variable \"i\" is not a parameter"),
            std::string::npos)
      << message;
}

TEST(SerializeErrors, StructureLaterCodeReliesOn) {
  Json doc = matmul_doc();
  Json& store = doc["root"]["body"]["block"]["body"]["body"]["body"]["body"]["block"]["body"];
  ASSERT_EQ(store["kind"], "BufferStore");
  store["indices"].erase(1);
  EXPECT_EQ(load_error(doc),
            "load_json: at $.root.body.block.body.body.body.body.block.body.indices: 1 indices "
            "for the 2-dimensional buffer \"C\"");
  doc = matmul_doc();
  Json& realize = doc["root"]["body"]["block"]["body"]["body"]["body"]["body"];
  realize["iter_values"].erase(2);
  EXPECT_EQ(load_error(doc),
            "load_json: at $.root.body.block.body.body.body.body.iter_values: 2 values for the 3 "
            "iterators of block \"C\"");
  doc = matmul_doc();
  doc["root"]["body"]["block"]["body"]["min"] = {
      {"kind", "Call"}, {"dtype", "float32"}, {"op", "exp"}, {"args", Json::array()}};
  EXPECT_EQ(load_error(doc),
            "load_json: at $.root.body.block.body.min.args: exp takes 1 argument, found 0");
  doc = matmul_doc();
  doc["root"]["body"]["block"]["body"]["min"] = {
      {"kind", "IntImm"}, {"dtype", "int8"}, {"value", 300}};
  EXPECT_EQ(load_error(doc),
            "load_json: at $.root.body.block.body.min.value: the constant 300 does not fit int8 "
            "(its range is [-128, 127])");
  doc = matmul_doc();
  doc["root"]["attrs"] = Json::array({Json::array({"a", doc["buffers"][0]["shape"][0]}),
                                      Json::array({"a", doc["buffers"][0]["shape"][0]})});
  EXPECT_EQ(load_error(doc), "load_json: at $.root.attrs[1]: the name \"a\" appears twice");
  // Names may hold any bytes; messages quote them as UTF-8 (a Python exception needs it).
  doc["root"]["attrs"][0][0] = {{"hex", "ff0a41"}};
  doc["root"]["attrs"][1][0] = {{"hex", "ff0a41"}};
  EXPECT_EQ(load_error(doc),
            "load_json: at $.root.attrs[1]: the name \"\\xff\\x0aA\" appears twice");
}

TEST(SerializeErrors, NestingDepthIsBounded) {
  // Just under the limit loads (the loader's recursion fits the stack); one more is refused.
  auto nested = [](int depth) {
    std::string text = R"({"kiln_ir_format":1,"vars":[],"buffers":[],"root":)";
    for (int i = 1; i < depth; ++i) text += R"({"kind":"Not","dtype":"bool","a":)";
    text += R"({"kind":"IntImm","dtype":"bool","value":1})";
    text += std::string(static_cast<size_t>(depth - 1), '}');
    return text + "}";
  };
  Ref<Node> deep = load_json(nested(kMaxSerializedDepth));
  EXPECT_TRUE(deep.is<Not>());
  std::string message = error_of([&] { load_json(nested(kMaxSerializedDepth + 1)); });
  EXPECT_NE(message.find("the tree is nested deeper than " + std::to_string(kMaxSerializedDepth) +
                         " nodes"),
            std::string::npos)
      << message.substr(0, 200);
}

// --- A fuzzer of the loader --------------------------------------------------------------------

// Every value of a document, for the structural mutations.
void collect_values(Json& j, std::vector<Json*>* values) {
  values->push_back(&j);
  if (j.is_object() || j.is_array()) {
    for (auto& item : j) collect_values(item, values);
  }
}

// One mutation of the document: a change of a value's type or number, a swap with another
// subtree, a removed field or item, or damage to the text (done by the caller).
void mutate(Json& doc, std::mt19937_64& rng) {
  std::vector<Json*> values;
  collect_values(doc, &values);
  Json& target = *values[rng() % values.size()];
  switch (rng() % 8) {
    case 0:
      target = nullptr;
      break;
    case 1:
      target = *values[rng() % values.size()];  // a copy of another subtree
      break;
    case 2:
      if (target.is_number_integer()) {
        target = target.get<int64_t>() + static_cast<int64_t>(rng() % 5) - 2;
      } else {
        target = static_cast<int64_t>(rng() % 7);
      }
      break;
    case 3:
      if (target.is_object() && !target.empty()) {
        auto it = target.begin();
        std::advance(it, static_cast<long>(rng() % target.size()));
        target.erase(it);
      }
      break;
    case 4:
      if (target.is_array() && !target.empty()) target.erase(rng() % target.size());
      break;
    case 5: {
      const char* words[] = {"Add", "For", "Block", "float32", "int64", "x", "", "inf", "nan(0x1)"};
      target = words[rng() % (sizeof(words) / sizeof(words[0]))];
      break;
    }
    case 6:
      target = rng() % 2 == 0 ? Json(1e308) : Json(std::numeric_limits<uint64_t>::max());
      break;
    default:
      if (target.is_array()) target.push_back(target.empty() ? Json(0) : target[0]);
      break;
  }
}

// Text damage: a byte changed, a range removed or repeated, or the text cut short.
std::string damage(std::string text, std::mt19937_64& rng) {
  if (text.empty()) return text;
  size_t at = rng() % text.size();
  switch (rng() % 4) {
    case 0: {
      const char bytes[] = "{}[],:\"\\0123456789-+.eE \xff\x80";
      text[at] = bytes[rng() % (sizeof(bytes) - 1)];
      break;
    }
    case 1:
      text.erase(at, 1 + rng() % 16);
      break;
    case 2:
      text.insert(at, text.substr(at, 1 + rng() % 32));
      break;
    default:
      text.resize(at);
      break;
  }
  return text;
}

// The value the loader's JSON parser reads, as an nlohmann::json to compare (a repeated name in
// an object keeps its last value, as nlohmann does).
Json to_nlohmann(const serialize::JsonValue& v) {
  using Type = serialize::JsonValue::Type;
  switch (v.type()) {
    case Type::kNull:
      return nullptr;
    case Type::kBool:
      return v.as_bool();
    case Type::kInt:
      return v.as_int();
    case Type::kUint:
      return v.as_uint();
    case Type::kFloat:
      return v.as_double();
    case Type::kString:
      return std::string(v.text());
    case Type::kArray: {
      Json array = Json::array();
      for (size_t i = 0; i < v.size(); ++i) array.push_back(to_nlohmann(v[i]));
      return array;
    }
    case Type::kObject: {
      Json object = Json::object();
      for (size_t i = 0; i < v.size(); ++i) object[std::string(v[i].key())] = to_nlohmann(v[i]);
      return object;
    }
  }
  return nullptr;
}

// Whether the loader's parser and nlohmann agree on `text`: both refuse it, or both read the
// same value. Numbers beyond a double, which nlohmann reads as inf, are refused by ours.
void expect_same_parse(const std::string& text) {
  Json expected;
  bool nlohmann_ok = true;
  try {
    expected = Json::parse(text);
  } catch (const Json::exception&) {
    nlohmann_ok = false;
  }
  try {
    serialize::JsonDocument doc(text, "load_json");
    ASSERT_TRUE(nlohmann_ok) << "accepted what nlohmann refuses: " << text;
    EXPECT_EQ(to_nlohmann(doc.root()), expected) << text;
  } catch (const Error& e) {
    std::string message = e.what();
    ASSERT_EQ(message.rfind("load_json: the text is not valid JSON: ", 0), 0u) << message;
    if (message.find("too large for a double") != std::string::npos) return;
    EXPECT_FALSE(nlohmann_ok) << "refused what nlohmann accepts: " << text << "\n" << message;
  }
}

TEST(SerializeJson, ParserAgreesWithNlohmann) {
  const char* cases[] = {"",
                         " ",
                         "{}",
                         "[]",
                         " [ 1 , 2 ] ",
                         "[1,]",
                         "{\"a\":1,}",
                         "{\"a\" 1}",
                         "[1 2]",
                         "01",
                         "-0",
                         "-",
                         "1.",
                         ".5",
                         "1e",
                         "1e+",
                         "1E-2",
                         "-0.0",
                         "1e-400",
                         "18446744073709551615",
                         "18446744073709551616",
                         "-9223372036854775808",
                         "-9223372036854775809",
                         "123456789012345678901234567890",
                         "true",
                         "tru",
                         "nul",
                         "null x",
                         "\"\\ud800\"",
                         "\"\\udc00\"",
                         "\"\\ud83d\\ude00\"",
                         "\"\\u00e9\\/\\b\\f\\n\\r\\t\\\"\\\\\"",
                         "\"\\x\"",
                         "\"tab\there\"",
                         "\"caf\xc3\xa9\"",
                         "\"\xff\"",
                         "\"\xed\xa0\x80\"",
                         "\"\xf4\x90\x80\x80\"",
                         "\"unterminated",
                         "{\"a\":1,\"a\":2}",
                         "[[[[]]], {\"b\": [null, true, false, {}]}]"};
  for (const char* text : cases) expect_same_parse(text);

  const std::string seeds[] = {save_json(every_kind()), save_json(samples::matmul(8))};
  std::mt19937_64 rng(7);
  for (int iteration = 0; iteration < 2000; ++iteration) {
    std::string text = seeds[iteration % 2];
    int count = 1 + static_cast<int>(rng() % 3);
    for (int d = 0; d < count; ++d) text = damage(text, rng);
    expect_same_parse(text);
  }
}

TEST(SerializeJson, DeepNestingCostsNoStack) {
  // The parser keeps open containers on the heap: two hundred thousand levels parse (and a document
  // that deep is then refused by the loader at its first level, without recursion).
  std::string deep = std::string(200000, '[') + std::string(200000, ']');
  serialize::JsonDocument doc(deep, "load_json");
  const serialize::JsonValue* v = &doc.root();
  int depth = 1;
  while (v->size() == 1) {
    v = &(*v)[0];
    ++depth;
  }
  EXPECT_EQ(depth, 200000);
  EXPECT_EQ(error_of([&] { load_json(deep); }),
            "load_json: at $: expected a kiln IR document (a JSON object with "
            "\"kiln_ir_format\"), found an array of 1 item");
  EXPECT_EQ(error_of([&] { load_json(deep.substr(0, 300000)); }),
            "load_json: the text is not valid JSON: expected ',' or ']' in an array at the end "
            "of the text");
}

TEST(SerializeFuzz, MutatedDocumentsGiveErrorsNeverCrashes) {
  const std::string seeds[] = {save_json(every_kind()), save_json(samples::matmul(8)),
                               save_json(samples::scale_symbolic()),
                               save_json(samples::vector_add_loop())};
  std::mt19937_64 rng(20240611);
  int loaded = 0, refused = 0;
  for (int iteration = 0; iteration < 4000; ++iteration) {
    const std::string& seed = seeds[iteration % 4];
    std::string text;
    if (iteration % 3 == 0) {
      text = damage(seed, rng);
    } else {
      Json doc = Json::parse(seed);
      int count = 1 + static_cast<int>(rng() % 3);
      for (int m = 0; m < count; ++m) mutate(doc, rng);
      text = doc.dump();
    }
    try {
      Ref<Node> node = load_json(text);
      // What loads is usable by the tools that take any tree.
      structural_hash(node);
      structural_equal(node, node);
      to_script_node(node);
      EXPECT_EQ(save_json(load_json(save_json(node))), save_json(node));
      ++loaded;
    } catch (const Error& e) {
      ASSERT_EQ(static_cast<int>(e.kind()), static_cast<int>(ErrorKind::kValue))
          << e.what() << "\nfor the document\n"
          << text;
      ASSERT_EQ(std::string(e.what()).rfind("load_json: ", 0), 0u) << e.what();
      ++refused;
    }
  }
  // Both outcomes happen: the mutations reach past the parser into the checks.
  EXPECT_GT(refused, 1000);
  EXPECT_GT(loaded, 50);
}

}  // namespace
}  // namespace kiln::ir
