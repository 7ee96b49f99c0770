// Opens libOpenCL.so.1 once and resolves every function of OpenCLDriver, so that a missing or
// incomplete installation is reported by name instead of failing at link or load time.
#include "opencl_driver.h"

#include <dlfcn.h>

#include <mutex>

namespace kiln {
namespace runtime {
namespace {

constexpr char kLibrary[] = "libOpenCL.so.1";

struct LoadedDriver {
  OpenCLDriver table{};
  std::string error;  // "" when the table is complete
};

template <class Function>
bool resolve(void* library, const char* name, Function* out, std::string* error) {
  *out = reinterpret_cast<Function>(dlsym(library, name));
  if (*out != nullptr) return true;
  *error = std::string("OpenCL: the driver library ") + kLibrary + " lacks the function " + name;
  return false;
}

LoadedDriver load() {
  LoadedDriver loaded;
  void* library = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* reason = dlerror();
    loaded.error = std::string("OpenCL: cannot load the driver library ") + kLibrary + " (" +
                   (reason != nullptr ? reason : "unknown error") +
                   "): no OpenCL loader is installed (Debian: ocl-icd-libopencl1 and a driver "
                   "such as pocl-opencl-icd)";
    return loaded;
  }
  OpenCLDriver& t = loaded.table;
  std::string& e = loaded.error;
  bool ok = resolve(library, "clGetPlatformIDs", &t.GetPlatformIDs, &e) &&
            resolve(library, "clGetDeviceIDs", &t.GetDeviceIDs, &e) &&
            resolve(library, "clGetDeviceInfo", &t.GetDeviceInfo, &e) &&
            resolve(library, "clCreateContext", &t.CreateContext, &e) &&
            resolve(library, "clCreateCommandQueue", &t.CreateCommandQueue, &e) &&
            resolve(library, "clCreateBuffer", &t.CreateBuffer, &e) &&
            resolve(library, "clReleaseMemObject", &t.ReleaseMemObject, &e) &&
            resolve(library, "clEnqueueWriteBuffer", &t.EnqueueWriteBuffer, &e) &&
            resolve(library, "clEnqueueReadBuffer", &t.EnqueueReadBuffer, &e) &&
            resolve(library, "clEnqueueCopyBuffer", &t.EnqueueCopyBuffer, &e) &&
            resolve(library, "clFinish", &t.Finish, &e) &&
            resolve(library, "clCreateProgramWithSource", &t.CreateProgramWithSource, &e) &&
            resolve(library, "clBuildProgram", &t.BuildProgram, &e) &&
            resolve(library, "clGetProgramBuildInfo", &t.GetProgramBuildInfo, &e) &&
            resolve(library, "clReleaseProgram", &t.ReleaseProgram, &e) &&
            resolve(library, "clCreateKernel", &t.CreateKernel, &e) &&
            resolve(library, "clReleaseKernel", &t.ReleaseKernel, &e) &&
            resolve(library, "clGetKernelWorkGroupInfo", &t.GetKernelWorkGroupInfo, &e) &&
            resolve(library, "clSetKernelArg", &t.SetKernelArg, &e) &&
            resolve(library, "clEnqueueNDRangeKernel", &t.EnqueueNDRangeKernel, &e);
  // The library stays open for the life of the process: buffers and queues outlive any caller.
  if (!ok) dlclose(library);
  return loaded;
}

}  // namespace

const OpenCLDriver* opencl_driver(std::string* error) {
  static const LoadedDriver loaded = load();
  if (!loaded.error.empty()) {
    *error = loaded.error;
    return nullptr;
  }
  return &loaded.table;
}

std::string opencl_error_name(cl_int code) {
#define KILN_CL_ERROR(name) \
  case name:                \
    return #name;
  switch (code) {
    KILN_CL_ERROR(CL_SUCCESS)
    KILN_CL_ERROR(CL_DEVICE_NOT_FOUND)
    KILN_CL_ERROR(CL_DEVICE_NOT_AVAILABLE)
    KILN_CL_ERROR(CL_COMPILER_NOT_AVAILABLE)
    KILN_CL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    KILN_CL_ERROR(CL_OUT_OF_RESOURCES)
    KILN_CL_ERROR(CL_OUT_OF_HOST_MEMORY)
    KILN_CL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE)
    KILN_CL_ERROR(CL_MEM_COPY_OVERLAP)
    KILN_CL_ERROR(CL_IMAGE_FORMAT_MISMATCH)
    KILN_CL_ERROR(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    KILN_CL_ERROR(CL_BUILD_PROGRAM_FAILURE)
    KILN_CL_ERROR(CL_MAP_FAILURE)
    KILN_CL_ERROR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    KILN_CL_ERROR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    KILN_CL_ERROR(CL_COMPILE_PROGRAM_FAILURE)
    KILN_CL_ERROR(CL_LINKER_NOT_AVAILABLE)
    KILN_CL_ERROR(CL_LINK_PROGRAM_FAILURE)
    KILN_CL_ERROR(CL_DEVICE_PARTITION_FAILED)
    KILN_CL_ERROR(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    KILN_CL_ERROR(CL_INVALID_VALUE)
    KILN_CL_ERROR(CL_INVALID_DEVICE_TYPE)
    KILN_CL_ERROR(CL_INVALID_PLATFORM)
    KILN_CL_ERROR(CL_INVALID_DEVICE)
    KILN_CL_ERROR(CL_INVALID_CONTEXT)
    KILN_CL_ERROR(CL_INVALID_QUEUE_PROPERTIES)
    KILN_CL_ERROR(CL_INVALID_COMMAND_QUEUE)
    KILN_CL_ERROR(CL_INVALID_HOST_PTR)
    KILN_CL_ERROR(CL_INVALID_MEM_OBJECT)
    KILN_CL_ERROR(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    KILN_CL_ERROR(CL_INVALID_IMAGE_SIZE)
    KILN_CL_ERROR(CL_INVALID_SAMPLER)
    KILN_CL_ERROR(CL_INVALID_BINARY)
    KILN_CL_ERROR(CL_INVALID_BUILD_OPTIONS)
    KILN_CL_ERROR(CL_INVALID_PROGRAM)
    KILN_CL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE)
    KILN_CL_ERROR(CL_INVALID_KERNEL_NAME)
    KILN_CL_ERROR(CL_INVALID_KERNEL_DEFINITION)
    KILN_CL_ERROR(CL_INVALID_KERNEL)
    KILN_CL_ERROR(CL_INVALID_ARG_INDEX)
    KILN_CL_ERROR(CL_INVALID_ARG_VALUE)
    KILN_CL_ERROR(CL_INVALID_ARG_SIZE)
    KILN_CL_ERROR(CL_INVALID_KERNEL_ARGS)
    KILN_CL_ERROR(CL_INVALID_WORK_DIMENSION)
    KILN_CL_ERROR(CL_INVALID_WORK_GROUP_SIZE)
    KILN_CL_ERROR(CL_INVALID_WORK_ITEM_SIZE)
    KILN_CL_ERROR(CL_INVALID_GLOBAL_OFFSET)
    KILN_CL_ERROR(CL_INVALID_EVENT_WAIT_LIST)
    KILN_CL_ERROR(CL_INVALID_EVENT)
    KILN_CL_ERROR(CL_INVALID_OPERATION)
    KILN_CL_ERROR(CL_INVALID_GL_OBJECT)
    KILN_CL_ERROR(CL_INVALID_BUFFER_SIZE)
    KILN_CL_ERROR(CL_INVALID_MIP_LEVEL)
    KILN_CL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE)
    KILN_CL_ERROR(CL_INVALID_PROPERTY)
    KILN_CL_ERROR(CL_INVALID_IMAGE_DESCRIPTOR)
    KILN_CL_ERROR(CL_INVALID_COMPILER_OPTIONS)
    KILN_CL_ERROR(CL_INVALID_LINKER_OPTIONS)
    KILN_CL_ERROR(CL_INVALID_DEVICE_PARTITION_COUNT)
  }
#undef KILN_CL_ERROR
  return "OpenCL error " + std::to_string(code);
}

}  // namespace runtime
}  // namespace kiln
