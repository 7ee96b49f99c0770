// OpenCL, loaded rather than linked: the functions kiln calls, taken from libOpenCL.so.1 (the ICD
// loader) with dlopen on first use. Only the Khronos headers are needed to build.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <string>

namespace kiln {
namespace runtime {

// The OpenCL functions kiln uses, one pointer per function.
struct OpenCLDriver {
  decltype(&::clGetPlatformIDs) GetPlatformIDs;
  decltype(&::clGetDeviceIDs) GetDeviceIDs;
  decltype(&::clGetDeviceInfo) GetDeviceInfo;
  decltype(&::clCreateContext) CreateContext;
  decltype(&::clCreateCommandQueue) CreateCommandQueue;
  decltype(&::clCreateBuffer) CreateBuffer;
  decltype(&::clReleaseMemObject) ReleaseMemObject;
  decltype(&::clEnqueueWriteBuffer) EnqueueWriteBuffer;
  decltype(&::clEnqueueReadBuffer) EnqueueReadBuffer;
  decltype(&::clEnqueueCopyBuffer) EnqueueCopyBuffer;
  decltype(&::clFinish) Finish;
  decltype(&::clCreateProgramWithSource) CreateProgramWithSource;
  decltype(&::clBuildProgram) BuildProgram;
  decltype(&::clGetProgramBuildInfo) GetProgramBuildInfo;
  decltype(&::clReleaseProgram) ReleaseProgram;
  decltype(&::clCreateKernel) CreateKernel;
  decltype(&::clReleaseKernel) ReleaseKernel;
  decltype(&::clGetKernelWorkGroupInfo) GetKernelWorkGroupInfo;
  decltype(&::clSetKernelArg) SetKernelArg;
  decltype(&::clEnqueueNDRangeKernel) EnqueueNDRangeKernel;
};

// The driver, loaded once; nullptr with `error` saying why when libOpenCL.so.1 cannot be opened
// or lacks a function ("OpenCL: cannot load the driver library libOpenCL.so.1 (...)").
const OpenCLDriver* opencl_driver(std::string* error);

// The name of an OpenCL error code ("CL_INVALID_WORK_GROUP_SIZE"), or "OpenCL error <code>".
std::string opencl_error_name(cl_int code);

}  // namespace runtime
}  // namespace kiln
