/* A hand-written stand-in for a module with device code, as kiln's GPU code generators emit it:
 * host functions that check nothing and launch device kernels through KilnDeviceLaunch, the
 * kiln_module_device_ctx the runtime fills in, and a manifest that carries the kernels' OpenCL C
 * (or, for the CUDA variant, PTX). Built with KILN_DEVICE_VARIANT_* for the cases the runtime
 * must run or refuse; each is sealed like an exported module. */
#include "kiln/runtime/c_runtime_api.h"

#define KERNEL __attribute__((visibility("hidden"))) int32_t

#if defined(KILN_DEVICE_VARIANT_CUDA)
#define DEVICE_TYPE kDLCUDA
#define DEVICE_NAME "cuda"
#else
#define DEVICE_TYPE kDLOpenCL
#define DEVICE_NAME "opencl"
#endif

#if !defined(KILN_DEVICE_VARIANT_NO_CTX)
void* kiln_module_device_ctx;
#else
static void* kiln_module_device_ctx;
#endif

/* add(A, B, C, block): C = A + B over float32[n] on the device, `block` threads per block. */
KERNEL kiln_unchecked_add(const KilnValue* args, const int32_t* type_codes, int32_t num_args) {
  const DLTensor* a = (const DLTensor*)args[0].v_handle;
  const DLTensor* b = (const DLTensor*)args[1].v_handle;
  const DLTensor* c = (const DLTensor*)args[2].v_handle;
  int64_t block = args[3].v_int64;
  int32_t n = (int32_t)a->shape[0];
  void* handles[3] = {a->data, b->data, c->data};
  void* values[4] = {&handles[0], &handles[1], &handles[2], &n};
  int64_t sizes[4] = {sizeof(void*), sizeof(void*), sizeof(void*), sizeof(int32_t)};
  int64_t launch[7] = {(n + block - 1) / block, 1, 1, block, 1, 1, 0};
  return KilnDeviceLaunch(kiln_module_device_ctx, 0, DEVICE_TYPE, a->device.device_id, launch,
                          values, sizes, 4);
}

/* reverse_blocks(X, Y, dynamic): Y = X with each block of 64 elements reversed, through shared
 * (local) memory: dynamically sized when `dynamic` is true, else a fixed array in the kernel. */
KERNEL kiln_unchecked_reverse_blocks(const KilnValue* args, const int32_t* type_codes,
                                     int32_t num_args) {
  const DLTensor* x = (const DLTensor*)args[0].v_handle;
  const DLTensor* y = (const DLTensor*)args[1].v_handle;
  int dynamic = args[2].v_int64 != 0;
  void* handles[2] = {x->data, y->data};
  void* values[2] = {&handles[0], &handles[1]};
  int64_t sizes[2] = {sizeof(void*), sizeof(void*)};
  int64_t launch[7] = {x->shape[0] / 64, 1, 1, 64, 1, 1, dynamic ? 64 * sizeof(float) : 0};
  return KilnDeviceLaunch(kiln_module_device_ctx, dynamic ? 1 : 2, DEVICE_TYPE, x->device.device_id,
                          launch, values, sizes, 2);
}

const KilnPackedCFunc kiln_module_functions[] = {kiln_unchecked_add, kiln_unchecked_reverse_blocks,
                                                 NULL};

#define FUNCTIONS_JSON                                                                        \
  "[{\"name\": \"add\", \"symbol\": \"kiln_unchecked_add\", \"sym_vars\": [\"n\"],"           \
  " \"sym_var_dtypes\": [\"int32\"], \"args\": ["                                             \
  "{\"name\": \"A\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [\"n\"],"       \
  " \"device\": \"" DEVICE_NAME                                                               \
  "\", \"written\": false},"                                                                  \
  "{\"name\": \"B\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [\"n\"],"       \
  " \"device\": \"" DEVICE_NAME                                                               \
  "\", \"written\": false},"                                                                  \
  "{\"name\": \"C\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [\"n\"],"       \
  " \"device\": \"" DEVICE_NAME                                                               \
  "\"},"                                                                                      \
  "{\"name\": \"block\", \"kind\": \"scalar\", \"dtype\": \"int32\"}]},"                      \
  "{\"name\": \"reverse_blocks\", \"symbol\": \"kiln_unchecked_reverse_blocks\", \"args\": [" \
  "{\"name\": \"X\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [256],"         \
  " \"device\": \"" DEVICE_NAME                                                               \
  "\", \"written\": false},"                                                                  \
  "{\"name\": \"Y\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [256],"         \
  " \"device\": \"" DEVICE_NAME                                                               \
  "\"},"                                                                                      \
  "{\"name\": \"dynamic\", \"kind\": \"scalar\", \"dtype\": \"bool\"}]}]"

