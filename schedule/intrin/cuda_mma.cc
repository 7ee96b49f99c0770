// CUDA tensor-core intrinsics: a warp multiplies 16x16 float16 (or bfloat16) tiles into a float32
// accumulator with two mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 (.bf16.bf16), on
// fragments held in the warp's registers (see "The fragments" in intrinsics.h: the layout is the
// same for both element types), with the loads of the fragments from a tile in memory, the fill
// of the accumulator and its store.
//
// Every implementation is a loop over the 32 lanes of a warp bound to threadIdx.x: a schedule
// that tensorizes with them launches threadIdx.x with extent 32 (one warp) and spreads warps
// over threadIdx.y/z. The loads, fill and store are plain per-lane code that any GPU runs; the
// multiply-accumulate is the ptx_mma builtin, which only CUDA code for sm_80 or newer has.
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

// for i, j, ... in T.grid(16, ...): with T.block(name): the iterators over the loops, one per
// entry of `types` (each of extent 16), around `access(iterators)`.
Stmt tile_block(const std::string& name, const std::vector<IterType>& types,
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
        IterVar{iter, Range{int32_const(0), int32_const(kMmaTile)}, types[d]});
  }
  TileAccess body = access(iters);
  block->reads = body.reads;
  block->writes = body.writes;
  block->body = body.body;
  Stmt nest = make<BlockRealize>(values, bool_const(true), block);
  for (size_t d = loops.size(); d-- > 0;) {
    nest = make<For>(loops[d], int32_const(0), int32_const(kMmaTile), ForKind::kSerial, nest);
  }
  return nest;
}

// for e in T.unroll(8): body(e), the elements of one lane's fragment.
Stmt for_each_element(const std::function<Stmt(const Expr&)>& body) {
  Ref<Var> e = make_var("e");
  return make<For>(e, int32_const(0), int32_const(kMmaFragmentElements), ForKind::kUnrolled,
                   body(e));
}

Expr lane_of(const Expr& row, const Expr& col) {
  return mma_fragment_lane(row, col);
}
Expr element_of(const Expr& row, const Expr& col) {
  return mma_fragment_element(row, col);
}

// ---------------------------------------------------------------------------------------------
// Loads: a 16x16 tile S (float16 or bfloat16) of memory into the fragment W. `transposed` reads a
// tile of B stored as [K, N] (S[k, n]) into the fragment of B as [N, K].

Ref<PrimFunc> load_desc(const Ref<Buffer>& s, const Ref<Buffer>& w, bool transposed) {
  Stmt body =
      tile_block("load", {IterType::kDataPar, IterType::kDataPar}, [&](const std::vector<Expr>& v) {
        const Expr& row = transposed ? v[1] : v[0];
        const Expr& col = transposed ? v[0] : v[1];
        std::vector<Expr> to = {lane_of(row, col), element_of(row, col)};
        return TileAccess{buffer_store(w, buffer_load(s, {v[0], v[1]}), to),
                          {point(s, {v[0], v[1]})},
                          {point(w, to)}};
      });
  return intrin_function({s, w}, body);
}

Ref<PrimFunc> load_impl(const Ref<Buffer>& s, const Ref<Buffer>& w, bool transposed) {
  Stmt body = for_each_lane([&](const Expr& lane) {
    return for_each_element([&](const Expr& e) {
      Expr row = mma_fragment_row(lane, e), col = mma_fragment_col(lane, e);
      std::vector<Expr> from =
          transposed ? std::vector<Expr>{col, row} : std::vector<Expr>{row, col};
      return buffer_store(w, buffer_load(s, from), {lane, e});
    });
  });
  return intrin_function({s, w}, body);
}

// The same loads with one ldmatrix.x4 per lane: the four 8x8 matrices of the tile, in the order
// of the fragment's registers, are rows 0-7 / columns 0-7, rows 8-15 / columns 0-7, rows 0-7 /
// columns 8-15, rows 8-15 / columns 8-15 of the fragment's tile (of A, or of B as [N, K]); lane
// l gives the address of row l % 8 of matrix l / 8. A tile of B stored as [K, N] is loaded with
// .trans: its matrix m holds rows (k) 8 (m / 2) .. and columns (n) 8 (m % 2) ..

