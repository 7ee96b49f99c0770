// Device code through the runtime: modules whose host functions launch OpenCL C (run on PoCL
// where no GPU exists) or PTX kernels with KilnDeviceLaunch, device memory and copies, device
// attributes, and the errors of a missing driver, a program that does not build, a missing
// kernel, a block over the device's limit and a module without its device context symbol.
#include <dlfcn.h>

#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"

namespace kiln {
namespace runtime {
namespace testing {
namespace {

std::string device_module_path(const std::string& variant) {
  return std::string(KILN_FAKE_MODULE_DIR) + "/device_module_" + variant + ".so";
}

// Whether the driver library of device_type can be opened here at all.
bool driver_library_present(int32_t device_type) {
  const char* library = device_type == kDLCUDA ? "libcuda.so.1" : "libOpenCL.so.1";
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return false;
  dlclose(handle);
  return true;
}

// Why tests of device_type cannot run here, or "" when device 0 exists.
std::string missing_device(int32_t device_type) {
  int32_t count = 0;
  if (KilnDeviceCount(device_type, &count) != 0) return KilnGetLastError();
  if (count == 0) return "no device of this type is present";
  return "";
}

// A float32 vector in device memory, filled from and read back to the host.
class DeviceVector {
 public:
  DeviceVector(int32_t device_type, size_t n) : shape_{static_cast<int64_t>(n)} {
    tensor_.device = DLDevice{static_cast<DLDeviceType>(device_type), 0};
    tensor_.ndim = 1;
    tensor_.dtype = float32();
    tensor_.shape = shape_.data();
    EXPECT_EQ(KilnDeviceAlloc(device_type, 0, n * sizeof(float), 0, &tensor_.data), 0)
        << KilnGetLastError();
  }
  ~DeviceVector() { KilnDeviceFree(tensor_.device.device_type, 0, tensor_.data); }
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;

  void upload(std::vector<float>& values) {
    TensorView host(values.data(), shape_, float32());
    ASSERT_EQ(KilnDeviceCopy(&host.tensor, &tensor_), 0) << KilnGetLastError();
  }
  std::vector<float> download() {
    std::vector<float> values(static_cast<size_t>(shape_[0]));
    TensorView host(values.data(), shape_, float32());
    EXPECT_EQ(KilnDeviceCopy(&tensor_, &host.tensor), 0) << KilnGetLastError();
    return values;
  }
  DLTensor* tensor() { return &tensor_; }

 private:
  std::vector<int64_t> shape_;
  DLTensor tensor_{};
};

std::vector<float> iota(size_t n, float start) {
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = start + static_cast<float>(i);
  return values;
}

// The launch tests, run on each device type that has a device here.
class DeviceLaunch : public ::testing::TestWithParam<int32_t> {
 protected:
  void SetUp() override {
    std::string reason = missing_device(GetParam());
    if (!reason.empty()) GTEST_SKIP() << "no device to run on: " << reason;
    std::string variant = GetParam() == kDLCUDA ? "cuda" : "opencl";
    ASSERT_EQ(KilnModuleLoadFromFile(device_module_path(variant).c_str(), module_.out()), 0)
        << KilnGetLastError();
  }

  int32_t call(const char* name, PackedArgs& args) {
    KilnFunctionHandle function = nullptr;
    EXPECT_EQ(KilnModuleGetFunction(module_.get(), name, &function), 0) << KilnGetLastError();
    return KilnFuncCall(function, args.values.data(), args.codes.data(), args.size());
  }

