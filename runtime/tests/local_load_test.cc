// The runtime opened with RTLD_LOCAL, as a Python extension opens its libraries: modules must
// still find the Kiln* callbacks (the runtime makes its symbols global before opening them).
// This executable does not link libkiln_runtime.so; it opens it by path.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/runtime/c_runtime_api.h"

namespace kiln {
namespace runtime {
namespace testing {
namespace {

template <class F>
F lookup(void* library, const char* name) {
  return reinterpret_cast<F>(dlsym(library, name));
}

TEST(LocalLoad, ModuleResolvesCallbacksAgainstLocallyLoadedRuntime) {
  void* library = dlopen(KILN_RUNTIME_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  // Not visible globally before the first module load.
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "KilnSetLastError"), nullptr);

  auto load = lookup<decltype(&KilnModuleLoadFromFile)>(library, "KilnModuleLoadFromFile");
  auto get_function = lookup<decltype(&KilnModuleGetFunction)>(library, "KilnModuleGetFunction");
  auto call = lookup<decltype(&KilnFuncCall)>(library, "KilnFuncCall");
  auto last_error = lookup<decltype(&KilnGetLastError)>(library, "KilnGetLastError");
  auto free_module = lookup<decltype(&KilnModuleFree)>(library, "KilnModuleFree");
  ASSERT_TRUE(load && get_function && call && last_error && free_module);

  KilnModuleHandle module = nullptr;
  std::string path = std::string(KILN_FAKE_MODULE_DIR) + "/fake_module_ok.so";
  ASSERT_EQ(load(path.c_str(), &module), 0) << last_error();
  // The kernel reports its error through the runtime's KilnSetLastError.
  KilnFunctionHandle fail_always = nullptr;
  ASSERT_EQ(get_function(module, "fail_always", &fail_always), 0) << last_error();
  KilnValue value;
  value.v_int64 = 7;
  int32_t code = kKilnInt;
  EXPECT_NE(call(fail_always, &value, &code, 1), 0);
  EXPECT_STREQ(last_error(), "fail_always: deliberate failure with x = 7");
  free_module(module);
}

}  // namespace
}  // namespace testing
}  // namespace runtime
}  // namespace kiln