Ref<PrimFunc> ldmatrix_impl(const Ref<Buffer>& s, const Ref<Buffer>& w, bool transposed) {
  auto c = [](int64_t v) { return int32_const(v); };
  Stmt body = for_each_lane([&](const Expr& lane) {
    Expr matrix = floordiv(lane, c(8)), row_of_matrix = floormod(lane, c(8));
    Expr row = transposed ? row_of_matrix + floordiv(matrix, c(2)) * 8
                          : row_of_matrix + floormod(matrix, c(2)) * 8;
    Expr col = transposed ? floormod(matrix, c(2)) * 8 : floordiv(matrix, c(2)) * 8;
    Expr loaded = call(s->dtype.with_lanes(8), Builtin::PtxLdmatrix,
                       {c(transposed ? 1 : 0), buffer_load(s, {row, ramp(col, c(1), 8)})});
    return buffer_store(w, loaded, {lane, ramp(c(0), c(1), kMmaFragmentElements)});
  });
  return intrin_function({s, w}, body);
}

// ---------------------------------------------------------------------------------------------
// The multiply-accumulate: per lane, two ptx_mma, one for each 8 columns of the accumulator.

// The shape and types of the PTX instruction for operands of `dtype` (float16 or bfloat16).
std::string mma_shape(DataType dtype) {
  return dtype.is_bfloat16() ? "m16n8k16.row.col.f32.bf16.bf16.f32"
                             : "m16n8k16.row.col.f32.f16.f16.f32";
}

Ref<PrimFunc> mma_sync_impl(const Ref<Buffer>& a, const Ref<Buffer>& b, const Ref<Buffer>& c) {
  Stmt body = for_each_lane([&](const Expr& lane) {
    // Register r of a fragment: its elements 2r and 2r + 1, one .b32 of two halves.
    auto reg = [&lane](const Ref<Buffer>& fragment, int r) {
      return buffer_load(fragment, {lane, ramp(int32_const(2 * r), int32_const(1), 2)});
    };
    std::vector<Stmt> halves;
    for (int n = 0; n < 2; ++n) {
      Expr acc = ramp(int32_const(4 * n), int32_const(1), 4);
      Expr mma = call(DataType::float_(32, 4), Builtin::PtxMma,
                      {make<StringImm>(mma_shape(a->dtype)), reg(a, 0), reg(a, 1), reg(a, 2),
                       reg(a, 3), reg(b, n), reg(b, n + 2), buffer_load(c, {lane, acc})});
      halves.push_back(buffer_store(c, mma, {lane, acc}));
    }
    return seq(halves);
  });
  return intrin_function({a, b, c}, body);
}

// ---------------------------------------------------------------------------------------------
// The fill of the accumulator with zeros and its store into a 16x16 float32 tile D of memory.

Ref<PrimFunc> fill_desc(const Ref<Buffer>& c) {
  Stmt body =
      tile_block("fill", {IterType::kDataPar, IterType::kDataPar}, [&](const std::vector<Expr>& v) {
        std::vector<Expr> at = {lane_of(v[0], v[1]), element_of(v[0], v[1])};
        return TileAccess{buffer_store(c, make_zero(DataType::float32()), at), {}, {point(c, at)}};
      });
  return intrin_function({c}, body);
}

Ref<PrimFunc> fill_impl(const Ref<Buffer>& c) {
  Stmt body = for_each_lane([&](const Expr& lane) {
    return for_each_element([&](const Expr& e) {
      return buffer_store(c, make_zero(DataType::float32()), {lane, e});
    });
  });
  return intrin_function({c}, body);
}

Ref<PrimFunc> store_desc(const Ref<Buffer>& c, const Ref<Buffer>& d) {
  Stmt body = tile_block("store", {IterType::kDataPar, IterType::kDataPar},
                         [&](const std::vector<Expr>& v) {
                           std::vector<Expr> from = {lane_of(v[0], v[1]), element_of(v[0], v[1])};
                           return TileAccess{buffer_store(d, buffer_load(c, from), {v[0], v[1]}),
                                             {point(c, from)},
                                             {point(d, {v[0], v[1]})}};
                         });
  return intrin_function({c, d}, body);
}

Ref<PrimFunc> store_impl(const Ref<Buffer>& c, const Ref<Buffer>& d) {
  Stmt body = for_each_lane([&](const Expr& lane) {
    return for_each_element([&](const Expr& e) {
      return buffer_store(d, buffer_load(c, {lane, e}),
                          {mma_fragment_row(lane, e), mma_fragment_col(lane, e)});
    });
  });
  return intrin_function({c, d}, body);
}

