/* A hand-written stand-in for a module exported by kiln's code generator: kernels that follow the
 * packed calling convention and call back into the runtime (errors, thread pool, workspace),
 * hidden as generated kernels are, the table that exports them, and a manifest. Built several
 * times with KILN_FAKE_VARIANT_* to give the runtime modules to refuse; the build seals each with
 * its checksum trailer as kiln's exporter does. */
#include <stdio.h>

#include "kiln/runtime/c_runtime_api.h"

#if defined(__x86_64__)
#define HOST_TRIPLE "x86_64-pc-linux-gnu"
#define HOST_FEATURES "\"sse2\""
#elif defined(__aarch64__)
#define HOST_TRIPLE "aarch64-unknown-linux-gnu"
#define HOST_FEATURES ""
#endif

#define DATA(tensor, type) ((type*)((char*)(tensor)->data + (tensor)->byte_offset))

/* Kernels check nothing, so they stay out of the dynamic symbol table. */
#define KERNEL __attribute__((visibility("hidden"))) int32_t

/* C = A + B over float32[n]. */
KERNEL kiln_unchecked_main(const KilnValue* args, const int32_t* type_codes, int32_t num_args) {
  const DLTensor* a = (const DLTensor*)args[0].v_handle;
  const DLTensor* b = (const DLTensor*)args[1].v_handle;
  const DLTensor* c = (const DLTensor*)args[2].v_handle;
  for (int64_t i = 0; i < a->shape[0]; ++i)
    DATA(c, float)[i] = DATA(a, float)[i] + DATA(b, float)[i];
  return 0;
}

/* C = alpha * A + B over float32[4, n]. */
KERNEL kiln_unchecked_scale_add(const KilnValue* args, const int32_t* type_codes,
                                int32_t num_args) {
  const DLTensor* a = (const DLTensor*)args[0].v_handle;
  const DLTensor* b = (const DLTensor*)args[1].v_handle;
  float alpha = (float)args[2].v_float64;
  const DLTensor* c = (const DLTensor*)args[3].v_handle;
  int64_t count = a->shape[0] * a->shape[1];
  for (int64_t i = 0; i < count; ++i) {
    DATA(c, float)[i] = alpha * DATA(a, float)[i] + DATA(b, float)[i];
  }
  return 0;
}

/* out[i] = sum_j X[i, j] for X float32[m, n] with row stride s (a view into a wider array). */
KERNEL kiln_unchecked_row_sums(const KilnValue* args, const int32_t* type_codes, int32_t num_args) {
  const DLTensor* x = (const DLTensor*)args[0].v_handle;
  const DLTensor* out = (const DLTensor*)args[1].v_handle;
  int64_t row_stride = x->strides != NULL ? x->strides[0] : x->shape[1];
  for (int64_t i = 0; i < x->shape[0]; ++i) {
    float sum = 0;
    for (int64_t j = 0; j < x->shape[1]; ++j) sum += DATA(x, float)[i * row_stride + j];
    DATA(out, float)[i] = sum;
  }
  return 0;
}

/* out[i] = flag ? value : -value over int64[n]. */
KERNEL kiln_unchecked_fill(const KilnValue* args, const int32_t* type_codes, int32_t num_args) {
  const DLTensor* out = (const DLTensor*)args[0].v_handle;
  int64_t value = args[2].v_int64 ? args[1].v_int64 : -args[1].v_int64;
  for (int64_t i = 0; i < out->shape[0]; ++i) DATA(out, int64_t)[i] = value;
  return 0;
}

/* Always fails, as a kernel that detects a runtime condition would. */
KERNEL kiln_unchecked_fail_always(const KilnValue* args, const int32_t* type_codes,
                                  int32_t num_args) {
  char message[128];
  snprintf(message, sizeof(message), "fail_always: deliberate failure with x = %d",
           (int)args[0].v_int64);
  KilnSetLastError(message);
  return -1;
}

/* parallel_sum: out[0] = sum(X), X float64[n], split into num_tasks tasks whose partial sums go
 * to a workspace; each task sums its half-chunks through a nested (serial) launch. */
typedef struct {
  const double* x;
  int64_t begin;
  int64_t end;
  double partial[2];
} Chunk;

typedef struct {
  const double* x;
  int64_t n;
  double* partials;
} SumClosure;