#define KERNELS_JSON                                  \
  "[{\"name\": \"add_kernel\", \"num_args\": 4},"     \
  " {\"name\": \"reverse_kernel\", \"num_args\": 2}," \
  " {\"name\": \"reverse_static_kernel\", \"num_args\": 2}" EXTRA_KERNEL "]"

/* OpenCL C; a trailing __local pointer takes the launch's dynamic shared memory. */
#define OPENCL_SOURCE                                                                    \
  "__kernel void add_kernel(__global const float* a, __global const float* b,\\n"        \
  "                         __global float* c, int n) {\\n"                              \
  "  int i = get_global_id(0);\\n"                                                       \
  "  if (i < n) c[i] = a[i] + b[i];\\n"                                                  \
  "}\\n"                                                                                 \
  "__kernel void reverse_kernel(__global const float* x, __global float* y,\\n"          \
  "                             __local float* tile) {\\n"                               \
  "  int l = get_local_id(0), g = get_group_id(0), b = get_local_size(0);\\n"            \
  "  tile[l] = x[g * b + l];\\n"                                                         \
  "  barrier(CLK_LOCAL_MEM_FENCE);\\n"                                                   \
  "  y[g * b + l] = tile[b - 1 - l];\\n"                                                 \
  "}\\n"                                                                                 \
  "__kernel void reverse_static_kernel(__global const float* x, __global float* y) {\\n" \
  "  __local float tile[64];\\n"                                                         \
  "  int l = get_local_id(0), g = get_group_id(0), b = get_local_size(0);\\n"            \
  "  tile[l] = x[g * b + l];\\n"                                                         \
  "  barrier(CLK_LOCAL_MEM_FENCE);\\n"                                                   \
  "  y[g * b + l] = tile[b - 1 - l];\\n"                                                 \
  "}\\n" EXTRA_SOURCE