Ref<Buffer> tile(DataType dtype, const std::string& name, const std::string& scope) {
  return decl_buffer({int32_const(kMmaTile), int32_const(kMmaTile)}, dtype, name, scope);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The fragment layout (intrinsics.h)

Expr mma_fragment_lane(const Expr& row, const Expr& col) {
  auto c = [](int64_t v) { return int32_const(v); };
  return floormod(row, c(8)) * 4 + floordiv(floormod(col, c(8)), c(2));
}

Expr mma_fragment_element(const Expr& row, const Expr& col) {
  auto c = [](int64_t v) { return int32_const(v); };
  return floordiv(col, c(8)) * 4 + floordiv(row, c(8)) * 2 + floormod(col, c(2));
}

Expr mma_fragment_row(const Expr& lane, const Expr& element) {
  auto c = [](int64_t v) { return int32_const(v); };
  return floormod(floordiv(element, c(2)), c(2)) * 8 + floordiv(lane, c(4));
}

Expr mma_fragment_col(const Expr& lane, const Expr& element) {
  auto c = [](int64_t v) { return int32_const(v); };
  return floordiv(element, c(4)) * 8 + floormod(lane, c(4)) * 2 + floormod(element, c(2));
}

IndexMap cuda_mma_fragment_map(bool transposed, int batch_dims) {
  std::vector<Ref<Var>> initial;
  std::vector<Expr> final;
  for (int d = 0; d < batch_dims; ++d) {
    initial.push_back(make_var("b" + std::to_string(d)));
    final.push_back(initial.back());
  }
  Ref<Var> i = make_var("i"), j = make_var("j");
  initial.insert(initial.end(), {i, j});
  auto tiles = [](const Ref<Var>& v) { return floordiv(Expr(v), int32_const(kMmaTile)); };
  const Ref<Var>& row = transposed ? j : i;
  const Ref<Var>& col = transposed ? i : j;
  final.insert(final.end(), {tiles(i), tiles(j), mma_fragment_lane(row, col),
                             mma_fragment_element(floormod(Expr(row), int32_const(kMmaTile)),
                                                  floormod(Expr(col), int32_const(kMmaTile)))});
  return IndexMap(initial, final);
}

Ref<Buffer> mma_fragment_buffer(DataType dtype, const std::string& name) {
  return decl_buffer({int32_const(kMmaLanes), int32_const(kMmaFragmentElements)}, dtype, name,
                     "warp");
}

Ref<PrimFunc> mma_sync_desc(const Ref<Buffer>& a, const Ref<Buffer>& b, const Ref<Buffer>& c) {
  Stmt body = tile_block("mma", {IterType::kDataPar, IterType::kDataPar, IterType::kCommReduce},
                         [&](const std::vector<Expr>& v) {
                           const Expr &i = v[0], &j = v[1], &k = v[2];
                           std::vector<Expr> at_c = {lane_of(i, j), element_of(i, j)};
                           std::vector<Expr> at_a = {lane_of(i, k), element_of(i, k)};
                           std::vector<Expr> at_b = {lane_of(j, k), element_of(j, k)};
                           Expr product = cast(DataType::float32(), buffer_load(a, at_a)) *
                                          cast(DataType::float32(), buffer_load(b, at_b));
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

void register_cuda_mma_intrinsics(const IntrinRegistrar& add) {
  DataType f32 = DataType::float32();
  // The operands' element types: float16 (cuda.mma_f16f16f32, cuda.mma_load_16x16_f16_a, ...)
  // and bfloat16 (cuda.mma_bf16bf16f32, cuda.mma_load_16x16_bf16_a, ...).
  for (const auto& [element, dtype] : std::vector<std::pair<std::string, DataType>>{
           {"f16", DataType::float_(16)}, {"bf16", DataType::bfloat16()}}) {
    for (const auto& [suffix, transposed] :
         std::vector<std::pair<std::string, bool>>{{"a", false}, {"b", true}, {"b_trans", false}}) {
      auto s = [&, dtype = dtype] { return tile(dtype, "S", "shared"); };
      auto w = [&, dtype = dtype] { return mma_fragment_buffer(dtype, "W"); };
      const std::string tile_name = "16x16_" + element + "_" + suffix;
      add("cuda.mma_load_" + tile_name, load_desc(s(), w(), transposed),
          load_impl(s(), w(), transposed), {});
      add("cuda.mma_ldmatrix_" + tile_name, load_desc(s(), w(), transposed),
          ldmatrix_impl(s(), w(), transposed), {"sm_75"});
    }
    auto a = [&, dtype = dtype] { return mma_fragment_buffer(dtype, "A"); };
    auto b = [&, dtype = dtype] { return mma_fragment_buffer(dtype, "B"); };
    auto c = [&] { return mma_fragment_buffer(f32, "C"); };
    add("cuda.mma_" + element + element + "f32", mma_sync_desc(a(), b(), c()),
        mma_sync_impl(a(), b(), c()), {"sm_80"});
  }
  auto c = [&] { return mma_fragment_buffer(f32, "C"); };
  add("cuda.mma_fill_16x16_f32", fill_desc(c()), fill_impl(c()), {});
  auto d = [&] { return tile(f32, "D", "global"); };
  add("cuda.mma_store_16x16_f32", store_desc(c(), d()), store_impl(c(), d()), {});
}

}  // namespace kiln::schedule
