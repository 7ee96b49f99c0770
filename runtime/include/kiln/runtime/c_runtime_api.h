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
 * Every compiled function is a kernel of type KilnPackedCFunc:
 *
 *     int32_t kernel(const KilnValue* args, const int32_t* type_codes, int32_t num_args);
 *
 * Kernels check nothing, so a module does not export them: they have internal linkage and names
 * that say so (kiln_unchecked_<name>), and the module exports only its manifest and the table
 * of its kernels (see "The module manifest"). KilnFuncCall, which checks every argument first,
 * is the only way in.
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
 * returns a nonzero value; the message names the function and says what went wrong. KilnFuncCall
 * reports any nonzero kernel status as kKilnErrorRuntime.
 *
 * The runtime checks every argument against the function's KilnArgSpec (from the module's
 * manifest) before the kernel runs: the argument count, each type code, and for each tensor its
 * dtype, ndim, shape (symbolic extents consistent across arguments), strides, device and the
 * alignment of data + byte_offset; that each symbolic variable's value fits its dtype and that
 * no tensor's element count or byte extent overflows 64 bits; for each integer scalar that its
 * value fits its dtype. The kernel trusts these facts and repeats none of these checks. A tensor
 * with zero elements may have a NULL or unaligned data pointer: the kernel touches no memory
 * through it.
 *
 * Overlapping arguments. A call behaves as if the kernel read all of its inputs before writing
 * any output, as NumPy does with an `out=` array that overlaps an input. The manifest says which
 * tensors a function writes ("written"); every tensor the kernel sees is then distinct from
 * every other memory it writes, which is what lets kernels assume no aliasing. Before the kernel
 * runs, the runtime compares the bytes each tensor spans (from data, byte_offset, shape, strides
 * and the element size; a tensor without elements spans nothing):
 *   - a tensor the function only reads that overlaps a written tensor is copied into a
 *     temporary buffer with the same layout (strides, and the address modulo the alignment the
 *     spec requires), and the kernel reads the copy; the copy is freed after the call;
 *   - two written tensors that overlap are refused with kKilnErrorValue naming both: no order of
 *     the writes would be right.
 * Tensors that overlap only other read-only tensors are passed as they are. Spans are compared,
 * not elements, so interleaved views (the even and the odd elements of one array) count as
 * overlapping. Only tensors in CPU memory (kDLCPU, kDLCUDAHost) are compared.
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

/*! \brief The manifest ABI version this runtime reads and calls (see "The module manifest").
 * Version 2: kernels are reached through the kiln_module_functions table, not by symbol, and the
 * manifest states which tensors each function writes and the dtypes of its symbolic variables. */
#define KILN_RUNTIME_ABI_VERSION 2

/*! \brief DLPack's code for bool (kDLBool in DLPack >= 0.8), spelled out for older headers. */
#define KILN_DL_BOOL 6

/* ============================================================================================
 * Errors (called by compiled code and by hosts)
 * ============================================================================================
 * Every int32_t-returning function of this API returns 0 on success and a negative
 * KilnErrorCode on failure, after setting the calling thread's last-error message. The code says
 * what kind of failure it was, so that a host can react (or pick an exception class) without
 * reading the message. Compiled kernels only promise a nonzero status on failure. */

/*! \brief The kinds of failure the API reports (negative; 0 is success). */
typedef enum {
  kKilnSuccess = 0,
  /*! \brief A value is out of range or inconsistent: a shape, stride, alignment, symbolic
   * variable or scalar that does not match the spec, overlapping written tensors, a NULL or
   * invalid argument of an API function. */
  kKilnErrorValue = -1,
  /*! \brief The kind of an argument is wrong: the argument count, a type code, a dtype. */
  kKilnErrorType = -2,
  /*! \brief A name or index that does not exist, e.g. a function the module lacks. */
  kKilnErrorIndex = -3,
  /*! \brief A failure while running: a kernel failed, memory ran out, the thread pool refused. */
  kKilnErrorRuntime = -4,
  /*! \brief A module file that cannot be opened or is not an intact kiln module: missing,
   * unreadable, empty, not ELF, built for another machine, truncated, failing its checksum,
   * without its manifest or function table, or with a malformed manifest. */
  kKilnErrorModuleFile = -5,
  /*! \brief An intact module that this runtime or CPU cannot run: another ABI version, another
   * target architecture or OS, CPU features this CPU lacks, device code of a kind or format this
   * runtime does not load. */
  kKilnErrorModuleUnsupported = -6,
} KilnErrorCode;

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
  /*! \brief Tensors: nonzero when the function may write the tensor (see "Overlapping
   * arguments"); 0 when it only reads it. */
  int32_t written;
  /*! \brief Tensors: the byte alignment of data + byte_offset at which the function stores the
   * tensor past the caches (streaming stores, the loop annotation "pragma_nontemporal"); 0 when
   * it has no such stores. Less alignment is accepted and runs the plain stores, slower on
   * outputs larger than the caches. */
  int32_t streaming_alignment;
} KilnArgSpec;

