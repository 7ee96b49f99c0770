/* kiln's minimal runtime, C API: loads compiled modules, checks arguments against their specs,
 * calls kernels, and serves compiled code with a thread pool, workspaces and error messages.
 * libkiln_runtime.so has no compiler inside; it links libc, libdl, pthreads and libstdc++ only. */
#ifndef KILN_RUNTIME_C_RUNTIME_API_H_
#define KILN_RUNTIME_C_RUNTIME_API_H_

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define KILN_RUNTIME_API __declspec(dllexport)
#else
#define KILN_RUNTIME_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ============================================================================================
 * The packed calling convention
 * ============================================================================================
 *
 * Every compiled function is exported from its module as one C symbol of type KilnPackedCFunc:
 *
 *     int32_t kiln_main(const KilnValue* args, const int32_t* type_codes, int32_t num_args);
 *
 * Argument i is args[i], and type_codes[i] (a KilnTypeCode) says which member of the union is
 * set and what it means:
 *
 *   kKilnInt            v_int64: a signed integer or bool scalar, sign-extended to 64 bits
 *                       (bool is 0 or 1).
 *   kKilnUInt           v_int64: an unsigned integer scalar; the 64 bits hold the unsigned value.
 *                       (An unsigned parameter also accepts kKilnInt with a value >= 0.)
 *   kKilnFloat          v_float64: a floating-point scalar widened to double; a float32 or
 *                       float16 parameter is rounded back to its own type by the kernel.
 *   kKilnDLTensorHandle v_handle: a DLTensor* (DLPack). The element at index (i0, i1, ...) is at
 *                       (char*)data + byte_offset + sum(ik * stride_k) * element_bytes, where
 *                       stride_k comes from strides, or from the compact row-major layout when
 *                       strides is NULL.
 *   kKilnNull           v_handle is NULL: "no value". No compiled parameter accepts it today.
 *
 * The kernel returns 0 on success. On failure it calls KilnSetLastError(message) first and then
 * returns a nonzero value; the message names the function and says what went wrong.
 *
 * The runtime checks every argument against the function's KilnArgSpec (from the module's
 * manifest) before the kernel runs: the argument count, each type code, and for each tensor its
 * dtype, ndim, shape (symbolic extents consistent across arguments), strides, device and the
 * alignment of data + byte_offset; for each integer scalar that its value fits its dtype. The
 * kernel trusts these facts and repeats none of these checks. A tensor with zero elements may
 * have a NULL or unaligned data pointer: the kernel touches no memory through it.
 *
 * Kernels may be called concurrently from several threads and must keep no mutable global state.
 * They call back into the runtime only through the functions marked "called by compiled code"
 * below; a module refers to them by name as undefined symbols, which the runtime that loads the
 * module provides (it makes its own symbols global before opening a module).
 */

/*! \brief One packed argument; which member is set is told by its KilnTypeCode. */
typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
} KilnValue;

/*! \brief The type code of a packed argument (values fixed by the ABI; see above). */
typedef enum {
  kKilnInt = 0,
  kKilnUInt = 1,
  kKilnFloat = 2,
  kKilnNull = 4,
  kKilnDLTensorHandle = 7,
} KilnTypeCode;

/*! \brief The type of the symbol a module exports for each compiled function. */
typedef int32_t (*KilnPackedCFunc)(const KilnValue* args, const int32_t* type_codes,
                                   int32_t num_args);

/*! \brief The manifest ABI version this runtime reads and calls (see "The module manifest"). */
#define KILN_RUNTIME_ABI_VERSION 1

/*! \brief DLPack's code for bool (kDLBool in DLPack >= 0.8), spelled out for older headers. */
#define KILN_DL_BOOL 6

/* ============================================================================================
 * Errors (called by compiled code and by hosts)
 * ============================================================================================
 * Every int-returning function of this API returns 0 on success and nonzero on failure, after
 * setting the calling thread's last-error message. */

/*! \brief Sets the calling thread's last-error message (copied). NULL clears it. */
KILN_RUNTIME_API void KilnSetLastError(const char* msg);

/*! \brief The calling thread's last-error message; "" when none. Valid until the next call of
 * KilnSetLastError on this thread. */
KILN_RUNTIME_API const char* KilnGetLastError(void);

/* ============================================================================================
 * Parallelism (called by compiled code)
 * ============================================================================================ */

/*! \brief One task of a parallel launch; returns 0 on success, nonzero after KilnSetLastError. */
typedef int32_t (*KilnParallelTask)(int32_t task_id, int32_t num_tasks, void* closure);

/*!
 * \brief Runs task(i, num_tasks, closure) for every i in [0, num_tasks) on the runtime's thread
 * pool (the calling thread takes part) and returns when all have finished.
 *
 * num_tasks <= 0 means one task per pool thread (KilnGetNumThreads()). Tasks are handed out
 * dynamically, so num_tasks may exceed the number of threads. Returns nonzero if a task failed;
 * the first failing task's message becomes the caller's last error, and tasks not yet started
 * are skipped. A launch from inside a task runs all of its tasks serially in the calling thread.
 * Launches from different host threads take turns on the pool.
 */