static int32_t sum_half(int32_t half, int32_t num_halves, void* closure) {
  Chunk* chunk = (Chunk*)closure;
  int64_t middle = chunk->begin + (chunk->end - chunk->begin) / 2;
  int64_t begin = half == 0 ? chunk->begin : middle;
  int64_t end = half == 0 ? middle : chunk->end;
  double sum = 0;
  for (int64_t i = begin; i < end; ++i) sum += chunk->x[i];
  chunk->partial[half] = sum;
  return 0;
}

static int32_t sum_task(int32_t task_id, int32_t num_tasks, void* closure) {
  SumClosure* sum = (SumClosure*)closure;
  Chunk chunk;
  chunk.x = sum->x;
  chunk.begin = sum->n * task_id / num_tasks;
  chunk.end = sum->n * (task_id + 1) / num_tasks;
  if (KilnBackendParallelLaunch(sum_half, &chunk, 2) != 0) return -1;
  sum->partials[task_id] = chunk.partial[0] + chunk.partial[1];
  return 0;
}

KERNEL kiln_unchecked_parallel_sum(const KilnValue* args, const int32_t* type_codes,
                                   int32_t num_args) {
  const DLTensor* x = (const DLTensor*)args[0].v_handle;
  const DLTensor* out = (const DLTensor*)args[1].v_handle;
  int32_t num_tasks = (int32_t)args[2].v_int64;
  if (num_tasks <= 0) {
    KilnSetLastError("parallel_sum: num_tasks must be positive");
    return -1;
  }
  double* partials =
      (double*)KilnBackendAllocWorkspace(kDLCPU, 0, sizeof(double) * num_tasks, kDLFloat, 64);
  if (partials == NULL) return -1;
  SumClosure closure = {DATA(x, double), x->shape[0], partials};
  int32_t status = KilnBackendParallelLaunch(sum_task, &closure, num_tasks);
  if (status == 0) {
    double total = 0;
    for (int32_t t = 0; t < num_tasks; ++t) total += partials[t];
    DATA(out, double)[0] = total;
  }
  KilnBackendFreeWorkspace(kDLCPU, 0, partials);
  return status;
}

#define FUNCTIONS_JSON                                                                           \
  "[{\"name\": \"main\", \"symbol\": \"kiln_unchecked_main\", \"sym_vars\": [\"n\"],"            \
  " \"sym_var_dtypes\": [\"int32\"], \"args\": ["                                                \
  "{\"name\": \"A\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [\"n\"],"          \
  " \"alignment\": 64, \"written\": false},"                                                     \
  "{\"name\": \"B\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [\"n\"],"          \
  " \"alignment\": 64, \"written\": false},"                                                     \
  "{\"name\": \"C\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [\"n\"],"          \
  " \"alignment\": 64, \"written\": true, \"streaming_alignment\": 64}]},"                       \
  "{\"name\": \"scale_add\", \"symbol\": \"kiln_unchecked_scale_add\", \"sym_vars\": [\"n\"],"   \
  " \"args\": ["                                                                                 \
  "{\"name\": \"A\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"ndim\": 2,"                 \
  " \"shape\": [4, \"n\"], \"strides\": null, \"device\": \"cpu\", \"written\": false},"         \
  "{\"name\": \"B\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [4, \"n\"],"       \
  " \"written\": false},"                                                                        \
  "{\"name\": \"alpha\", \"kind\": \"scalar\", \"dtype\": \"float32\"},"                         \
  "{\"name\": \"C\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [4, \"n\"],"       \
  " \"alignment\": 64}]},"                                                                       \
  "{\"name\": \"row_sums\", \"symbol\": \"kiln_unchecked_row_sums\","                            \
  " \"sym_vars\": [\"m\", \"n\", \"s\"], \"args\": ["                                            \
  "{\"name\": \"X\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [\"m\", \"n\"],"   \
  " \"strides\": [\"s\", 1], \"written\": false},"                                               \
  "{\"name\": \"out\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [\"m\"],"        \
  " \"written\": true}]},"                                                                       \
  "{\"name\": \"fill\", \"symbol\": \"kiln_unchecked_fill\", \"sym_vars\": [\"n\"], \"args\": [" \
  "{\"name\": \"out\", \"kind\": \"tensor\", \"dtype\": \"int64\", \"shape\": [\"n\"]},"         \
  "{\"name\": \"value\", \"kind\": \"scalar\", \"dtype\": \"int32\"},"                           \
  "{\"name\": \"flag\", \"kind\": \"scalar\", \"dtype\": \"bool\"}]},"                           \
  "{\"name\": \"fail_always\", \"symbol\": \"kiln_unchecked_fail_always\", \"args\": ["          \
  "{\"name\": \"x\", \"kind\": \"scalar\", \"dtype\": \"int32\"}]},"                             \
  "{\"name\": \"parallel_sum\", \"symbol\": \"kiln_unchecked_parallel_sum\","                    \
  " \"sym_vars\": [\"n\"], \"args\": ["                                                          \
  "{\"name\": \"X\", \"kind\": \"tensor\", \"dtype\": \"float64\", \"shape\": [\"n\"],"          \
  " \"written\": false},"                                                                        \
  "{\"name\": \"out\", \"kind\": \"tensor\", \"dtype\": \"float64\", \"shape\": [1],"            \
  " \"written\": true},"                                                                         \
  "{\"name\": \"num_tasks\", \"kind\": \"scalar\", \"dtype\": \"int32\"}]}]"