  ModuleGuard module_;
};

TEST_P(DeviceLaunch, AddsVectorsInSeveralBlocksWithAGuard) {
  const size_t n = 1000;  // 16 blocks of 64, the last one partly past the end
  std::vector<float> a = iota(n, 0), b = iota(n, 1000);
  DeviceVector da(GetParam(), n), db(GetParam(), n), dc(GetParam(), n);
  da.upload(a);
  db.upload(b);
  PackedArgs args;
  args.tensor(da.tensor()).tensor(db.tensor()).tensor(dc.tensor()).integer(64);
  ASSERT_EQ(call("add", args), 0) << KilnGetLastError();
  std::vector<float> c = dc.download();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "at " << i;
}

TEST_P(DeviceLaunch, ReversesEachBlockThroughSharedMemory) {
  std::vector<float> x = iota(256, 0);
  for (int dynamic = 0; dynamic <= 1; ++dynamic) {
    DeviceVector dx(GetParam(), 256), dy(GetParam(), 256);
    dx.upload(x);
    PackedArgs args;
    args.tensor(dx.tensor()).tensor(dy.tensor()).integer(dynamic);
    ASSERT_EQ(call("reverse_blocks", args), 0) << KilnGetLastError();
    std::vector<float> y = dy.download();
    for (size_t i = 0; i < 256; ++i) {
      ASSERT_EQ(y[i], x[i / 64 * 64 + 63 - i % 64]) << "at " << i << ", dynamic " << dynamic;
    }
  }
}

TEST_P(DeviceLaunch, BlockOverTheDeviceLimitIsRefusedWithBothNumbers) {
  DeviceVector da(GetParam(), 64), db(GetParam(), 64), dc(GetParam(), 64);
  PackedArgs args;
  args.tensor(da.tensor()).tensor(db.tensor()).tensor(dc.tensor()).integer(1 << 16);
  ASSERT_EQ(call("add", args), kKilnErrorRuntime);
  std::string message = KilnGetLastError();
  std::string unit = GetParam() == kDLCUDA ? " threads exceeds the maximum "
                                           : " work-items exceeds the maximum work-group size ";
  EXPECT_NE(message.find("KilnDeviceLaunch: kernel add_kernel on "), std::string::npos) << message;
  EXPECT_NE(message.find("block 65536 x 1 x 1 = 65536" + unit), std::string::npos) << message;
}

TEST_P(DeviceLaunch, HostMemoryForADeviceParameterNamesTheFix) {
  std::vector<float> a(8), b(8), c(8);
  TensorView ta(a.data(), {8}, float32()), tb(b.data(), {8}, float32()),
      tc(c.data(), {8}, float32());
  PackedArgs args;
  args.tensor(&ta.tensor).tensor(&tb.tensor).tensor(&tc.tensor).integer(64);
  ASSERT_EQ(call("add", args), kKilnErrorValue);
  std::string device = GetParam() == kDLCUDA ? "cuda" : "opencl";
  EXPECT_EQ(std::string(KilnGetLastError()),
            "add: argument A: device: expected " + device +
                ", found cpu:0 (host memory); pass kiln.nd.array(x, device=kiln." + device +
                "(0))");
}

TEST_P(DeviceLaunch, SlicedDeviceArrayIsRefused) {
  DeviceVector da(GetParam(), 16), db(GetParam(), 8), dc(GetParam(), 8);
  da.tensor()->shape[0] = 8;
  da.tensor()->byte_offset = 8 * sizeof(float);
  PackedArgs args;
  args.tensor(da.tensor()).tensor(db.tensor()).tensor(dc.tensor()).integer(64);
  ASSERT_EQ(call("add", args), kKilnErrorValue);
  da.tensor()->shape[0] = 16;
  EXPECT_EQ(std::string(KilnGetLastError()),
            "add: argument A: byte_offset is 32, but slicing device arrays is not supported "
            "(byte_offset must be 0)");
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceLaunch, ::testing::Values(kDLOpenCL, kDLCUDA),
                         [](const ::testing::TestParamInfo<int32_t>& info) {
                           return std::string(info.param == kDLCUDA ? "CUDA" : "OpenCL");
                         });

// Errors of device modules that need a working device to show.
class OpenCLModuleErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason = missing_device(kDLOpenCL);
    if (!reason.empty()) GTEST_SKIP() << "no OpenCL device: " << reason;
  }