KILN_RUNTIME_API int32_t KilnBackendParallelLaunch(KilnParallelTask task, void* closure,
                                                   int32_t num_tasks);

/*!
 * \brief Sets the number of pool threads (the caller counts as one). n <= 0 restores the default:
 * the environment variable KILN_NUM_THREADS if it holds a positive integer, else the number of
 * cores this process may run on. Fails when called from inside a parallel task.
 */
KILN_RUNTIME_API int32_t KilnSetNumThreads(int32_t n);

/*! \brief The number of pool threads (the caller counts as one). */
KILN_RUNTIME_API int32_t KilnGetNumThreads(void);

/* ============================================================================================
 * Memory (called by compiled code and by hosts)
 * ============================================================================================ */

/*!
 * \brief Allocates a temporary buffer of a kernel: at least nbytes, 64-byte aligned. The dtype
 * hints are accepted for the ABI and unused. Freed chunks are cached per thread in size classes
 * (four per power of two) and reused by later allocations of the same class. Only kDLCPU is
 * served today; returns NULL with the last error set on failure.
 */
KILN_RUNTIME_API void* KilnBackendAllocWorkspace(int32_t device_type, int32_t device_id,
                                                 uint64_t nbytes, int32_t dtype_code_hint,
                                                 int32_t dtype_bits_hint);

/*! \brief Returns a chunk of KilnBackendAllocWorkspace to the calling thread's cache. */
KILN_RUNTIME_API int32_t KilnBackendFreeWorkspace(int32_t device_type, int32_t device_id,
                                                  void* ptr);

/*! \brief Allocates nbytes aligned to alignment (a power of two; 0 means 64). NULL on failure. */
KILN_RUNTIME_API void* KilnAllocAligned(size_t nbytes, size_t alignment);

/*! \brief Frees a buffer of KilnAllocAligned; NULL is ignored. */
KILN_RUNTIME_API void KilnFreeAligned(void* ptr);

/* ============================================================================================
 * Function specs
 * ============================================================================================ */

/*! \brief KilnArgSpec.kind: a DLTensor* argument or a scalar argument. */
enum { kKilnArgTensor = 0, kKilnArgScalar = 1 };

/*!
 * \brief What one parameter of a compiled function accepts. The runtime checks each argument
 * against it before calling the kernel.
 */
typedef struct {
  /*! \brief Parameter name, used in messages. */
  const char* name;
  /*! \brief kKilnArgTensor or kKilnArgScalar. */
  int32_t kind;
  /*! \brief Element dtype of a tensor, or the dtype of a scalar (lanes 1). */
  DLDataType dtype;
  /*! \brief Tensors: number of dimensions. */
  int32_t ndim;
  /*! \brief Tensors: ndim extents. e >= 0 is a fixed extent; e < 0 is symbolic variable number
   * -(e + 1), bound by its first occurrence in argument order and checked at the others. */
  const int64_t* shape;
  /*! \brief Tensors: NULL requires a compact row-major layout (a DLTensor whose strides are NULL,
   * or equal to the compact strides in every dimension of extent > 1); otherwise ndim entries in
   * elements, encoded like shape. */
  const int64_t* strides;
  /*! \brief Tensors: the DLDeviceType the data must live on (kDLCPU also accepts kDLCUDAHost). */
  int32_t device_type;
  /*! \brief Tensors: required byte alignment of data + byte_offset (a power of two; 1: none). */
  int32_t alignment;
} KilnArgSpec;

/*! \brief The signature of one compiled function, as the module's manifest states it. */
typedef struct {
  /*! \brief Function name (what KilnModuleGetFunction looks up). */
  const char* name;
  /*! \brief The exported KilnPackedCFunc symbol. */
  const char* symbol;
  int32_t num_args;
  const KilnArgSpec* args;
  /*! \brief Names of the symbolic variables that shapes and strides refer to. */
  int32_t num_sym_vars;
  const char* const* sym_var_names;
} KilnFuncSpec;