/* PTX of the same kernels (nvcc -ptx -arch=sm_80, ISA version 7.0). */
#define CUDA_PTX                                                     \
  ".version 7.0\\n"                                                  \
  ".target sm_80\\n"                                                 \
  ".address_size 64\\n"                                              \
  "  // .globl  add_kernel\\n"                                       \
  ".extern .shared .align 16 .b8 tile[];\\n"                         \
  ".visible .entry add_kernel(\\n"                                   \
  "  .param .u64 add_kernel_param_0,\\n"                             \
  "  .param .u64 add_kernel_param_1,\\n"                             \
  "  .param .u64 add_kernel_param_2,\\n"                             \
  "  .param .u32 add_kernel_param_3\\n"                              \
  ")\\n"                                                             \
  "{\\n"                                                             \
  "  .reg .pred   %p<2>;\\n"                                         \
  "  .reg .f32   %f<4>;\\n"                                          \
  "  .reg .b32   %r<6>;\\n"                                          \
  "  .reg .b64   %rd<11>;\\n"                                        \
  "  ld.param.u64   %rd1, [add_kernel_param_0];\\n"                  \
  "  ld.param.u64   %rd2, [add_kernel_param_1];\\n"                  \
  "  ld.param.u64   %rd3, [add_kernel_param_2];\\n"                  \
  "  ld.param.u32   %r2, [add_kernel_param_3];\\n"                   \
  "  mov.u32   %r3, %ctaid.x;\\n"                                    \
  "  mov.u32   %r4, %ntid.x;\\n"                                     \
  "  mov.u32   %r5, %tid.x;\\n"                                      \
  "  mad.lo.s32   %r1, %r3, %r4, %r5;\\n"                            \
  "  setp.ge.s32   %p1, %r1, %r2;\\n"                                \
  "  @%p1 bra   $L__BB0_2;\\n"                                       \
  "  cvta.to.global.u64   %rd4, %rd1;\\n"                            \
  "  mul.wide.s32   %rd5, %r1, 4;\\n"                                \
  "  add.s64   %rd6, %rd4, %rd5;\\n"                                 \
  "  cvta.to.global.u64   %rd7, %rd2;\\n"                            \
  "  add.s64   %rd8, %rd7, %rd5;\\n"                                 \
  "  ld.global.f32   %f1, [%rd8];\\n"                                \
  "  ld.global.f32   %f2, [%rd6];\\n"                                \
  "  add.f32   %f3, %f2, %f1;\\n"                                    \
  "  cvta.to.global.u64   %rd9, %rd3;\\n"                            \
  "  add.s64   %rd10, %rd9, %rd5;\\n"                                \
  "  st.global.f32   [%rd10], %f3;\\n"                               \
  "$L__BB0_2:\\n"                                                    \
  "  ret;\\n"                                                        \
  "}\\n"                                                             \
  "  // .globl  reverse_kernel\\n"                                   \
  ".visible .entry reverse_kernel(\\n"                               \
  "  .param .u64 reverse_kernel_param_0,\\n"                         \
  "  .param .u64 reverse_kernel_param_1\\n"                          \
  ")\\n"                                                             \
  "{\\n"                                                             \
  "  .reg .f32   %f<3>;\\n"                                          \
  "  .reg .b32   %r<12>;\\n"                                         \
  "  .reg .b64   %rd<8>;\\n"                                         \
  "  ld.param.u64   %rd1, [reverse_kernel_param_0];\\n"              \
  "  ld.param.u64   %rd2, [reverse_kernel_param_1];\\n"              \
  "  cvta.to.global.u64   %rd3, %rd2;\\n"                            \
  "  cvta.to.global.u64   %rd4, %rd1;\\n"                            \
  "  mov.u32   %r1, %tid.x;\\n"                                      \
  "  mov.u32   %r2, %ctaid.x;\\n"                                    \
  "  mov.u32   %r3, %ntid.x;\\n"                                     \
  "  mad.lo.s32   %r4, %r2, %r3, %r1;\\n"                            \
  "  mul.wide.s32   %rd5, %r4, 4;\\n"                                \
  "  add.s64   %rd6, %rd4, %rd5;\\n"                                 \
  "  ld.global.f32   %f1, [%rd6];\\n"                                \
  "  shl.b32   %r5, %r1, 2;\\n"                                      \
  "  mov.u32   %r6, tile;\\n"                                        \
  "  add.s32   %r7, %r6, %r5;\\n"                                    \
  "  st.shared.f32   [%r7], %f1;\\n"                                 \
  "  bar.sync   0;\\n"                                               \
  "  not.b32   %r8, %r1;\\n"                                         \
  "  add.s32   %r9, %r3, %r8;\\n"                                    \
  "  shl.b32   %r10, %r9, 2;\\n"                                     \
  "  add.s32   %r11, %r6, %r10;\\n"                                  \
  "  ld.shared.f32   %f2, [%r11];\\n"                                \
  "  add.s64   %rd7, %rd3, %rd5;\\n"                                 \
  "  st.global.f32   [%rd7], %f2;\\n"                                \
  "  ret;\\n"                                                        \
  "}\\n"                                                             \
  "  // .globl  reverse_static_kernel\\n"                            \
  ".visible .entry reverse_static_kernel(\\n"                        \
  "  .param .u64 reverse_static_kernel_param_0,\\n"                  \
  "  .param .u64 reverse_static_kernel_param_1\\n"                   \
  ")\\n"                                                             \
  "{\\n"                                                             \
  "  .reg .f32   %f<3>;\\n"                                          \
  "  .reg .b32   %r<12>;\\n"                                         \
  "  .reg .b64   %rd<8>;\\n"                                         \
  "  // demoted variable\\n"                                         \
  "  .shared .align 4 .b8 _ZZ21reverse_static_kernelE4tile[256];\\n" \
  "  ld.param.u64   %rd1, [reverse_static_kernel_param_0];\\n"       \
  "  ld.param.u64   %rd2, [reverse_static_kernel_param_1];\\n"       \
  "  cvta.to.global.u64   %rd3, %rd2;\\n"                            \
  "  cvta.to.global.u64   %rd4, %rd1;\\n"                            \
  "  mov.u32   %r1, %tid.x;\\n"                                      \
  "  mov.u32   %r2, %ctaid.x;\\n"                                    \
  "  mov.u32   %r3, %ntid.x;\\n"                                     \
  "  mad.lo.s32   %r4, %r2, %r3, %r1;\\n"                            \
  "  mul.wide.s32   %rd5, %r4, 4;\\n"                                \
  "  add.s64   %rd6, %rd4, %rd5;\\n"                                 \
  "  ld.global.f32   %f1, [%rd6];\\n"                                \
  "  shl.b32   %r5, %r1, 2;\\n"                                      \
  "  mov.u32   %r6, _ZZ21reverse_static_kernelE4tile;\\n"            \
  "  add.s32   %r7, %r6, %r5;\\n"                                    \
  "  st.shared.f32   [%r7], %f1;\\n"                                 \
  "  bar.sync   0;\\n"                                               \
  "  not.b32   %r8, %r1;\\n"                                         \
  "  add.s32   %r9, %r3, %r8;\\n"                                    \
  "  shl.b32   %r10, %r9, 2;\\n"                                     \
  "  add.s32   %r11, %r6, %r10;\\n"                                  \
  "  ld.shared.f32   %f2, [%r11];\\n"                                \
  "  add.s64   %rd7, %rd3, %rd5;\\n"                                 \
  "  st.global.f32   [%rd7], %f2;\\n"                                \
  "  ret;\\n"                                                        \
  "}\\n"

