// CUDA tensor-core intrinsics: a warp multiplies 16x16 float16 (or bfloat16) tiles into a float32
// accumulator with two mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 (.bf16.bf16), or 16x32
// int8 (or uint8 times int8) tiles into an int32 one with two
// mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 (.u8.s8), on fragments held in the warp's
// registers (see "The fragments" in intrinsics.h), with the loads of the fragments from a tile
// in memory, the fill of the accumulator and its store.
//
// Every implementation is a loop over the 32 lanes of a warp bound to threadIdx.x: a schedule
// that tensorizes with them launches threadIdx.x with extent 32 (one warp) and spreads warps
// over threadIdx.y/z. The loads, fill and store are plain per-lane code that any GPU runs; the
// multiply-accumulate is the ptx_mma builtin, which only CUDA code for sm_80 or newer has.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "kiln/ir/buffer.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/tensor_intrin.h"
#include "schedule/intrin/intrinsics.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

BufferRegion point(const Ref<Buffer>& buffer, std::vector<Expr> indices) {
  BufferRegion region{buffer, {}};
  for (Expr& index : indices) region.region.push_back(Range{std::move(index), int32_const(1)});
  return region;
}

// What a description block does at its iterators: its statement and the elements it touches.
struct TileAccess {
  Stmt body;
  std::vector<BufferRegion> reads, writes;
};

// for i, j, ... in T.grid(extents...): with T.block(name): the iterators over the loops, one per
// entry of `types`, around `access(iterators)`.
Stmt tile_block(const std::string& name, const std::vector<IterType>& types,
                const std::vector<int64_t>& extents,
                const std::function<TileAccess(const std::vector<Expr>&)>& access) {
  static const char* loop_names[] = {"i", "j", "k"};
  std::vector<Ref<Var>> loops;
  std::vector<Expr> values, iters;
  auto block = make<Block>();
  block->name = name;
  for (size_t d = 0; d < types.size(); ++d) {
    Ref<Var> loop = make_var(loop_names[d]);
    Ref<Var> iter = make_var(std::string("v") + loop_names[d]);
    loops.push_back(loop);
    values.push_back(loop);
    iters.push_back(iter);
    block->iter_vars.push_back(
        IterVar{iter, Range{int32_const(0), int32_const(extents[d])}, types[d]});
  }
  TileAccess body = access(iters);
  block->reads = body.reads;
  block->writes = body.writes;
  block->body = body.body;
  Stmt nest = make<BlockRealize>(values, bool_const(true), block);
  for (size_t d = loops.size(); d-- > 0;) {
    nest = make<For>(loops[d], int32_const(0), int32_const(extents[d]), ForKind::kSerial, nest);
  }
  return nest;
}

// for e in T.unroll(4 g): body(e), the elements of one lane's fragment of `dtype`.
Stmt for_each_element(DataType dtype, const std::function<Stmt(const Expr&)>& body) {
  Ref<Var> e = make_var("e");
  return make<For>(e, int32_const(0), int32_const(4 * mma_group(dtype)), ForKind::kUnrolled,
                   body(e));
}