  std::string add_error(const std::string& variant) {
    ModuleGuard module;
    EXPECT_EQ(KilnModuleLoadFromFile(device_module_path(variant).c_str(), module.out()), 0)
        << KilnGetLastError();
    KilnFunctionHandle function = nullptr;
    EXPECT_EQ(KilnModuleGetFunction(module.get(), "add", &function), 0);
    DeviceVector da(kDLOpenCL, 8), db(kDLOpenCL, 8), dc(kDLOpenCL, 8);
    PackedArgs args;
    args.tensor(da.tensor()).tensor(db.tensor()).tensor(dc.tensor()).integer(8);
    EXPECT_EQ(KilnFuncCall(function, args.values.data(), args.codes.data(), args.size()),
              kKilnErrorRuntime);
    return KilnGetLastError();
  }
};

TEST_F(OpenCLModuleErrors, ProgramThatDoesNotBuildGivesItsBuildLog) {
  std::string message = add_error("bad_program");
  EXPECT_NE(message.find("device_module_bad_program.so on opencl(0): the OpenCL program does not "
                         "build (CL_BUILD_PROGRAM_FAILURE); build log:"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("kiln_undefined_name"), std::string::npos) << message;
}

TEST_F(OpenCLModuleErrors, KernelMissingFromTheProgramIsNamed) {
  std::string message = add_error("missing_kernel");
  EXPECT_NE(message.find("kernel kiln_absent_kernel: clCreateKernel failed: "
                         "CL_INVALID_KERNEL_NAME (the program defines no kernel of that name)"),
            std::string::npos)
      << message;
}

TEST(DeviceModule, WithoutTheContextSymbolIsRefused) {
  ModuleGuard module;
  ASSERT_EQ(KilnModuleLoadFromFile(device_module_path("no_ctx").c_str(), module.out()),
            kKilnErrorModuleFile);
  EXPECT_NE(std::string(KilnGetLastError())
                .find("device_module_no_ctx.so: the module carries device code but defines no "
                      "kiln_module_device_ctx symbol"),
            std::string::npos)
      << KilnGetLastError();
}

std::string create_error(const std::string& blob, int32_t expected_code) {
  std::string manifest = R"({"abi_version": 2, "target": "llvm", "functions": [],
      "device_blobs": [)" +
                         blob + "]}";
  ModuleGuard module;
  auto resolver = [](void*, const char*) -> void* { return nullptr; };
  EXPECT_EQ(KilnModuleCreate(manifest.c_str(), nullptr, resolver, nullptr, module.out()),
            expected_code);
  return KilnGetLastError();
}

TEST(DeviceModule, UnknownBlobKindOrFormatIsRefused) {
  EXPECT_EQ(create_error(R"({"kind": "metal", "format": "metallib"})", kKilnErrorModuleUnsupported),
            "KilnModuleCreate: device_blobs[0]: device code of kind 'metal', which this runtime "
            "does not load (it loads 'opencl' and 'cuda')");
  EXPECT_EQ(create_error(R"({"kind": "cuda", "format": "fatbin"})", kKilnErrorModuleUnsupported),
            "KilnModuleCreate: device_blobs[0]: cuda device code in format 'fatbin', which this "
            "runtime does not load (it loads 'cubin' and 'ptx')");
}

TEST(DeviceModule, MalformedBlobsAreNamed) {
  EXPECT_EQ(create_error(R"({"kind": "opencl", "format": "cl"})", kKilnErrorValue),
            "KilnModuleCreate: manifest: device_blobs[0]: missing key \"text\"");
  EXPECT_EQ(
      create_error(R"({"kind": "cuda", "format": "cubin", "base64": "AAAA"})", kKilnErrorValue),
      "KilnModuleCreate: manifest: device_blobs[0]: missing key \"arch\"");
  EXPECT_EQ(create_error(R"({"kind": "cuda", "format": "cubin", "arch": "sm_80", "base64": "A*"})",
                         kKilnErrorValue),
            "KilnModuleCreate: manifest: device_blobs[0].base64: invalid base64");
  EXPECT_EQ(create_error(R"({"kind": "opencl", "format": "cl", "text": "", "build_options": 1})",
                         kKilnErrorValue),
            "KilnModuleCreate: manifest: device_blobs[0].build_options: expected a string, found "
            "a number");
}

TEST(DeviceModule, LaunchWithoutAContextIsRefused) {
  int64_t launch[7] = {1, 1, 1, 1, 1, 1, 0};
  EXPECT_EQ(KilnDeviceLaunch(nullptr, 0, kDLOpenCL, 0, launch, nullptr, nullptr, 0),
            kKilnErrorValue);
  EXPECT_NE(std::string(KilnGetLastError()).find("kiln_module_device_ctx was not set"),
            std::string::npos);
}

// CUDA without its driver: every entry point says which library is missing.
class CudaWithoutDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    if (driver_library_present(kDLCUDA)) {
      GTEST_SKIP() << "libcuda.so.1 is installed here; these tests check its absence";
    }
  }
};

TEST_F(CudaWithoutDriver, DeviceCountNamesTheLibrary) {
  int32_t count = -1;
  ASSERT_EQ(KilnDeviceCount(kDLCUDA, &count), kKilnErrorRuntime);
  std::string message = KilnGetLastError();
  EXPECT_EQ(message.rfind("KilnDeviceCount: CUDA: cannot load the driver library libcuda.so.1 "
                          "(libcuda.so.1: cannot open shared object file",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("): no CUDA driver is installed"), std::string::npos) << message;
  int64_t exists = -1;
  ASSERT_EQ(KilnDeviceAttribute(kDLCUDA, 0, kKilnDeviceExists, &exists), 0);
  EXPECT_EQ(exists, 0);
}

TEST_F(CudaWithoutDriver, LaunchNamesTheLibrary) {
  ModuleGuard module;
  ASSERT_EQ(KilnModuleLoadFromFile(device_module_path("cuda").c_str(), module.out()), 0)
      << KilnGetLastError();
  KilnFunctionHandle function = nullptr;
  ASSERT_EQ(KilnModuleGetFunction(module.get(), "add", &function), 0);
  // Device pointers that are never dereferenced: the launch fails before anything runs.
  std::vector<int64_t> shape = {8};
  DLTensor tensors[3];
  for (DLTensor& tensor : tensors) {
    tensor = DLTensor{};
    tensor.data = reinterpret_cast<void*>(uintptr_t{0x10000});
    tensor.device = DLDevice{kDLCUDA, 0};
    tensor.ndim = 1;
    tensor.dtype = float32();
    tensor.shape = shape.data();
  }
  PackedArgs args;
  args.tensor(&tensors[0]).tensor(&tensors[1]).tensor(&tensors[2]).integer(8);
  ASSERT_EQ(KilnFuncCall(function, args.values.data(), args.codes.data(), args.size()),
            kKilnErrorRuntime);
  EXPECT_NE(std::string(KilnGetLastError())
                .find("KilnDeviceLaunch: CUDA: cannot load the driver library libcuda.so.1"),
            std::string::npos)
      << KilnGetLastError();
}

TEST_F(CudaWithoutDriver, AllocNamesTheLibrary) {
  void* ptr = nullptr;
  ASSERT_EQ(KilnDeviceAlloc(kDLCUDA, 0, 64, 0, &ptr), kKilnErrorRuntime);
  EXPECT_NE(std::string(KilnGetLastError()).find("cannot load the driver library libcuda.so.1"),
            std::string::npos);
}

// Memory, copies and attributes of each device type with a device here, and of the CPU.
class DeviceMemory : public ::testing::TestWithParam<int32_t> {
 protected:
  void SetUp() override {
    if (GetParam() == kDLCPU) return;
    std::string reason = missing_device(GetParam());
    if (!reason.empty()) GTEST_SKIP() << "no device: " << reason;
  }
};

TEST_P(DeviceMemory, CopiesHostToDeviceToDeviceToHost) {
  std::vector<float> values = iota(100, 7);
  DeviceVector first(GetParam(), 100), second(GetParam(), 100);
  first.upload(values);
  ASSERT_EQ(KilnDeviceCopy(first.tensor(), second.tensor()), 0) << KilnGetLastError();
  ASSERT_EQ(KilnDeviceSynchronize(GetParam(), 0), 0) << KilnGetLastError();
  EXPECT_EQ(second.download(), values);
}

TEST_P(DeviceMemory, CopyOfDifferentSizesIsRefused) {
  DeviceVector small(GetParam(), 4), large(GetParam(), 8);
  ASSERT_EQ(KilnDeviceCopy(small.tensor(), large.tensor()), kKilnErrorValue);
  EXPECT_EQ(std::string(KilnGetLastError()),
            "KilnDeviceCopy: the source holds 16 bytes and the destination 32");
}

TEST_P(DeviceMemory, EmptyAllocationIsNull) {
  void* ptr = reinterpret_cast<void*>(1);
  ASSERT_EQ(KilnDeviceAlloc(GetParam(), 0, 0, 0, &ptr), 0) << KilnGetLastError();
  EXPECT_EQ(ptr, nullptr);
  EXPECT_EQ(KilnDeviceFree(GetParam(), 0, nullptr), 0);
}

TEST_P(DeviceMemory, AttributesDescribeTheDevice) {
  int64_t exists = 0;
  ASSERT_EQ(KilnDeviceAttribute(GetParam(), 0, kKilnDeviceExists, &exists), 0);
  EXPECT_EQ(exists, 1);
  ASSERT_EQ(KilnDeviceAttribute(GetParam(), 99, kKilnDeviceExists, &exists), 0);
  EXPECT_EQ(exists, 0);
  char name[128];
  ASSERT_EQ(KilnDeviceName(GetParam(), 0, name, sizeof(name)), 0) << KilnGetLastError();
  EXPECT_GT(std::strlen(name), 0u);
  char version[128];
  ASSERT_EQ(KilnDeviceDriverVersion(GetParam(), 0, version, sizeof(version)), 0)
      << KilnGetLastError();
  if (GetParam() == kDLCPU) {
    EXPECT_STREQ(version, "");
    return;
  }
  EXPECT_GT(std::strlen(version), 0u);
  int64_t value = 0;
  for (KilnDeviceAttr attr : {kKilnDeviceMaxThreadsPerBlock, kKilnDeviceMaxSharedMemoryPerBlock,
                              kKilnDeviceWarpSize, kKilnDeviceMultiprocessorCount}) {
    ASSERT_EQ(KilnDeviceAttribute(GetParam(), 0, attr, &value), 0) << KilnGetLastError();
    EXPECT_GT(value, 0) << "attribute " << attr;
  }
  int32_t status = KilnDeviceAttribute(GetParam(), 0, kKilnDeviceComputeCapability, &value);
  if (GetParam() == kDLCUDA) {
    EXPECT_EQ(status, 0);
    EXPECT_GE(value, 30);
  } else {
    EXPECT_EQ(status, kKilnErrorValue);
  }
  int32_t count = 0;
  ASSERT_EQ(KilnDeviceCount(GetParam(), &count), 0);
  EXPECT_EQ(KilnDeviceName(GetParam(), count, name, sizeof(name)), kKilnErrorRuntime);
  EXPECT_NE(std::string(KilnGetLastError()).find("no device"), std::string::npos);
  EXPECT_EQ(KilnDeviceDriverVersion(GetParam(), count, version, sizeof(version)),
            kKilnErrorRuntime);
  EXPECT_NE(std::string(KilnGetLastError()).find("KilnDeviceDriverVersion"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceMemory, ::testing::Values(kDLCPU, kDLOpenCL, kDLCUDA),
                         [](const ::testing::TestParamInfo<int32_t>& info) {
                           return std::string(info.param == kDLCUDA     ? "CUDA"
                                              : info.param == kDLOpenCL ? "OpenCL"
                                                                        : "CPU");
                         });

}  // namespace
}  // namespace testing
}  // namespace runtime
}  // namespace kiln