/* ============================================================================================
 * The module manifest
 * ============================================================================================
 *
 * An exported module is a shared library that defines, besides one KilnPackedCFunc per function,
 *
 *     const char kiln_module_manifest[];   // a NUL-terminated UTF-8 JSON text
 *
 * with default visibility. The JSON object has these keys (unknown keys are ignored; a change
 * that old runtimes would misread raises abi_version):
 *
 *   "abi_version"   integer, required; must equal KILN_RUNTIME_ABI_VERSION.
 *   "target"        string, required; the host target the code was compiled for, as kiln spells
 *                   targets: "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver4". Its kind (first
 *                   word) must be "llvm" or "c"; the architecture of -mtriple, when given, must be
 *                   this machine's, and its OS, when named, Linux. -mcpu is informational.
 *   "host_features" array of strings, optional; CPU features the code needs, in LLVM's spelling
 *                   ("avx2", "fma", "avx512f", "avx512vnni", "sse4.2"; a leading '+' is allowed).
 *                   The module is refused, naming them, when any is missing on this CPU.
 *   "functions"     array, required; one object per function:
 *       "name"      string; "symbol": string, the exported KilnPackedCFunc;
 *       "sym_vars"  array of strings, optional: the symbolic variables, numbered in order;
 *       "args"      array of argument objects:
 *           "name"      string;  "kind": "tensor" or "scalar";
 *           "dtype"     "int8".."int64", "uint8".."uint64", "float16", "float32", "float64",
 *                       "bfloat16", "bool", with an "xN" suffix for N lanes ("float32x4");
 *           tensors only:
 *           "shape"     array; each entry an integer >= 0 or the name of a sym_var;
 *           "ndim"      integer, optional; must equal the length of shape;
 *           "strides"   null (compact row-major, the default) or an array like shape;
 *           "device"    "cpu" (default), "cuda", "opencl", ... (DLPack device names);
 *           "alignment" integer power of two, optional, default 1.
 *   "device_blobs"  array, optional; device code (CUDA, OpenCL) for device launches. This runtime
 *                   serves host code only and refuses a module whose device_blobs is not empty.
 *
 * Example:
 *   {"abi_version": 1, "target": "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver4",
 *    "host_features": ["avx512f"],
 *    "functions": [{"name": "main", "symbol": "kiln_main", "sym_vars": ["n"],
 *      "args": [{"name": "A", "kind": "tensor", "dtype": "float32", "shape": [128, "n"],
 *                "strides": null, "device": "cpu", "alignment": 64},
 *               {"name": "alpha", "kind": "scalar", "dtype": "float32"}]}],
 *    "device_blobs": []}
 */

/* ============================================================================================
 * Modules and functions (used by hosts)
 * ============================================================================================ */

/*! \brief A loaded module; owns its functions' specs and, when loaded from a file, the library. */
typedef struct KilnModule* KilnModuleHandle;
/*! \brief A function of a module; valid until its module is freed. */
typedef const struct KilnFunction* KilnFunctionHandle;
/*! \brief Resolves a kernel symbol of an in-process module; returns NULL when absent. */
typedef void* (*KilnSymbolResolver)(void* ctx, const char* symbol);

/*!
 * \brief Loads an exported module: dlopen(path, RTLD_LOCAL | RTLD_NOW) (a path without '/' is
 * taken relative to the working directory), reads kiln_module_manifest, checks its ABI version,
 * target and CPU features, and resolves every function's symbol. Refuses, with a message, any
 * module it cannot run.
 */
KILN_RUNTIME_API int32_t KilnModuleLoadFromFile(const char* path, KilnModuleHandle* out);

/*!
 * \brief Creates a module from a manifest and code that is already in the process (a JIT).
 * Symbols are resolved through resolver(resolver_ctx, symbol) when resolver is not NULL, else
 * with dlsym(dl_handle, symbol). On success the module takes ownership of dl_handle (dlclose on
 * free); on failure the caller keeps it. The caller keeps resolver_ctx and the code it resolves
 * to alive until KilnModuleFree. The manifest is checked as in KilnModuleLoadFromFile.
 */
KILN_RUNTIME_API int32_t KilnModuleCreate(const char* manifest_json, void* dl_handle_or_null,
                                          KilnSymbolResolver resolver, void* resolver_ctx,
                                          KilnModuleHandle* out);

/*! \brief Frees a module (NULL is ignored); its function handles become invalid. */
KILN_RUNTIME_API int32_t KilnModuleFree(KilnModuleHandle module);

/*! \brief Looks up a function by name; the error lists the available names when it is absent. */
KILN_RUNTIME_API int32_t KilnModuleGetFunction(KilnModuleHandle module, const char* name,
                                               KilnFunctionHandle* out);

/*! \brief The names of the module's functions in manifest order; the array is owned by the
 * module. */
KILN_RUNTIME_API int32_t KilnModuleListFunctions(KilnModuleHandle module, int32_t* num_out,
                                                 const char* const** names_out);

/*! \brief The manifest's target string; owned by the module. */
KILN_RUNTIME_API int32_t KilnModuleGetTarget(KilnModuleHandle module, const char** out);

/*! \brief The function's spec (name, symbol, arguments, symbolic variables); owned by the
 * module. */
KILN_RUNTIME_API int32_t KilnFuncGetSpec(KilnFunctionHandle func, const KilnFuncSpec** out);

/*!
 * \brief Calls a function: checks the arguments against its spec, then runs the kernel. Returns
 * nonzero with the last error set when an argument does not match (e.g. "main: argument A:
 * expected dtype float32, found int64") or the kernel fails. Never touches tensor memory itself.
 */
KILN_RUNTIME_API int32_t KilnFuncCall(KilnFunctionHandle func, const KilnValue* args,
                                      const int32_t* type_codes, int32_t num_args);

/*! \brief Checks arguments against a spec as KilnFuncCall does, without calling anything. */
KILN_RUNTIME_API int32_t KilnFuncCheckArgs(const KilnFuncSpec* spec, const KilnValue* args,
                                           const int32_t* type_codes, int32_t num_args);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_C_RUNTIME_API_H_ */
