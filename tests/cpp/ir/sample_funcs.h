// Small functions built by hand with the builders of kiln/ir/op.h, shared by the printer and
// structural tests and by hash_probe (which prints their hashes for the cross-process test).
#pragma once

#include <string>

#include "kiln/ir/buffer.h"
#include "kiln/ir/op.h"

namespace kiln::ir::samples {

// A tensor parameter: a handle variable bound to `buffer` in the function's buffer_map.
inline void add_buffer_param(PrimFunc* f, const Ref<Buffer>& buffer) {
  Ref<Var> handle = make_var(buffer->name, DataType::handle());
  f->params.push_back(handle);
  f->buffer_map.emplace_back(handle, buffer);
}

inline Range range(int64_t min, int64_t extent) {
  return Range{int32_const(min), int32_const(extent)};
}

inline Range point(const Expr& e) {
  return Range{e, int32_const(1)};
}

// The root block every function body sits in.
inline Stmt root_block(Stmt body, std::vector<Ref<Buffer>> alloc_buffers = {}) {
  auto root = make<Block>();
  root->name = "root";
  root->alloc_buffers = std::move(alloc_buffers);
  root->body = std::move(body);
  return make<BlockRealize>(std::vector<Expr>{}, bool_const(true), root);
}

inline Stmt serial(const Ref<Var>& var, const Expr& extent, Stmt body) {
  return make<For>(var, int32_const(0), extent, ForKind::kSerial, std::move(body));
}

// C[i, j] += A[i, k] * B[k, j] over an n x n x n iteration space, with a reduction block "C".
// `block_name` and the name hints can be varied to test what equality ignores.
inline Ref<PrimFunc> matmul(int64_t n = 128, const std::string& block_name = "C",
                            const std::string& c_name = "C", const std::string& i_name = "i") {
  Expr extent = int32_const(n);
  DataType f32 = DataType::float32();
  Ref<Buffer> a = decl_buffer({extent, extent}, f32, "A");
  Ref<Buffer> b = decl_buffer({extent, extent}, f32, "B");
  Ref<Buffer> c = decl_buffer({extent, extent}, f32, c_name);
  Ref<Var> i = make_var(i_name), j = make_var("j"), k = make_var("k");
  Ref<Var> vi = make_var("vi"), vj = make_var("vj"), vk = make_var("vk");

  auto block = make<Block>();
  block->name = block_name;
  block->iter_vars = {IterVar{vi, range(0, n), IterType::kDataPar},
                      IterVar{vj, range(0, n), IterType::kDataPar},
                      IterVar{vk, range(0, n), IterType::kCommReduce}};
  block->reads = {BufferRegion{a, {point(vi), point(vk)}}, BufferRegion{b, {point(vk), point(vj)}}};
  block->writes = {BufferRegion{c, {point(vi), point(vj)}}};
  block->init = buffer_store(c, make_zero(f32), {vi, vj});
  block->body = buffer_store(
      c, buffer_load(c, {vi, vj}) + buffer_load(a, {vi, vk}) * buffer_load(b, {vk, vj}), {vi, vj});
  Stmt realize = make<BlockRealize>(std::vector<Expr>{i, j, k}, bool_const(true), block);

  auto f = make<PrimFunc>();
  add_buffer_param(f.get(), a);
  add_buffer_param(f.get(), b);
  add_buffer_param(f.get(), c);
  f->body = root_block(serial(i, extent, serial(j, extent, serial(k, extent, realize))));
  return f;
}

// B[i] = A[i] * 2 over a symbolic length n (a size variable in both buffers' shapes).
inline Ref<PrimFunc> scale_symbolic() {
  Ref<Var> n = make_size_var("n");
  DataType f32 = DataType::float32();
  Ref<Buffer> a = decl_buffer({n}, f32, "A");
  Ref<Buffer> b = decl_buffer({n}, f32, "B");
  Ref<Var> i = make_var("i");
  Ref<Var> vi = make_var("vi");
  auto block = make<Block>();
  block->name = "B";
  block->iter_vars = {IterVar{vi, Range{int32_const(0), n}, IterType::kDataPar}};
  block->reads = {BufferRegion{a, {point(vi)}}};
  block->writes = {BufferRegion{b, {point(vi)}}};
  block->body = buffer_store(b, buffer_load(a, {vi}) * make_const(f32, 2.0), {vi});
  auto f = make<PrimFunc>();
  add_buffer_param(f.get(), a);
  add_buffer_param(f.get(), b);
  f->body =
      root_block(serial(i, n, make<BlockRealize>(std::vector<Expr>{i}, bool_const(true), block)));
  return f;
}

// A lowered-style loop: a parallel outer loop, a vectorized store of a Ramp-indexed load plus a
// Broadcast, inside a local allocation.
inline Stmt vector_add_loop() {
  DataType f32 = DataType::float32();
  Ref<Buffer> a = decl_buffer({int32_const(64)}, f32, "A");
  Ref<Buffer> tmp = decl_buffer({int32_const(4)}, f32, "tmp", "local");
  Ref<Var> io = make_var("io");
  Expr index = ramp(io * 4, int32_const(1), 4);
  Stmt store = buffer_store(tmp, buffer_load(a, {index}) + broadcast(make_const(f32, 1.5), 4),
                            {ramp(int32_const(0), int32_const(1), 4)});
  Stmt back = buffer_store(a, buffer_load(tmp, {ramp(int32_const(0), int32_const(1), 4)}), {index});
  Stmt body = make<Allocate>(tmp, seq({store, back}));
  return make<For>(io, int32_const(0), int32_const(16), ForKind::kParallel, body);
}

}  // namespace kiln::ir::samples