#define ABI_AND_TARGET "\"abi_version\": 2, \"target\": \"llvm\""

#if defined(KILN_DEVICE_VARIANT_OPENCL) || defined(KILN_DEVICE_VARIANT_NO_CTX)
#define EXTRA_KERNEL ""
#define EXTRA_SOURCE ""
#elif defined(KILN_DEVICE_VARIANT_BAD_PROGRAM)
#define EXTRA_KERNEL ""
#define EXTRA_SOURCE "__kernel void broken(__global float* a) { a[0] = kiln_undefined_name; }\\n"
#elif defined(KILN_DEVICE_VARIANT_MISSING_KERNEL)
#define EXTRA_KERNEL ", {\"name\": \"kiln_absent_kernel\", \"num_args\": 1}"
#define EXTRA_SOURCE ""
#elif defined(KILN_DEVICE_VARIANT_CUDA)
#define EXTRA_KERNEL ""
#else
#error "define one KILN_DEVICE_VARIANT_*"
#endif

#if defined(KILN_DEVICE_VARIANT_CUDA)
const char kiln_module_manifest[] =
    "{" ABI_AND_TARGET ", \"functions\": " FUNCTIONS_JSON
    ", \"device_blobs\": [{\"kind\": \"cuda\", \"format\": \"ptx\", \"arch\": \"sm_80\", "
    "\"text\": \"" CUDA_PTX "\"}], \"device_kernels\": " KERNELS_JSON "}";
#else
const char kiln_module_manifest[] =
    "{" ABI_AND_TARGET ", \"functions\": " FUNCTIONS_JSON
    ", \"device_blobs\": [{\"kind\": \"opencl\", \"format\": \"cl\", \"text\": \"" OPENCL_SOURCE
    "\"}], \"device_kernels\": " KERNELS_JSON "}";
#endif
