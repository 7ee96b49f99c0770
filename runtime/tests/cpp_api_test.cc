// The header-only C++ wrapper: Module::load, function lookup, calls with NDArray, DLTensor* and
// scalars, errors as kiln::runtime::Error, and NDArray's buffer and DLTensor view.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "kiln/runtime/module.h"
#include "test_util.h"

namespace kiln {
namespace runtime {
namespace testing {
namespace {

TEST(CppModule, LoadAndCall) {
  Module module = Module::load(fake_module_path("ok"));
  EXPECT_EQ(module.function_names().front(), "main");
  EXPECT_EQ(module.target().rfind("llvm", 0), 0u);
  Function scale_add = module.function("scale_add");
  NDArray a = NDArray::empty({4, 3}, float32());
  NDArray b = NDArray::empty({4, 3}, float32());
  NDArray c = NDArray::empty({4, 3}, float32());
  for (size_t i = 0; i < a.size(); ++i) {
    a.data<float>()[i] = static_cast<float>(i);
    b.data<float>()[i] = 0.5f;
  }
  scale_add(a, b.tensor(), 3.0, c);
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c.data<float>()[i], 3.0f * i + 0.5f);
}

TEST(CppModule, IntegerAndBoolScalars) {
  Module module = Module::load(fake_module_path("ok"));
  NDArray out = NDArray::empty({4}, int64());
  module.function("fill")(out, 9, true);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out.data<int64_t>()[i], 9);
}

TEST(CppModule, ArgumentErrorThrows) {
  Module module = Module::load(fake_module_path("ok"));
  NDArray a = NDArray::empty({8}, float32());
  NDArray b = NDArray::empty({8}, float32());
  NDArray c = NDArray::empty({9}, float32());
  try {
    module.function("main")(a, b, c);
    FAIL() << "expected kiln::runtime::Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "main: argument C: dimension 0 is n = 8 (bound by argument A), found 9");
  }
}

TEST(CppModule, KernelErrorThrows) {
  Module module = Module::load(fake_module_path("ok"));
  EXPECT_THROW(module.function("fail_always")(1), Error);
}

TEST(CppModule, MissingFunctionThrows) {
  Module module = Module::load(fake_module_path("ok"));
  EXPECT_THROW(module.function("nope"), Error);
}

TEST(CppModule, RefusedModuleThrowsWithMessage) {
  try {
    Module::load(fake_module_path("bad_abi"));
    FAIL() << "expected kiln::runtime::Error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("module has ABI version 99"), std::string::npos);
  }
}

TEST(CppModule, FunctionKeepsModuleAlive) {
  Function add = Module::load(fake_module_path("ok")).function("main");
  NDArray a = NDArray::empty({2}, float32());
  NDArray b = NDArray::empty({2}, float32());
  NDArray c = NDArray::empty({2}, float32());
  a.data<float>()[0] = 1;
  a.data<float>()[1] = 2;
  b.data<float>()[0] = 10;
  b.data<float>()[1] = 20;
  add(a, b, c);
  EXPECT_EQ(c.data<float>()[1], 22.0f);
  EXPECT_EQ(add.spec().num_args, 3);
}

TEST(CppNDArray, ViewDescribesBuffer) {
  NDArray array = NDArray::empty({3, 5}, float64(), 128);
  const DLTensor* t = array.tensor();
  EXPECT_EQ(t->ndim, 2);
  EXPECT_EQ(t->shape[0], 3);
  EXPECT_EQ(t->shape[1], 5);
  EXPECT_EQ(t->strides, nullptr);
  EXPECT_EQ(t->device.device_type, kDLCPU);
  EXPECT_EQ(t->dtype.bits, 64);
  EXPECT_EQ(t->data, array.data<double>());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % 128, 0u);
  EXPECT_EQ(array.size(), 15u);
  EXPECT_EQ(array.nbytes(), 120u);
}

TEST(CppNDArray, MoveKeepsView) {
  NDArray first = NDArray::empty({4}, float32());
  const DLTensor* view = first.tensor();
  NDArray second = std::move(first);
  EXPECT_EQ(second.tensor(), view);
  EXPECT_EQ(second.tensor()->shape[0], 4);
}

TEST(CppNDArray, RejectsSubByteDtype) {
  EXPECT_THROW(NDArray::empty({4}, DLDataType{kDLUInt, 1, 1}), Error);
}

}  // namespace
}  // namespace testing
}  // namespace runtime
}  // namespace kiln