/*! \brief The signature of one compiled function, as the module's manifest states it. */
typedef struct {
  /*! \brief Function name (what KilnModuleGetFunction looks up). */
  const char* name;
  /*! \brief The kernel's name inside the module (not exported; for messages and disassembly). */
  const char* symbol;
  int32_t num_args;
  const KilnArgSpec* args;
  /*! \brief Names of the symbolic variables that shapes and strides refer to. */
  int32_t num_sym_vars;
  const char* const* sym_var_names;
  /*! \brief The integer dtype of each symbolic variable (num_sym_vars entries; NULL means int64
   * for each): the value a call binds it to must fit. */
  const DLDataType* sym_var_dtypes;
  /*! \brief The largest value each symbolic variable may take (num_sym_vars entries; NULL means
   * no limit beyond its dtype's): the function's index arithmetic supports no larger one. */
  const int64_t* sym_var_max;
} KilnFuncSpec;

/* ============================================================================================
 * The module manifest
 * ============================================================================================
 *
 * An exported module is a shared library that exports exactly two symbols of its own, both with
 * default visibility:
 *
 *     const char kiln_module_manifest[];               // a NUL-terminated UTF-8 JSON text
 *     const KilnPackedCFunc kiln_module_functions[];   // the kernels in manifest order, then NULL
 *
 * The runtime calls kernels only through that table, after checking the arguments; the kernels
 * themselves are not exported (see "The packed calling convention"). The JSON object has these
 * keys (unknown keys are ignored; a change that old runtimes would misread raises abi_version):
 *
 *   "abi_version"   integer, required; must equal KILN_RUNTIME_ABI_VERSION.
 *   "target"        string, required; the host target the code was compiled for, as kiln spells
 *                   targets: "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver4". Its kind (first
 *                   word) must be "llvm" or "c"; the architecture of -mtriple, when given, must be
 *                   this machine's, and its OS, when named, Linux. -mcpu is informational.
 *   "host_features" array of strings, optional; CPU features the code needs, in LLVM's spelling
 *                   ("avx2", "fma", "avx512f", "avx512vnni", "sse4.2"; a leading '+' is allowed).
 *                   The module is refused, naming them, when any is missing on this CPU.
 *   "functions"     array, required; one object per function, in the order of the table:
 *       "name"      string; "symbol": string, the kernel's name inside the module (informational);
 *       "sym_vars"  array of strings, optional: the symbolic variables, numbered in order;
 *       "sym_var_dtypes" array of integer dtype names, optional, parallel to sym_vars ("int32",
 *                   "int64"; default "int64"): the value of each variable must fit its dtype;
 *       "sym_var_max" array, optional, parallel to sym_vars: an integer (the largest value the
 *                   function's index arithmetic supports, e.g. 2147483640 for an int32 extent
 *                   tiled by 8) or null (no limit but the dtype's);
 *       "args"      array of argument objects:
 *           "name"      string;  "kind": "tensor" or "scalar";
 *           "dtype"     "int8".."int64", "uint8".."uint64", "float16", "float32", "float64",
 *                       "bfloat16", "bool", with an "xN" suffix for N lanes ("float32x4");
 *           tensors only:
 *           "shape"     array; each entry an integer >= 0 or the name of a sym_var;
 *           "ndim"      integer, optional; must equal the length of shape;
 *           "strides"   null (compact row-major, the default) or an array like shape;
 *           "device"    "cpu" (default), "cuda", "opencl", ... (DLPack device names);
 *           "alignment" integer power of two, optional, default 1;
 *           "written"   boolean, optional, default true: whether the function may store into
 *                       the tensor (false: it only reads it).
 *   "device_blobs"  array, optional; the device code (OpenCL, CUDA) that host functions launch
 *                   (see "Device code and kernel launches"), one object per blob:
 *                     {"kind": "opencl", "format": "cl", "text": <OpenCL C source>,
 *                      "build_options": "-cl-fast-relaxed-math"}   (build_options optional)
 *                     {"kind": "cuda", "format": "cubin", "arch": "sm_80", "base64": <cubin>}
 *                     {"kind": "cuda", "format": "ptx", "arch": "sm_80", "text": <PTX>}
 *                   At most one OpenCL blob; any number of CUDA blobs (a cubin per arch and PTX).
 *                   A module with another kind or format is refused (kKilnErrorModuleUnsupported).
 *   "device_kernels" array, optional; the kernels of the device code, each {"name": "main_kernel0",
 *                   "num_args": 3}: the kernel's name in the device code and its parameter count
 *                   (dynamic shared memory aside). A kernel's index in this array is the
 *                   kernel_index of KilnDeviceLaunch.
 *
 * Example:
 *   {"abi_version": 2, "target": "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver4",
 *    "host_features": ["avx512f"],
 *    "functions": [{"name": "main", "symbol": "kiln_unchecked_main", "sym_vars": ["n"],
 *      "sym_var_dtypes": ["int32"],
 *      "args": [{"name": "A", "kind": "tensor", "dtype": "float32", "shape": [128, "n"],
 *                "strides": null, "device": "cpu", "alignment": 64, "written": false},
 *               {"name": "alpha", "kind": "scalar", "dtype": "float32"}]}],
 *    "device_blobs": []}
 *
 * A module with device blobs also defines the data symbol
 *
 *     void* kiln_module_device_ctx;                    // KILN_MODULE_DEVICE_CTX_SYMBOL
 *
 * with default visibility. The runtime stores the module's device state there when it creates the
 * module, before any function can run; host code passes it to KilnDeviceLaunch unread. A module
 * with device blobs that lacks the symbol is refused.
 *
 * The module file. After linking, the exporter appends a 24-byte trailer to the library, which
 * the dynamic loader ignores and KilnModuleLoadFromFile verifies before it maps anything:
 *
 *     uint64 little-endian   covered: the number of bytes before the trailer
 *     uint64 little-endian   FNV-1a 64-bit hash of those bytes (offset basis 0xcbf29ce484222325,
 *                            prime 0x100000001b3)
 *     8 bytes                the magic "KILNSUM1"
 *
 * so a truncated or corrupted file is refused with a message instead of faulting in dlopen.
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

/*! \brief The symbol of a module's kernel table (see "The module manifest"). */
#define KILN_MODULE_FUNCTIONS_SYMBOL "kiln_module_functions"
/*! \brief The symbol of a module's manifest text. */
#define KILN_MODULE_MANIFEST_SYMBOL "kiln_module_manifest"
/*! \brief The symbol (a void*) where the runtime stores the device state of a module with device
 * blobs (see "The module manifest"). */
