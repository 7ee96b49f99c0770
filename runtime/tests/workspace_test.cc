// Workspace and aligned allocation: alignment, reuse of freed chunks within a size class, chunks
// of other classes kept apart, and the errors for bad frees and unsupported devices.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "kiln/runtime/c_runtime_api.h"

namespace kiln {
namespace runtime {
namespace testing {
namespace {

bool aligned(const void* ptr, uintptr_t alignment) {
  return reinterpret_cast<uintptr_t>(ptr) % alignment == 0;
}

void* alloc(uint64_t nbytes) {
  return KilnBackendAllocWorkspace(kDLCPU, 0, nbytes, kDLFloat, 32);
}

int32_t release(void* ptr) {
  return KilnBackendFreeWorkspace(kDLCPU, 0, ptr);
}

TEST(Workspace, AlignedTo64Bytes) {
  for (uint64_t nbytes : {0, 1, 63, 64, 100, 4096, 1000000}) {
    void* ptr = alloc(nbytes);
    ASSERT_NE(ptr, nullptr) << KilnGetLastError();
    EXPECT_TRUE(aligned(ptr, 64)) << nbytes;
    std::memset(ptr, 0xAB, nbytes);
    EXPECT_EQ(release(ptr), 0);
  }
}

TEST(Workspace, FreedChunkIsReused) {
  void* first = alloc(1000);
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(release(first), 0);
  void* second = alloc(1000);
  EXPECT_EQ(second, first);
  ASSERT_EQ(release(second), 0);
  // 900 bytes fall in the same size class (897..1024) as 1000.
  void* third = alloc(900);
  EXPECT_EQ(third, first);
  ASSERT_EQ(release(third), 0);
}

TEST(Workspace, LiveChunksAreDistinct) {
  void* a = alloc(256);
  void* b = alloc(256);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(release(a), 0);
  EXPECT_EQ(release(b), 0);
}

TEST(Workspace, OtherSizeClassGetsAnotherChunk) {
  void* small = alloc(1000);
  ASSERT_EQ(release(small), 0);
  void* large = alloc(100000);
  EXPECT_NE(large, small);
  ASSERT_EQ(release(large), 0);
}

TEST(Workspace, FreeFromAnotherThread) {
  void* ptr = alloc(5000);
  ASSERT_NE(ptr, nullptr);
  int32_t status = -1;
  std::thread other([&] { status = release(ptr); });
  other.join();
  EXPECT_EQ(status, 0);
}

TEST(Workspace, DoubleFreeIsAnError) {
  void* ptr = alloc(128);
  ASSERT_EQ(release(ptr), 0);
  EXPECT_NE(release(ptr), 0);
  EXPECT_NE(std::string(KilnGetLastError()).find("is not a live workspace chunk"),
            std::string::npos)
      << KilnGetLastError();
  void* again = alloc(128);  // the cache is intact
  EXPECT_EQ(again, ptr);
  EXPECT_EQ(release(again), 0);
}

TEST(Workspace, NullFreeIsAnError) {
  EXPECT_NE(release(nullptr), 0);
  EXPECT_STREQ(KilnGetLastError(), "KilnBackendFreeWorkspace: pointer is NULL");
}

TEST(Workspace, OnlyCpu) {
  EXPECT_EQ(KilnBackendAllocWorkspace(kDLCUDA, 1, 64, kDLFloat, 32), nullptr);
  EXPECT_STREQ(KilnGetLastError(),
               "KilnBackendAllocWorkspace: device cuda:1 is not supported by this runtime (cpu "
               "only)");
}

TEST(Workspace, TooLarge) {
  EXPECT_EQ(alloc(uint64_t{1} << 60), nullptr);
  EXPECT_STREQ(KilnGetLastError(),
               "KilnBackendAllocWorkspace: 1152921504606846976 bytes is too large");
}

TEST(AlignedAlloc, DefaultAndExplicitAlignment) {
  void* a = KilnAllocAligned(100, 0);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(aligned(a, 64));
  KilnFreeAligned(a);
  void* b = KilnAllocAligned(100, 4096);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(aligned(b, 4096));
  KilnFreeAligned(b);
  void* c = KilnAllocAligned(0, 64);
  EXPECT_NE(c, nullptr);
  KilnFreeAligned(c);
  KilnFreeAligned(nullptr);
}

TEST(AlignedAlloc, AlignmentMustBeAPowerOfTwo) {
  EXPECT_EQ(KilnAllocAligned(100, 48), nullptr);
  EXPECT_STREQ(KilnGetLastError(), "KilnAllocAligned: alignment 48 is not a power of two");
}

}  // namespace
}  // namespace testing
}  // namespace runtime
}  // namespace kiln
