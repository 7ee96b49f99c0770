// The references of cuda.mma_f16f16f32 and cuda.mma_bf16bf16f32 in plain code: the same description
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
//   C[lane, e] += sum_k float32(A[lane(r, k), element(r, k)]) * float32(B[lane(c, k), element(c,
//   k)])
// with k in order, as the description sums.
Ref<PrimFunc> mma_reference_impl(const Ref<Buffer>& a, const Ref<Buffer>& b, const Ref<Buffer>& c) {
  Stmt body = for_each_lane([&](const Expr& lane) {
    Ref<Var> e = make_var("e"), k = make_var("k");
    Expr row = mma_fragment_row(lane, e), col = mma_fragment_col(lane, e);
    Expr product = cast(DataType::float32(),
                        buffer_load(a, {mma_fragment_lane(row, k), mma_fragment_element(row, k)})) *
                   cast(DataType::float32(),
                        buffer_load(b, {mma_fragment_lane(col, k), mma_fragment_element(col, k)}));
    Stmt update = buffer_store(c, buffer_load(c, {lane, e}) + product, {lane, e});
    Stmt over_k = make<For>(k, int32_const(0), int32_const(kMmaTile), ForKind::kSerial, update);
    return make<For>(e, int32_const(0), int32_const(kMmaFragmentElements), ForKind::kUnrolled,
                     over_k);
  });
  return intrin_function({a, b, c}, body);
}

}  // namespace

void register_cuda_mma_reference_intrinsics(const IntrinRegistrar& add) {
  DataType f32 = DataType::float32();
  for (const auto& [element, dtype] : std::vector<std::pair<std::string, DataType>>{
           {"f16", DataType::float_(16)}, {"bf16", DataType::bfloat16()}}) {
    auto a = [&, dtype = dtype] { return mma_fragment_buffer(dtype, "A"); };
    auto b = [&, dtype = dtype] { return mma_fragment_buffer(dtype, "B"); };
    auto c = [&] { return mma_fragment_buffer(f32, "C"); };
    add("cuda.mma_" + element + element + "f32_reference", mma_sync_desc(a(), b(), c()),
        mma_reference_impl(a(), b(), c()), {});
  }
}

}  // namespace kiln::schedule