#define KILN_MODULE_DEVICE_CTX_SYMBOL "kiln_module_device_ctx"

/*!
 * \brief Loads an exported module. Before dlopen maps anything it reads the file (a path without
 * '/' is taken relative to the working directory) and refuses, with kKilnErrorModuleFile, an
 * empty, non-ELF or truncated file, one for another machine (ELF class, byte order, machine) or
 * not a shared object, and one whose checksum trailer is missing or does not match (see "The
 * module file"). Then dlopen(RTLD_LOCAL | RTLD_NOW), kiln_module_manifest and
 * kiln_module_functions are read, and the ABI version, target and CPU features are judged
 * (kKilnErrorModuleUnsupported when the module cannot run here). The file must not change while
 * it is being loaded.
 */
KILN_RUNTIME_API int32_t KilnModuleLoadFromFile(const char* path, KilnModuleHandle* out);

/*!
 * \brief Creates a module from a manifest and code that is already in the process (a JIT).
 * The kernels are read from the table kiln_module_functions (see "The module manifest"),
 * resolved through resolver(resolver_ctx, "kiln_module_functions") when resolver is not NULL,
 * else with dlsym(dl_handle, ...). On success the module takes ownership of dl_handle (dlclose
 * on free); on failure the caller keeps it. The caller keeps resolver_ctx and the code it
 * resolves to alive until KilnModuleFree. The manifest is checked as in KilnModuleLoadFromFile.
 * A module with device blobs must also resolve kiln_module_device_ctx, which is written here.
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
 * \brief Calls a function: checks the arguments against its spec, copies read-only tensors that
 * overlap a written one (see "Overlapping arguments"), then runs the kernel. Returns
 * kKilnErrorType or kKilnErrorValue with the last error set when an argument does not match
 * (e.g. "main: argument A: expected dtype float32, found int64"), kKilnErrorRuntime when the
 * kernel fails or a copy cannot be allocated. Reads tensor memory only to copy an overlapping
 * input.
 */