#define TARGET_JSON "\"llvm -mtriple=" HOST_TRIPLE "\""
#define ABI "\"abi_version\": 2"

/* The kernel table, in manifest order, as the code generator writes it. */
#define KERNEL_TABLE                                                            \
  const KilnPackedCFunc kiln_module_functions[] = {kiln_unchecked_main,         \
                                                   kiln_unchecked_scale_add,    \
                                                   kiln_unchecked_row_sums,     \
                                                   kiln_unchecked_fill,         \
                                                   kiln_unchecked_fail_always,  \
                                                   kiln_unchecked_parallel_sum, \
                                                   NULL};

#if defined(KILN_FAKE_VARIANT_OK)
const char kiln_module_manifest[] =
    "{" ABI ", \"target\": " TARGET_JSON ", \"host_features\": [" HOST_FEATURES
    "], \"functions\": " FUNCTIONS_JSON ", \"device_blobs\": []}";
KERNEL_TABLE
#elif defined(KILN_FAKE_VARIANT_OLD_ABI)
/* A module of runtime ABI version 1: kernels exported by name, no table. */
const char kiln_module_manifest[] =
    "{\"abi_version\": 1, \"target\": " TARGET_JSON ", \"functions\": " FUNCTIONS_JSON "}";
#elif defined(KILN_FAKE_VARIANT_BAD_ABI)
const char kiln_module_manifest[] =
    "{\"abi_version\": 99, \"target\": " TARGET_JSON ", \"functions\": " FUNCTIONS_JSON "}";
KERNEL_TABLE
#elif defined(KILN_FAKE_VARIANT_MISSING_FEATURE)
const char kiln_module_manifest[] = "{" ABI ", \"target\": " TARGET_JSON
                                    ", \"host_features\": [\"kiln_fake_feature\"], "
                                    "\"functions\": " FUNCTIONS_JSON "}";
KERNEL_TABLE
#elif defined(KILN_FAKE_VARIANT_WRONG_ARCH)
const char kiln_module_manifest[] = "{" ABI
                                    ", \"target\": \"llvm -mtriple=riscv64-unknown-linux-gnu\", "
                                    "\"functions\": " FUNCTIONS_JSON "}";
KERNEL_TABLE
#elif defined(KILN_FAKE_VARIANT_MALFORMED)
const char kiln_module_manifest[] =
    "{" ABI ", \"target\": " TARGET_JSON ", \"functions\": [{\"name\": \"main\", ";
KERNEL_TABLE
#elif defined(KILN_FAKE_VARIANT_DEVICE_BLOB)
const char kiln_module_manifest[] =
    "{" ABI ", \"target\": " TARGET_JSON ", \"functions\": " FUNCTIONS_JSON
    ", \"device_blobs\": [{\"kind\": \"vulkan\", \"format\": \"spirv\"}]}";
KERNEL_TABLE
#elif defined(KILN_FAKE_VARIANT_MISSING_KERNEL)
/* The manifest lists one function more than the table holds. */
const char kiln_module_manifest[] =
    "{" ABI ", \"target\": " TARGET_JSON
    ", \"functions\": [{\"name\": \"main\", "
    "\"symbol\": \"kiln_unchecked_main\", \"args\": []}, {\"name\": \"ghost\", "
    "\"symbol\": \"kiln_unchecked_ghost\", \"args\": []}]}";
const KilnPackedCFunc kiln_module_functions[] = {kiln_unchecked_main, NULL};
#elif defined(KILN_FAKE_VARIANT_NO_MANIFEST)
/* No kiln_module_manifest: an ordinary shared library, not a kiln module. */
KERNEL_TABLE
#else
#error "define one KILN_FAKE_VARIANT_*"
#endif
