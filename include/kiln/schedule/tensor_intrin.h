// Tensor intrinsics: named pairs of PrimFuncs that tensorize uses. The description says what a
// hardware instruction computes, as ordinary TensorIR over buffers of the tile's shape; the
// implementation computes the same with the instruction (call_llvm_pure_intrin on vectors) or
// with any other TensorIR. The registry maps names to intrinsics, like an instruction set.
//
// The form of an intrinsic:
//  * Both functions take the same buffers, in the same order, with the same constant shapes and
//    dtypes; tensorize binds buffer k of each to the same region of an actual buffer.
//  * The description's body is its root block holding a nest of loops around exactly one block
//    (what te.create_prim_func makes of one te.compute).
//  * An intrinsic is the update step of a reduction (C += …); the init of a block in either
//    function (te.create_prim_func gives a reduction one) is dropped at registration, since the
//    block being tensorized keeps its own init.
//  * An intrinsic declares the target features its implementation needs: LLVM's names for CPU
//    instructions (e.g. "avx512vnni"), a CUDA architecture level for GPU ones (e.g. "sm_80",
//    which "cuda -arch=sm_80" and newer architectures have; codegen::Target::
//    intrinsic_features() lists what a target has). tensorize refuses it for a target that
//    lacks them when told the target, and so does kiln.build (through the "kiln.tensor_intrin"
//    annotation tensorize leaves on the block): code generators never see an instruction the
//    target cannot select.
// Shipped, registered before the first look-up:
//   x86.avx512.vnni.dot_16x4_u8s8s32       C[i] (int32, 16) += sum_k<4 A[k] (uint8) * B[i, k]
//                                          (int8, 16x4), with llvm.x86.avx512.vpdpbusd.512;
//                                          needs avx512f, avx512vnni
//   x86.avxvnni.dot_8x4_u8s8s32            the same on 8 lanes, with llvm.x86.avx512.vpdpbusd.256
//                                          (VEX-encoded: AVX-VNNI); needs avxvnni
//   x86.avx512.bf16.dot_16x2_bf16bf16f32   C[i] (float32, 16) += sum_k<2 A[k] * B[i, k]
//                                          (bfloat16), with llvm.x86.avx512bf16.dpbf16ps.512;
//                                          needs avx512bw, avx512bf16
//   cuda.mma_f16f16f32                     C (float32) += A * B^T on 16x16x16 tiles of a warp's
//                                          fragments, two mma.sync m16n8k16; needs sm_80
//   cuda.mma_f16f16f32_reference           the same in plain per-lane code (any GPU target)
//   cuda.mma_load_16x16_f16_a, _b_trans    a 16x16 float16 tile of memory into a fragment
//   cuda.mma_load_16x16_f16_b              ... of a tile of B stored as [K, N], transposed
//   cuda.mma_ldmatrix_16x16_f16_*          the same loads with ldmatrix.x4; needs sm_75
//   cuda.mma_bf16bf16f32 (and _reference,  the same for bfloat16 operands (the fragments have
//   cuda.mma_load_16x16_bf16_*,            float16's layout); mma.sync .bf16.bf16 needs sm_80
//   cuda.mma_ldmatrix_16x16_bf16_*)
//   cuda.mma_fill_16x16_f32                zeros into an accumulator fragment
//   cuda.mma_store_16x16_f32               an accumulator fragment into a 16x16 float32 tile
//   cuda.mma_s8s8s32, cuda.mma_u8s8s32     C (int32) += A * B^T on 16x16x32 tiles, int8 (or
//                                          uint8) A, int8 B: two mma.sync m16n8k32; sm_80
//   cuda.mma_load_16x32_{s8,u8}_a,         16x32 tiles of A, of B as [N, K], and 32x16 of B
//   cuda.mma_load_16x32_s8_b_trans,        as [K, N] (transposed) into fragments; the first
//   cuda.mma_load_32x16_s8_b (ldmatrix     two also with ldmatrix (sm_75)
//   for the first two)
//   cuda.mma_fill_16x16_s32, _store_...    the int32 accumulator's fill and store
// The cuda.mma_* fragments are [32, 8] "warp" buffers ([32, 16] for 8-bit operands) whose layout
// schedule/intrin/intrinsics.h gives; their implementations loop over the warp's lanes bound to
// threadIdx.x (extent 32).
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/function.h"
#include "kiln/schedule/index_map.h"

namespace kiln::schedule {

struct TensorIntrin {
  std::string name;
  ir::Ref<ir::PrimFunc> desc;  // what the instruction computes
  ir::Ref<ir::PrimFunc> impl;  // how
  // The target features the implementation needs, sorted (empty: any target).
  std::vector<std::string> required_features;
};

// The annotation tensorize puts on a tensorized block: the intrinsic's name (a StringImm).
constexpr const char* kTensorIntrinAnnotation = "kiln.tensor_intrin";

// A target as the feature checks see it: its canonical string (for messages) and its features
// (codegen::Target::intrinsic_features()).
struct IntrinTarget {
  std::string name;
  std::vector<std::string> features;
};

// Registers an intrinsic under `name` after checking the form above (kValue errors that say
// which rule fails). A name already registered is a kValue error unless `override`.
void register_tensor_intrin(const std::string& name, const ir::Ref<ir::PrimFunc>& desc,
                            const ir::Ref<ir::PrimFunc>& impl, bool override = false,
                            std::vector<std::string> required_features = {});

// "its features: avx, avx2" (what `target` has, for messages; "it has no such features").
std::string target_features_text(const IntrinTarget& target);

// The features of `intrin` that `target` lacks, in the intrinsic's order (empty: none).
std::vector<std::string> missing_features(const TensorIntrin& intrin, const IntrinTarget& target);

// Checks every block of `func` that tensorize annotated with an intrinsic against `target`:
// a kValue error naming `api`, the function, the block, the intrinsic, the target and the
// features it lacks. kiln.build runs it before lowering. Tested by
// tests/python/test_schedule_tensorize.py.
void check_tensor_intrin_features(const ir::PrimFunc& func, const std::string& func_name,
                                  const IntrinTarget& target, const char* api);

// The intrinsic called `name` (its functions as registered, inits dropped); a kValue error
// listing the registered names when there is none.
TensorIntrin get_tensor_intrin(const std::string& name);

// The registered names, sorted.
std::vector<std::string> tensor_intrin_names();

// The layout of the cuda.mma_* fragments, as a map for transform_layout of a "warp" buffer that
// holds whole tiles of `dtype` (16x16 of float16, bfloat16 and the accumulators, 16x32 of int8 and
// uint8: 16 rows, 8 g columns, g = 4 for 8-bit elements, else 2): element (i, j) of [M, N] (A
// as [M, K], B as [N, K], the accumulator) goes to [i // 16, j // (8 g), lane, element] of the
// tile's fragment; with `transposed`, of B stored as [K, N]: (k, n) goes to [k // (8 g), n //
// 16] and the lane and element of (n, k), as cuda.mma_load_16x16_f16_b loads it. `batch_dims`
// leading indices (of a batch of products) stay as they are.
IndexMap cuda_mma_fragment_map(bool transposed, int batch_dims = 0,
                               ir::DataType dtype = ir::DataType::float_(16));

}  // namespace kiln::schedule