// The extents of a buffer of constant shape.
std::vector<int64_t> extents_of(const Buffer& b) {
  std::vector<int64_t> out;
  for (const Expr& e : b.shape) out.push_back(*as_const_int(e));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Loads: a tile S of memory (16 x 8 g: 16x16 float16 or bfloat16, 16x32 int8) into the fragment
// W. `transposed` reads a tile of B stored as [K, N] (S[k, n], 8 g x 16) into the fragment of B
// as [N, K].

Ref<PrimFunc> load_desc(const Ref<Buffer>& s, const Ref<Buffer>& w, bool transposed) {
  int g = mma_group(s->dtype);
  Stmt body = tile_block(
      "load", {IterType::kDataPar, IterType::kDataPar}, extents_of(*s),
      [&](const std::vector<Expr>& v) {
        const Expr& row = transposed ? v[1] : v[0];
        const Expr& col = transposed ? v[0] : v[1];
        std::vector<Expr> to = {mma_fragment_lane(row, col, g), mma_fragment_element(row, col, g)};
        return TileAccess{buffer_store(w, buffer_load(s, {v[0], v[1]}), to),
                          {point(s, {v[0], v[1]})},
                          {point(w, to)}};
      });
  return intrin_function({s, w}, body);
}

Ref<PrimFunc> load_impl(const Ref<Buffer>& s, const Ref<Buffer>& w, bool transposed) {
  int g = mma_group(s->dtype);
  Stmt body = for_each_lane([&](const Expr& lane) {
    return for_each_element(s->dtype, [&](const Expr& e) {
      Expr row = mma_fragment_row(lane, e, g), col = mma_fragment_col(lane, e, g);
      std::vector<Expr> from =
          transposed ? std::vector<Expr>{col, row} : std::vector<Expr>{row, col};
      return buffer_store(w, buffer_load(s, from), {lane, e});
    });
  });
  return intrin_function({s, w}, body);
}

// The same loads with one ldmatrix.x4 per lane. Its four 8x8 matrices of 16-bit words (8 rows of
// 16 bytes: 8 halves or 16 int8), in the order of the fragment's registers, are rows 0-7 / the
// first 16 bytes, rows 8-15 / the first 16 bytes, rows 0-7 / the next 16, rows 8-15 / the next
// 16 of the fragment's tile (of A, or of B as [N, K]); lane l gives the address of row l % 8 of
// matrix l / 8. A float16 tile of B stored as [K, N] is loaded with .trans: its matrix m holds
// rows (k) 8 (m / 2) .. and columns (n) 8 (m % 2) .. (8-bit elements have no .trans).

Ref<PrimFunc> ldmatrix_impl(const Ref<Buffer>& s, const Ref<Buffer>& w, bool transposed) {
  auto c = [](int64_t v) { return int32_const(v); };
  int row_elements = 4 * mma_group(s->dtype);  // 16 bytes
  Stmt body = for_each_lane([&](const Expr& lane) {
    Expr matrix = floordiv(lane, c(8)), row_of_matrix = floormod(lane, c(8));
    Expr row = transposed ? row_of_matrix + floordiv(matrix, c(2)) * 8
                          : row_of_matrix + floormod(matrix, c(2)) * 8;
    Expr col = transposed ? floormod(matrix, c(2)) * 8 : floordiv(matrix, c(2)) * row_elements;
    Expr loaded =
        call(s->dtype.with_lanes(row_elements), Builtin::PtxLdmatrix,
             {c(transposed ? 1 : 0), buffer_load(s, {row, ramp(col, c(1), row_elements)})});
    return buffer_store(w, loaded, {lane, ramp(c(0), c(1), row_elements)});
  });
  return intrin_function({s, w}, body);
}

// ---------------------------------------------------------------------------------------------
// The multiply-accumulate: per lane, two ptx_mma, one for each 8 columns of the accumulator.

// The shape and types of the PTX instruction for operands A, B of `a`, `b`: float16 or bfloat16
// (float32 accumulators), int8 or uint8 times int8 (int32 accumulators).
std::string mma_shape(DataType a, DataType b) {
  if (a.is_bfloat16()) return "m16n8k16.row.col.f32.bf16.bf16.f32";
  if (a.is_float16()) return "m16n8k16.row.col.f32.f16.f16.f32";
  return std::string("m16n8k32.row.col.s32.") + (a.is_uint() ? "u8" : "s8") + "." +
         (b.is_uint() ? "u8" : "s8") + ".s32";
}

Ref<PrimFunc> mma_sync_impl(const Ref<Buffer>& a, const Ref<Buffer>& b, const Ref<Buffer>& c) {
  Stmt body = for_each_lane([&](const Expr& lane) {
    // Register r of a fragment: its elements g r .. g r + g - 1, one .b32 of g values.
    auto reg = [&lane](const Ref<Buffer>& fragment, int r) {
      int g = mma_group(fragment->dtype);
      return buffer_load(fragment, {lane, ramp(int32_const(g * r), int32_const(1), g)});
    };
    std::vector<Stmt> halves;
    for (int n = 0; n < 2; ++n) {
      Expr acc = ramp(int32_const(4 * n), int32_const(1), 4);
      Expr mma =
          call(c->dtype.with_lanes(4), Builtin::PtxMma,
               {make<StringImm>(mma_shape(a->dtype, b->dtype)), reg(a, 0), reg(a, 1), reg(a, 2),
                reg(a, 3), reg(b, n), reg(b, n + 2), buffer_load(c, {lane, acc})});
      halves.push_back(buffer_store(c, mma, {lane, acc}));
    }
    return seq(halves);
  });
  return intrin_function({a, b, c}, body);
}

// ---------------------------------------------------------------------------------------------
// The fill of the accumulator (float32 or int32) with zeros and its store into a 16x16 tile D
// of memory.

Ref<PrimFunc> fill_desc(const Ref<Buffer>& c) {
  Stmt body = tile_block(
      "fill", {IterType::kDataPar, IterType::kDataPar}, {kMmaTile, kMmaTile},
      [&](const std::vector<Expr>& v) {
        std::vector<Expr> at = {mma_fragment_lane(v[0], v[1]), mma_fragment_element(v[0], v[1])};
        return TileAccess{buffer_store(c, make_zero(c->dtype), at), {}, {point(c, at)}};
      });
  return intrin_function({c}, body);
}

Ref<PrimFunc> fill_impl(const Ref<Buffer>& c) {
  Stmt body = for_each_lane([&](const Expr& lane) {
    return for_each_element(c->dtype, [&](const Expr& e) {
      return buffer_store(c, make_zero(c->dtype), {lane, e});
    });
  });
  return intrin_function({c}, body);
}

Ref<PrimFunc> store_desc(const Ref<Buffer>& c, const Ref<Buffer>& d) {
  Stmt body = tile_block(
      "store", {IterType::kDataPar, IterType::kDataPar}, {kMmaTile, kMmaTile},
      [&](const std::vector<Expr>& v) {
        std::vector<Expr> from = {mma_fragment_lane(v[0], v[1]), mma_fragment_element(v[0], v[1])};
        return TileAccess{buffer_store(d, buffer_load(c, from), {v[0], v[1]}),
                          {point(c, from)},
                          {point(d, {v[0], v[1]})}};
      });
  return intrin_function({c, d}, body);
}

Ref<PrimFunc> store_impl(const Ref<Buffer>& c, const Ref<Buffer>& d) {
  Stmt body = for_each_lane([&](const Expr& lane) {
    return for_each_element(c->dtype, [&](const Expr& e) {
      return buffer_store(d, buffer_load(c, {lane, e}),
                          {mma_fragment_row(lane, e), mma_fragment_col(lane, e)});
    });
  });
  return intrin_function({c, d}, body);
}

// A rows x cols tile of memory.
Ref<Buffer> tile(int64_t rows, int64_t cols, DataType dtype, const std::string& name,
                 const std::string& scope) {
  return decl_buffer({int32_const(rows), int32_const(cols)}, dtype, name, scope);
}

// The "16x16_f16"-like part of a load's name: the shape of its tile of memory and the element.
std::string tile_name(int64_t rows, int64_t cols, const std::string& element) {
  return std::to_string(rows) + "x" + std::to_string(cols) + "_" + element;
}

// Registers the loads of tiles of `dtype` for the operand A ("_a") or B: as [N, K] ("_b_trans")
// and as [K, N] ("_b"); each element by element and (sm_75) with ldmatrix, which 8-bit tiles of
// B as [K, N] do not have (ldmatrix has no .trans for 8 bits).
void register_loads(const IntrinRegistrar& add, DataType dtype, bool operand_b) {
  int64_t k = 8 * mma_group(dtype);  // the tile's columns along the reduction
  struct Load {
    std::string suffix;
    int64_t rows, cols;
    bool transposed;
  };
  std::vector<Load> loads;
  if (operand_b) {
    loads.push_back(Load{"b_trans", kMmaTile, k, false});
    loads.push_back(Load{"b", k, kMmaTile, true});
  } else {
    loads.push_back(Load{"a", kMmaTile, k, false});
  }
  for (const Load& load : loads) {
    auto s = [&] { return tile(load.rows, load.cols, dtype, "S", "shared"); };
    auto w = [&] { return mma_fragment_buffer(dtype, "W"); };
    std::string name = tile_name(load.rows, load.cols, mma_element_name(dtype)) + "_" + load.suffix;
    add("cuda.mma_load_" + name, load_desc(s(), w(), load.transposed),
        load_impl(s(), w(), load.transposed), {});
    if (load.transposed && dtype.bits() == 8) continue;
    add("cuda.mma_ldmatrix_" + name, load_desc(s(), w(), load.transposed),
        ldmatrix_impl(s(), w(), load.transposed), {"sm_75"});
  }
}

// Appends `t` to `types` unless it is there.
void add_unique(std::vector<DataType>* types, DataType t) {
  if (std::find(types->begin(), types->end(), t) == types->end()) types->push_back(t);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The fragment layout (intrinsics.h)

int mma_group(DataType dtype) {
  return dtype.bits() == 8 ? 4 : 2;
}

Expr mma_fragment_lane(const Expr& row, const Expr& col, int group) {
  auto c = [](int64_t v) { return int32_const(v); };
  return floormod(row, c(8)) * 4 + floordiv(floormod(col, c(4 * group)), c(group));
}

Expr mma_fragment_element(const Expr& row, const Expr& col, int group) {
  auto c = [](int64_t v) { return int32_const(v); };
  return floordiv(col, c(4 * group)) * (2 * group) + floordiv(row, c(8)) * group +
         floormod(col, c(group));
}

Expr mma_fragment_row(const Expr& lane, const Expr& element, int group) {
  auto c = [](int64_t v) { return int32_const(v); };
  return floormod(floordiv(element, c(group)), c(2)) * 8 + floordiv(lane, c(4));
}

Expr mma_fragment_col(const Expr& lane, const Expr& element, int group) {
  auto c = [](int64_t v) { return int32_const(v); };
  return floordiv(element, c(2 * group)) * (4 * group) + floormod(lane, c(4)) * group +
         floormod(element, c(group));
}

IndexMap cuda_mma_fragment_map(bool transposed, int batch_dims, ir::DataType dtype) {
  std::vector<Ref<Var>> initial;
  std::vector<Expr> final;
  for (int d = 0; d < batch_dims; ++d) {
    initial.push_back(make_var("b" + std::to_string(d)));
    final.push_back(initial.back());
  }
  Ref<Var> i = make_var("i"), j = make_var("j");
  initial.insert(initial.end(), {i, j});
  int g = mma_group(dtype);
  const Ref<Var>& row = transposed ? j : i;
  const Ref<Var>& col = transposed ? i : j;
  // A tile is 16 rows (of A, of B as [N, K], of the accumulator) by 8 g columns.
  auto tiles = [&](const Ref<Var>& v) {
    return floordiv(Expr(v), int32_const(v.same_as(row) ? kMmaTile : 8 * g));
  };
  final.insert(final.end(), {tiles(i), tiles(j), mma_fragment_lane(row, col, g),
                             mma_fragment_element(floormod(Expr(row), int32_const(kMmaTile)),
                                                  floormod(Expr(col), int32_const(8 * g)), g)});
  return IndexMap(initial, final);
}

Ref<Buffer> mma_fragment_buffer(DataType dtype, const std::string& name) {
  return decl_buffer({int32_const(kMmaLanes), int32_const(4 * mma_group(dtype))}, dtype, name,
                     "warp");
}

Ref<PrimFunc> mma_sync_desc(const Ref<Buffer>& a, const Ref<Buffer>& b, const Ref<Buffer>& c) {
  int ga = mma_group(a->dtype), gb = mma_group(b->dtype);
  Stmt body = tile_block(
      "mma", {IterType::kDataPar, IterType::kDataPar, IterType::kCommReduce},
      {kMmaTile, kMmaTile, 8 * ga}, [&](const std::vector<Expr>& v) {
        const Expr &i = v[0], &j = v[1], &k = v[2];
        std::vector<Expr> at_c = {mma_fragment_lane(i, j), mma_fragment_element(i, j)};
        std::vector<Expr> at_a = {mma_fragment_lane(i, k, ga), mma_fragment_element(i, k, ga)};
        std::vector<Expr> at_b = {mma_fragment_lane(j, k, gb), mma_fragment_element(j, k, gb)};
        Expr product = cast(c->dtype, buffer_load(a, at_a)) * cast(c->dtype, buffer_load(b, at_b));
        return TileAccess{buffer_store(c, buffer_load(c, at_c) + product, at_c),
                          {point(c, at_c), point(a, at_a), point(b, at_b)},
                          {point(c, at_c)}};
      });
  return intrin_function({a, b, c}, body);
}

Stmt for_each_lane(const std::function<Stmt(const Expr&)>& body) {
  Ref<Var> lane = make_var("lane");
  auto loop =
      make<For>(lane, int32_const(0), int32_const(kMmaLanes), ForKind::kThreadBinding, body(lane));
  loop->thread_tag = "threadIdx.x";
  return loop;
}

const std::vector<MmaFamily>& mma_families() {
  static const std::vector<MmaFamily> families = {
      {"f16f16f32", DataType::float_(16), DataType::float_(16), DataType::float32()},
      {"bf16bf16f32", DataType::bfloat16(), DataType::bfloat16(), DataType::float32()},
      {"s8s8s32", DataType::int_(8), DataType::int_(8), DataType::int32()},
      {"u8s8s32", DataType::uint(8), DataType::int_(8), DataType::int32()},
  };
  return families;
}

std::string mma_element_name(DataType dtype) {
  if (dtype.is_bfloat16()) return "bf16";
  if (dtype.is_float16()) return "f16";
  if (dtype == DataType::float32()) return "f32";
  return std::string(dtype.is_uint() ? "u" : "s") + std::to_string(dtype.bits());
}

void register_cuda_mma_intrinsics(const IntrinRegistrar& add) {
  // For the families' types: the loads of each type of A and of B, each family's
  // multiply-accumulate (sm_80), the fill and store of each accumulator type.
  std::vector<DataType> a_types, b_types, acc_types;
  for (const MmaFamily& family : mma_families()) {
    add_unique(&a_types, family.a);
    add_unique(&b_types, family.b);
    add_unique(&acc_types, family.acc);
  }
  for (DataType t : a_types) register_loads(add, t, /*operand_b=*/false);
  for (DataType t : b_types) register_loads(add, t, /*operand_b=*/true);
  for (const MmaFamily& family : mma_families()) {
    auto a = [&] { return mma_fragment_buffer(family.a, "A"); };
    auto b = [&] { return mma_fragment_buffer(family.b, "B"); };
    auto c = [&] { return mma_fragment_buffer(family.acc, "C"); };
    add("cuda.mma_" + family.name, mma_sync_desc(a(), b(), c()), mma_sync_impl(a(), b(), c()),
        {"sm_80"});
  }
  for (DataType acc : acc_types) {
    auto c = [&] { return mma_fragment_buffer(acc, "C"); };
    auto d = [&] { return tile(kMmaTile, kMmaTile, acc, "D", "global"); };
    std::string name = tile_name(kMmaTile, kMmaTile, mma_element_name(acc));
    add("cuda.mma_fill_" + name, fill_desc(c()), fill_impl(c()), {});
    add("cuda.mma_store_" + name, store_desc(c(), d()), store_impl(c(), d()), {});
  }
}

}  // namespace kiln::schedule