KILN_RUNTIME_API int32_t KilnFuncCall(KilnFunctionHandle func, const KilnValue* args,
                                      const int32_t* type_codes, int32_t num_args);

/*! \brief Checks arguments against a spec as KilnFuncCall does (overlapping written tensors
 * included), without calling anything. */
KILN_RUNTIME_API int32_t KilnFuncCheckArgs(const KilnFuncSpec* spec, const KilnValue* args,
                                           const int32_t* type_codes, int32_t num_args);

/* ============================================================================================
 * Devices (used by hosts)
 * ============================================================================================
 *
 * GPU drivers are loaded when first used, never linked: OpenCL from libOpenCL.so.1 (the ICD
 * loader), CUDA from libcuda.so.1 (the driver API). A missing library, or a device index past the
 * devices found, fails with kKilnErrorRuntime and a message that names the library or the count;
 * it never ends the process.
 *
 * Devices are numbered per type. kDLCUDA: the driver's ordinals. kDLOpenCL: the devices of every
 * platform, GPUs first, then accelerators, then other devices (a CPU, e.g. PoCL), each group in
 * platform order; each OpenCL device gets one context and one in-order command queue, created on
 * first use and shared by all modules. kDLCPU: one device, 0, served by the calls where it makes
 * sense (count, exists, alloc, free, copy, synchronize).
 *
 * Device memory. A tensor of kDLCUDA holds a CUdeviceptr in DLTensor.data, one of kDLOpenCL a
 * cl_mem (a buffer of the device's context); in both, byte_offset must be 0 when the tensor is
 * passed to a compiled function (slicing device arrays is not supported). Work on a device runs
 * in the order it is issued (CUDA: on the legacy default stream of the device's primary context;
 * OpenCL: on its in-order queue). Launches and device-to-device copies return before they
 * finish; a copy to the host waits for everything issued before it.
 */

/*! \brief Attributes of a device (KilnDeviceAttribute). */
typedef enum {
  /*! \brief 1 when the device exists, else 0; never fails, even without a driver. */
  kKilnDeviceExists = 0,
  /*! \brief Threads per block (CUDA) or work-items per work-group (OpenCL), at most. */
  kKilnDeviceMaxThreadsPerBlock = 1,
  /*! \brief Bytes of shared memory per block (CUDA, without opting in to more) or of local
   * memory (OpenCL), at most. */
  kKilnDeviceMaxSharedMemoryPerBlock = 2,
  /*! \brief Threads that execute in lockstep: CUDA's warp size. OpenCL: the SIMD width the
   * vendor reports (NVIDIA's CL_DEVICE_WARP_SIZE_NV, AMD's CL_DEVICE_WAVEFRONT_WIDTH_AMD), else 1,
   * so that code for OpenCL never relies on implicit lockstep execution. */
  kKilnDeviceWarpSize = 3,
  /*! \brief major * 10 + minor (86 for 8.6); CUDA only (kKilnErrorValue for other types). */
  kKilnDeviceComputeCapability = 4,
  /*! \brief Multiprocessors (CUDA) or compute units (OpenCL). */
  kKilnDeviceMultiprocessorCount = 5,
} KilnDeviceAttr;

