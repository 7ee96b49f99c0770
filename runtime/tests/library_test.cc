// External libraries for extern calls: KilnLoadLibrary opens a library into the global scope and
// records it; KilnFindExternSymbol finds a symbol in those libraries (naming the one that
// defines it) or in the process, and an unknown library is an error naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kiln/runtime/c_runtime_api.h"

namespace kiln {
namespace runtime {
namespace testing {
namespace {

TEST(Library, ProcessSymbolsNeedNoLibrary) {
  void* address = nullptr;
  const char* library = "unset";
  EXPECT_EQ(KilnFindExternSymbol("hypot", &address, &library), 0);
  EXPECT_NE(address, nullptr);
  EXPECT_EQ(library, nullptr);
}

TEST(Library, UnknownSymbolIsNull) {
  void* address = reinterpret_cast<void*>(1);
  const char* library = "unset";
  EXPECT_EQ(KilnFindExternSymbol("kiln_no_such_symbol_xyz", &address, &library), 0);
  EXPECT_EQ(address, nullptr);
  EXPECT_EQ(library, nullptr);
}

TEST(Library, MissingLibraryIsAnErrorNamingIt) {
  EXPECT_EQ(KilnLoadLibrary("libkiln_no_such_library.so"), kKilnErrorValue);
  std::string message = KilnGetLastError();
  EXPECT_NE(message.find("KilnLoadLibrary: cannot load libkiln_no_such_library.so"),
            std::string::npos)
      << message;
  EXPECT_EQ(KilnLoadLibrary(""), kKilnErrorValue);
}

// libm is a library of its own: a symbol it defines is attributed to it once it is loaded, and
// one that it only reaches through its dependencies (libc's malloc) is not.
TEST(Library, LoadedLibraryDefinesItsOwnSymbolsOnly) {
  ASSERT_EQ(KilnLoadLibrary("libm.so.6"), 0) << KilnGetLastError();
  ASSERT_EQ(KilnLoadLibrary("libm.so.6"), 0) << KilnGetLastError();  // twice is harmless
  void* address = nullptr;
  const char* library = nullptr;
  KilnFindExternSymbol("hypot", &address, &library);
  ASSERT_NE(library, nullptr);
  EXPECT_NE(std::string(library).find("libm.so.6"), std::string::npos) << library;
  using Hypot = double (*)(double, double);
  EXPECT_EQ(reinterpret_cast<Hypot>(address)(3.0, 4.0), 5.0);
  KilnFindExternSymbol("malloc", &address, &library);
  EXPECT_NE(address, nullptr);
  EXPECT_EQ(library, nullptr);
  int count = 0;
  for (; KilnLoadedLibrary(count) != nullptr; ++count) {
  }
  EXPECT_EQ(count, 1);
  EXPECT_EQ(KilnLoadedLibrary(-1), nullptr);
}

}  // namespace
}  // namespace testing
}  // namespace runtime
}  // namespace kiln
