// The references of the cuda.mma_* multiply-accumulates in plain code: the same description
// over the same fragments, each lane computing the accumulator elements it owns (their rows and
// columns as the PTX ISA gives them) from the elements of A and B that the other lanes hold. It
// needs no tensor core, so a schedule tensorized with it runs on any GPU target, on OpenCL and on
// the interpreter, which checks the tiles, offsets and lane mapping that the real intrinsic relies
// on. Its fragments of A and B are read across lanes: lowering keeps them in shared memory
// (lower_warp_memory), which makes it a check, not a fast kernel.
#include <string>
#include <utility>
#include <vector>

#include "kiln/ir/op.h"
#include "schedule/intrin/intrinsics.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// For each lane and each element e it owns, at row r and column c of the accumulator:
//   C[lane, e] += sum_k C.dtype(A[lane(r, k), element(r, k)]) * C.dtype(B[lane(c, k),
//   element(c, k)])
// over the K = 8 g columns of A's tile, k in order, as the description sums.
Ref<PrimFunc> mma_reference_impl(const Ref<Buffer>& a, const Ref<Buffer>& b, const Ref<Buffer>& c) {
  int ga = mma_group(a->dtype), gb = mma_group(b->dtype);
  Stmt body = for_each_lane([&](const Expr& lane) {
    Ref<Var> e = make_var("e"), k = make_var("k");
    Expr row = mma_fragment_row(lane, e), col = mma_fragment_col(lane, e);
    Expr product =
        cast(c->dtype,
             buffer_load(a, {mma_fragment_lane(row, k, ga), mma_fragment_element(row, k, ga)})) *
        cast(c->dtype,
             buffer_load(b, {mma_fragment_lane(col, k, gb), mma_fragment_element(col, k, gb)}));
    Stmt update = buffer_store(c, buffer_load(c, {lane, e}) + product, {lane, e});
    Stmt over_k = make<For>(k, int32_const(0), int32_const(8 * ga), ForKind::kSerial, update);
    return make<For>(e, int32_const(0), int32_const(4 * mma_group(c->dtype)), ForKind::kUnrolled,
                     over_k);
  });
  return intrin_function({a, b, c}, body);
}

}  // namespace

void register_cuda_mma_reference_intrinsics(const IntrinRegistrar& add) {
  for (const MmaFamily& family : mma_families()) {
    auto a = [&] { return mma_fragment_buffer(family.a, "A"); };
    auto b = [&] { return mma_fragment_buffer(family.b, "B"); };
    auto c = [&] { return mma_fragment_buffer(family.acc, "C"); };
    add("cuda.mma_" + family.name + "_reference", mma_sync_desc(a(), b(), c()),
        mma_reference_impl(a(), b(), c()), {});
  }
}

}  // namespace kiln::schedule