/*! \brief The number of devices of device_type (kKilnErrorValue for a type this runtime does not
 * serve). Fails with kKilnErrorRuntime when the type's driver library cannot be loaded or
 * initialized; an OpenCL loader without any platform gives 0. */
KILN_RUNTIME_API int32_t KilnDeviceCount(int32_t device_type, int32_t* out);

/*! \brief One attribute of a device (see KilnDeviceAttr). */
KILN_RUNTIME_API int32_t KilnDeviceAttribute(int32_t device_type, int32_t device_id,
                                             KilnDeviceAttr attr, int64_t* out);

/*! \brief The device's name as its driver reports it ("NVIDIA H100 80GB HBM3"), NUL-terminated
 * and cut to len - 1 bytes. */
KILN_RUNTIME_API int32_t KilnDeviceName(int32_t device_type, int32_t device_id, char* buf,
                                        size_t len);

/*! \brief The version of the driver that serves the device, NUL-terminated and cut to len - 1
 * bytes: OpenCL's CL_DRIVER_VERSION of the device ("5.0+debian"), the CUDA driver's version as
 * major.minor ("12.4", from cuDriverGetVersion); "" for kDLCPU. Together with the name it tells
 * apart the devices whose measurements may differ (the tuning database keys records by both). */
KILN_RUNTIME_API int32_t KilnDeviceDriverVersion(int32_t device_type, int32_t device_id, char* buf,
                                                 size_t len);

/*!
 * \brief Allocates nbytes of device memory; *out receives a CUdeviceptr (kDLCUDA), a cl_mem
 * (kDLOpenCL) or a host pointer (kDLCPU, as KilnAllocAligned). alignment is a power of two or 0
 * (the device's default); CUDA allocations are aligned to 256 bytes and a larger alignment is
 * refused; OpenCL buffers are opaque and aligned as the device requires. nbytes == 0 gives NULL.
 */
KILN_RUNTIME_API int32_t KilnDeviceAlloc(int32_t device_type, int32_t device_id, size_t nbytes,
                                         size_t alignment, void** out);

/*! \brief Frees memory of KilnDeviceAlloc; NULL is ignored. Work already issued that uses the
 * memory still completes (OpenCL releases the buffer after it; CUDA's cuMemFree waits). */
KILN_RUNTIME_API int32_t KilnDeviceFree(int32_t device_type, int32_t device_id, void* ptr);

/*!
 * \brief Copies the elements of `from` to `to`: host to device, device to host, device to device
 * (the same device type) or host to host (kDLCPU). Both tensors must be compact row-major
 * (strides NULL or compact) and hold the same number of bytes; byte_offset is honoured on either
 * side. A copy to the host returns when the data has arrived; a copy from the host returns when
 * the host memory may be reused; a device-to-device copy is queued.
 */
KILN_RUNTIME_API int32_t KilnDeviceCopy(const DLTensor* from, DLTensor* to);

/*! \brief Waits until all work issued to the device has finished; reports a failure of that
 * work (e.g. a CUDA kernel that faulted). */
KILN_RUNTIME_API int32_t KilnDeviceSynchronize(int32_t device_type, int32_t device_id);

