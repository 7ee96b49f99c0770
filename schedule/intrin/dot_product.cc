// Builders shared by the shipped intrinsics: the function around an implementation body and the
// description of a dot product of vector lanes.
#include "kiln/ir/buffer.h"
#include "kiln/ir/op.h"
#include "schedule/intrin/intrinsics.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// A function with `buffers` as parameters and a root block around `body`.
Ref<PrimFunc> function_of(const DotProductBuffers& buffers, Stmt body) {
  return intrin_function({buffers.a, buffers.b, buffers.c}, std::move(body));
}

BufferRegion point(const Ref<Buffer>& buffer, std::vector<Expr> indices) {
  BufferRegion region{buffer, {}};
  for (Expr& index : indices) region.region.push_back(Range{std::move(index), int32_const(1)});
  return region;
}

}  // namespace

Ref<PrimFunc> intrin_function(const std::vector<Ref<Buffer>>& params, Stmt body) {
  auto root = make<Block>();
  root->name = "root";
  root->body = std::move(body);
  auto func = make<PrimFunc>();
  for (const Ref<Buffer>& b : params) {
    Ref<Var> handle = make_var(b->name, DataType::handle());
    func->params.push_back(handle);
    func->buffer_map.emplace_back(handle, b);
  }
  func->body = make<BlockRealize>(std::vector<Expr>{}, bool_const(true), root);
  return func;
}

DotProductBuffers dot_product_buffers(int lanes, int depth, DataType a_dtype, DataType b_dtype,
                                      DataType acc_dtype) {
  return {decl_buffer({int32_const(depth)}, a_dtype, "A"),
          decl_buffer({int32_const(lanes), int32_const(depth)}, b_dtype, "B"),
          decl_buffer({int32_const(lanes)}, acc_dtype, "C")};
}

Ref<PrimFunc> dot_product_desc(const DotProductBuffers& buffers) {
  const Expr& lanes = buffers.c->shape[0];
  const Expr& depth = buffers.a->shape[0];
  DataType acc = buffers.c->dtype;
  Ref<Var> i = make_var("i"), k = make_var("k");
  Ref<Var> vi = make_var("vi"), vk = make_var("vk");
  auto update = make<Block>();
  update->name = "update";
  update->iter_vars = {IterVar{vi, Range{int32_const(0), lanes}, IterType::kDataPar},
                       IterVar{vk, Range{int32_const(0), depth}, IterType::kCommReduce}};
  update->reads = {point(buffers.c, {vi}), point(buffers.a, {vk}), point(buffers.b, {vi, vk})};
  update->writes = {point(buffers.c, {vi})};
  Expr product =
      cast(acc, buffer_load(buffers.a, {vk})) * cast(acc, buffer_load(buffers.b, {vi, vk}));
  update->body = buffer_store(buffers.c, buffer_load(buffers.c, {vi}) + product, {vi});
  Stmt realize = make<BlockRealize>(std::vector<Expr>{i, k}, bool_const(true), update);
  Stmt nest = make<For>(i, int32_const(0), lanes, ForKind::kSerial,
                        make<For>(k, int32_const(0), depth, ForKind::kSerial, realize));
  return function_of(buffers, nest);
}

Ref<PrimFunc> intrin_impl(const DotProductBuffers& buffers, Stmt body) {
  return function_of(buffers, std::move(body));
}

}  // namespace kiln::schedule