/* ============================================================================================
 * Device code and kernel launches (called by compiled code)
 * ============================================================================================
 *
 * A host function of a module with device blobs launches its kernels with
 *
 *     KilnDeviceLaunch(kiln_module_device_ctx, kernel_index, device_type, device_id,
 *                      launch, arg_values, arg_sizes, num_args);
 *
 * kernel_index: the kernel's index in the manifest's "device_kernels".
 * device_type, device_id: where to run, kDLCUDA or kDLOpenCL (the device of the tensors).
 * launch[0..6]: grid x, y, z (blocks / work-groups), block x, y, z (threads / work-items per
 *   group), and the bytes of dynamic shared memory. OpenCL's global size is grid * block in each
 *   dimension. A grid with a zero extent launches nothing.
 * arg_values[i] points to the bytes of kernel argument i and arg_sizes[i] is their count: for a
 *   tensor, the 8-byte device handle from DLTensor.data (a CUdeviceptr; a cl_mem); for a scalar,
 *   its value in the kernel parameter's type (int32 and float32: 4 bytes; int64 and float64: 8).
 *   CUDA passes arg_values as cuLaunchKernel's kernelParams; OpenCL calls
 *   clSetKernelArg(kernel, i, arg_sizes[i], arg_values[i]) for each i. num_args must equal the
 *   kernel's "num_args".
 * Dynamic shared memory: CUDA passes launch[6] to cuLaunchKernel (raising the kernel's limit with
 *   cuFuncSetAttribute above 48 KiB). OpenCL has no such launch parameter: when launch[6] > 0 the
 *   kernel takes one more parameter after its num_args ones, a `__local` pointer, which is given
 *   launch[6] bytes (clSetKernelArg(kernel, num_args, launch[6], NULL)).
 *
 * The first launch of a module on a device builds its device code there, under a lock: OpenCL
 * builds the program from the "cl" text and creates every kernel by name; CUDA calls cuInit,
 * retains the device's primary context, loads the cubin whose arch equals the device's compute
 * capability ("sm_86" on 8.6), else the PTX (JIT-compiled by the driver), and gets every kernel
 * by name. Launches are asynchronous (see "Devices"); they may come from several threads (OpenCL's
 * argument setting and enqueueing are serialized per kernel).
 *
 * Returns 0, or a KilnErrorCode with a message naming the kernel, the device and the driver's
 * error: kKilnErrorIndex for a kernel_index outside device_kernels; kKilnErrorValue for a launch
 * the device cannot run (a block over its limit: both numbers are given) or a num_args other
 * than the kernel's; kKilnErrorRuntime for a missing driver or device, device code that does not
 * build (the build log is in the message), a kernel name the code lacks, or a failing driver call
 * ("CL_OUT_OF_RESOURCES", "CUDA_ERROR_INVALID_VALUE").
 */
KILN_RUNTIME_API int32_t KilnDeviceLaunch(void* module_device_ctx, int32_t kernel_index,
                                          int32_t device_type, int32_t device_id,
                                          const int64_t* launch, void* const* arg_values,
                                          const int64_t* arg_sizes, int32_t num_args);

/* ============================================================================================
 * External libraries: the C functions that extern calls (call_extern) name
 */

/*!
 * \brief Opens the shared library at path (a file path, or a bare name that the dynamic loader
 * searches for, e.g. "libopenblas.so.0") with RTLD_NOW | RTLD_GLOBAL, so that its symbols
 * resolve the extern calls of code compiled or loaded afterwards in this process, and records it
 * for export (KilnFindExternSymbol). Loading a library twice is harmless. Fails with
 * kKilnErrorValue and the loader's message when the library cannot be opened.
 */
KILN_RUNTIME_API int32_t KilnLoadLibrary(const char* path);

/*! \brief The full path of the index-th library opened with KilnLoadLibrary (in order), or
 * NULL when index is out of range. The string stays valid until the process ends. */
KILN_RUNTIME_API const char* KilnLoadedLibrary(int32_t index);

/*!
 * \brief Finds the C function `symbol` as compiled code calling it by name would: first in the
 * libraries opened with KilnLoadLibrary (in order), then in the process (the program, libc,
 * libm and every library in the global scope). Sets *address (NULL when not found) and
 * *library: the full path of the KilnLoadLibrary library that defines it, or NULL when it
 * comes from elsewhere or was not found. Always returns 0.
 */
KILN_RUNTIME_API int32_t KilnFindExternSymbol(const char* symbol, void** address,
                                              const char** library);

/*!
 * \brief Appends the checksum trailer that KilnModuleLoadFromFile verifies (see "The module
 * file") to the shared library at path. kiln's exporter calls it after linking; a host that
 * links a module by other means calls it once on the result. Fails with kKilnErrorModuleFile
 * when the file cannot be read or written, or already ends with a trailer.
 */
KILN_RUNTIME_API int32_t KilnModuleFileSeal(const char* path);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_C_RUNTIME_API_H_ */
