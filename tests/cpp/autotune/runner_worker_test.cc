// The tune worker's parts without a process: the timing loop (calls, restores and flushes counted
// with fake hooks) and the correctness check (random arguments and the tolerance rule of
// kiln/autotune/runner.h on hand-written results).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "autotune/worker_check.h"
#include "autotune/worker_timing.h"
#include "kiln/support/error.h"

namespace kiln::autotune::detail {
namespace {

// ---- Timing ---------------------------------------------------------------------------------

struct Counts {
  int calls = 0, restores = 0, flushes = 0, syncs = 0;
  int fail_at = -1;       // the call (counted from 1) that fails
  int fail_sync_at = -1;  // the synchronization (counted from 1) that fails
};

TimingHooks counting(Counts* counts) {
  TimingHooks hooks;
  hooks.call = [counts] { return ++counts->calls == counts->fail_at ? 7 : 0; };
  hooks.restore = [counts] { ++counts->restores; };
  hooks.flush = [counts] { ++counts->flushes; };
  return hooks;
}

// As counting(), for a device: each synchronization is counted.
TimingHooks counting_on_device(Counts* counts) {
  TimingHooks hooks = counting(counts);
  hooks.synchronize = [counts] { return ++counts->syncs == counts->fail_sync_at ? 9 : 0; };
  return hooks;
}

TEST(WorkerTiming, AFixedNumberIsCalledExactly) {
  Counts counts;
  TimingPlan plan;
  plan.warmup = 2;
  plan.number = 5;
  plan.repeat = 3;
  int number = 0;
  std::vector<double> times = time_calls(plan, counting(&counts), &number);
  EXPECT_EQ(times.size(), 3u);
  EXPECT_EQ(number, 5);
  EXPECT_EQ(counts.calls, 2 + 5 * 3);
  EXPECT_EQ(counts.restores, 0);
  EXPECT_EQ(counts.flushes, 0);
  for (double t : times) EXPECT_GE(t, 0.0);
}

TEST(WorkerTiming, InPlaceFunctionsAreRestoredBeforeEveryCall) {
  Counts counts;
  TimingPlan plan;
  plan.warmup = 1;
  plan.number = 4;
  plan.repeat = 2;
  plan.restore_each_call = true;
  int number = 0;
  time_calls(plan, counting(&counts), &number);
  EXPECT_EQ(counts.calls, 9);
  EXPECT_EQ(counts.restores, 9);
}

TEST(WorkerTiming, ADeviceIsSynchronizedAtTheEndOfEachTimedSpan) {
  Counts counts;
  TimingPlan plan;
  plan.warmup = 2;
  plan.number = 5;
  plan.repeat = 3;
  int number = 0;
  time_calls(plan, counting_on_device(&counts), &number);
  EXPECT_EQ(counts.calls, 2 + 5 * 3);
  EXPECT_EQ(counts.syncs, 2 + 3);  // each warm-up call, then each repeat once
  // Restored before every call: the restore is waited for untimed, then the call.
  Counts restored;
  plan.restore_each_call = true;
  time_calls(plan, counting_on_device(&restored), &number);
  EXPECT_EQ(restored.calls, 17);
  EXPECT_EQ(restored.syncs, 2 * 17);
}

TEST(WorkerTiming, AFailedSynchronizationStopsTheTiming) {
  Counts counts;
  counts.fail_sync_at = 2;
  TimingPlan plan;
  plan.warmup = 1;
  plan.number = 2;
  plan.repeat = 3;
  int number = 0;
  try {
    time_calls(plan, counting_on_device(&counts), &number);
    FAIL() << "expected CallFailed";
  } catch (const CallFailed& failed) {
    EXPECT_EQ(failed.status, 9);  // a kernel that faulted is reported when it is waited for
  }
  EXPECT_EQ(counts.calls, 1 + 2);
}

TEST(WorkerTiming, AFlushPrecedesEachRepeatOfOneColdCall) {
  Counts counts;
  TimingPlan plan;
  plan.warmup = 1;
  plan.repeat = 3;
  plan.flush_cache = true;
  int number = 0;
  std::vector<double> times = time_calls(plan, counting(&counts), &number);
  EXPECT_EQ(times.size(), 3u);
  EXPECT_EQ(number, 1);
  EXPECT_EQ(counts.flushes, 3);
  EXPECT_EQ(counts.calls, 1 + 3);
}

TEST(WorkerTiming, EachRepeatRunsAtTheNextPlacement) {
  Counts counts;
  std::vector<uint64_t> placed;
  std::vector<int> calls_when_placed;
  TimingHooks hooks = counting(&counts);
  hooks.place = [&](uint64_t index) {
    placed.push_back(index);
    calls_when_placed.push_back(counts.calls);
  };
  TimingPlan plan;
  plan.warmup = 1;
  plan.number = 2;
  plan.repeat = 3;
  plan.first_placement = 7;
  int number = 0;
  EXPECT_EQ(time_calls(plan, hooks, &number).size(), 3u);
  EXPECT_EQ(placed, (std::vector<uint64_t>{7, 8, 9}));
  // After the warm-up call, then after each repeat of two calls: never inside a repeat.
  EXPECT_EQ(calls_when_placed, (std::vector<int>{1, 3, 5}));
  // Without a first placement the arguments stay where they are.
  placed.clear();
  plan.first_placement = -1;
  time_calls(plan, hooks, &number);
  EXPECT_TRUE(placed.empty());
}

TEST(WorkerTiming, ALoadOnlyWarmsUpAndPicksTheNumber) {
  Counts counts;
  TimingPlan plan;
  plan.warmup = 3;
  plan.repeat = 0;
  plan.min_repeat_ms = 0;
  int number = 0;
  EXPECT_TRUE(time_calls(plan, counting(&counts), &number).empty());
  EXPECT_EQ(counts.calls, 3);
  EXPECT_EQ(number, 1);
}

TEST(WorkerTiming, AFailingCallStopsTheTiming) {
  Counts counts;
  counts.fail_at = 4;
  TimingPlan plan;
  plan.warmup = 1;
  plan.number = 2;
  plan.repeat = 3;
  int number = 0;
  try {
    time_calls(plan, counting(&counts), &number);
    FAIL() << "expected CallFailed";
  } catch (const CallFailed& failed) {
    EXPECT_EQ(failed.status, 7);
  }
  EXPECT_EQ(counts.calls, 4);
}

TEST(WorkerTiming, TheFlushBufferOutgrowsTheLastLevelCache) {
  CacheFlusher flusher;
  size_t cache = last_level_cache_bytes();
  EXPECT_EQ(flusher.bytes(), cache > 0 ? std::min(2 * cache, size_t{1} << 30) : size_t{64} << 20);
  flusher.flush();
  flusher.flush();
}

// ---- The check ------------------------------------------------------------------------------

// A function spec with tensor parameters A (read) and B (written) of one dtype and shape.
struct TwoArgs {
  std::vector<int64_t> shape;
  KilnArgSpec args[2];
  KilnFuncSpec spec;

  TwoArgs(DLDataType dtype, std::vector<int64_t> dims) : shape(std::move(dims)) {
    int ndim = static_cast<int>(shape.size());
    args[0] = {"A", kKilnArgTensor, dtype, ndim, shape.data(), nullptr, kDLCPU, 1, 0, 0};
    args[1] = {"B", kKilnArgTensor, dtype, ndim, shape.data(), nullptr, kDLCPU, 1, 1, 0};
    spec = {"main", "kiln_unchecked_main", 2, args, 0, nullptr, nullptr, nullptr};
  }
};

constexpr DLDataType kFloat32{kDLFloat, 32, 1};

// Arguments whose reference B is `expected` and whose working B is `found` (float32).
std::optional<std::string> compare_floats(const std::vector<float>& expected,
                                          const std::vector<float>& found,
                                          Tolerance tolerance = {}) {
  TwoArgs two(kFloat32, {static_cast<int64_t>(expected.size())});
  TaskArguments args(two.spec, 1);
  args.restore_all();
  std::string reference(reinterpret_cast<const char*>(expected.data()), expected.size() * 4);
  args.set_reference(reference);
  std::memcpy(args.working(1), found.data(), found.size() * 4);
  return args.compare(tolerance, false);
}

TEST(WorkerCheck, RandomArgumentsFollowTheSeedAndTheirRanges) {
  TwoArgs floats(kFloat32, {1000});
  TaskArguments a(floats.spec, 5), b(floats.spec, 5), c(floats.spec, 6);
  a.restore_all();
  b.restore_all();
  c.restore_all();
  EXPECT_EQ(a.snapshot_written(), b.snapshot_written());
  EXPECT_NE(a.snapshot_written(), c.snapshot_written());
  const float* values = reinterpret_cast<const float*>(a.working(0));
  for (int i = 0; i < 1000; ++i) {
    EXPECT_GE(values[i], -1.0f);
    EXPECT_LT(values[i], 1.0f);
  }
  TwoArgs ints({kDLInt, 32, 1}, {1000});
  TaskArguments d(ints.spec, 5);
  d.restore_all();
  const int32_t* small = reinterpret_cast<const int32_t*>(d.working(1));
  for (int i = 0; i < 1000; ++i) {
    EXPECT_GE(small[i], -8);
    EXPECT_LE(small[i], 8);
  }
}

TEST(WorkerCheck, RandomArgumentsAreTheDrawsInOrderHoweverTheFillIsSliced) {
  // splitmix64 from the seed, one draw per element, A's elements then B's; tensors of several
  // million elements are filled in slices on threads, and must not tell.
  auto draws = [](uint64_t seed, size_t count) {
    std::vector<uint64_t> out;
    uint64_t state = seed;
    for (size_t i = 0; i < count; ++i) {
      uint64_t z = (state += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      out.push_back(z ^ (z >> 31));
    }
    return out;
  };
  constexpr size_t kBytes = (size_t{10} << 20) + 7;  // three slices and a bit
  TwoArgs bytes({kDLUInt, 8, 1}, {static_cast<int64_t>(kBytes)});
  TaskArguments u8(bytes.spec, 9);
  u8.restore_all();
  std::vector<uint64_t> r = draws(9, 2 * kBytes);
  const uint8_t* a = reinterpret_cast<const uint8_t*>(u8.working(0));
  const uint8_t* b = reinterpret_cast<const uint8_t*>(u8.working(1));
  size_t wrong = 0;
  for (size_t i = 0; i < kBytes; ++i) {
    wrong += a[i] != r[i] % 16 ? 1 : 0;
    wrong += b[i] != r[kBytes + i] % 16 ? 1 : 0;
  }
  EXPECT_EQ(wrong, 0u);
  TwoArgs floats(kFloat32, {5});
  TaskArguments f32(floats.spec, 9);
  f32.restore_all();
  r = draws(9, 10);
  for (size_t i = 0; i < 10; ++i) {
    float expected = static_cast<float>(static_cast<double>(r[i] >> 11) * 0x1.0p-52 - 1.0);
    EXPECT_EQ(reinterpret_cast<const float*>(f32.working(i / 5))[i % 5], expected) << i;
  }
  TwoArgs ints({kDLInt, 16, 1}, {5});
  TaskArguments i16(ints.spec, 9);
  i16.restore_all();
  for (size_t i = 0; i < 10; ++i) {
    int16_t expected = static_cast<int16_t>(static_cast<int64_t>(r[i] % 17) - 8);
    EXPECT_EQ(reinterpret_cast<const int16_t*>(i16.working(i / 5))[i % 5], expected) << i;
  }
}

TEST(WorkerCheck, PlacementsMoveTheArgumentsWithinAPageAndKeepTheirValues) {
  TwoArgs floats(kFloat32, {1000});
  TaskArguments args(floats.spec, 5);
  args.restore_all();
  std::string a0(args.working(0), 4000), b0(args.working(1), 4000);
  const char* start[2] = {args.working(0), args.working(1)};
  std::set<std::ptrdiff_t> relative;  // B's offset from A's, modulo a page
  for (uint64_t index = 0; index < 16; ++index) {
    std::memset(args.working(1), 0, 4000);  // a kernel's results
    args.place(index);
    for (int t = 0; t < 2; ++t) {
      std::ptrdiff_t offset = args.working(t) - start[t];
      EXPECT_GE(offset, 0);
      EXPECT_LT(offset, static_cast<std::ptrdiff_t>(TaskArguments::kPlacementSlack));
      EXPECT_EQ(offset % 64, 0);
      // The kernel receives the moved buffer.
      const DLTensor* tensor = static_cast<const DLTensor*>(args.values()[t].v_handle);
      EXPECT_EQ(tensor->data, args.working(t));
      if (index == 0) {
        EXPECT_EQ(offset, 0);
      }
    }
    EXPECT_EQ(std::string(args.working(0), 4000), a0);
    EXPECT_EQ(std::string(args.working(1), 4000), b0);  // restored
    relative.insert(((args.working(1) - start[1]) - (args.working(0) - start[0]) + 4096) % 4096);
  }
  EXPECT_GE(relative.size(), 8u);
  // The same index, the same placement.
  args.place(3);
  const char* third = args.working(1);
  args.place(4);
  args.place(3);
  EXPECT_EQ(args.working(1), third);
}

TEST(WorkerCheck, EqualResultsPass) {
  EXPECT_EQ(compare_floats({1, 2, 3}, {1, 2, 3}), std::nullopt);
}

TEST(WorkerCheck, TheAbsoluteToleranceFollowsTheLargestExpectedValue) {
  // atol 1e-3 times the largest |expected|, 100: a difference of 0.09 at an expected 0 passes.
  EXPECT_EQ(compare_floats({100, 0, 0, 0}, {100, 0.09f, 0, 0}), std::nullopt);
  EXPECT_EQ(compare_floats({100, 0, 0, 0}, {100, 0.11f, 0, 0}),
            "argument B differs from the untuned function's result at index [1]: expected 0, "
            "found 0.109999999 (allowed difference 0.1); 1 of 4 elements differ");
  // The relative tolerance adds rtol * |expected|.
  EXPECT_EQ(compare_floats({100, 50}, {100, 50.14f}), std::nullopt);
  EXPECT_NE(compare_floats({100, 50}, {100, 50.16f}), std::nullopt);
}

TEST(WorkerCheck, ANewReferenceScalesTheToleranceAgain) {
  // The scale of the expected values is found once per reference: 0.11 off a zero passes
  // against a reference whose largest value is 1000 (atol 1e-3 x 1000 = 1), and fails after a
  // new reference whose largest value is 100 (0.1).
  TwoArgs two(kFloat32, {2});
  TaskArguments args(two.spec, 1);
  args.restore_all();
  auto reference_of = [](std::vector<float> values) {
    return std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4);
  };
  std::vector<float> found = {0.11f, 100};
  args.set_reference(reference_of({0, 1000}));
  std::memcpy(args.working(1), found.data(), 8);
  EXPECT_NE(args.compare(Tolerance{}, false), std::nullopt);  // 100 is far from 1000
  found = {0.11f, 1000};
  std::memcpy(args.working(1), found.data(), 8);
  EXPECT_EQ(args.compare(Tolerance{}, false), std::nullopt);
  args.set_reference(reference_of({0, 100}));
  found = {0.11f, 100};
  std::memcpy(args.working(1), found.data(), 8);
  EXPECT_NE(args.compare(Tolerance{}, false), std::nullopt);
}

TEST(WorkerCheck, TheWorstElementIsNamed) {
  std::optional<std::string> message =
      compare_floats({1, 1, 1, 1, 1}, {1.5f, 1, 4, 1, 2}, Tolerance{0, 0});
  EXPECT_EQ(message,
            "argument B differs from the untuned function's result at index [2]: expected 1, "
            "found 4 (allowed difference 9.53674316e-07); 3 of 5 elements differ");
}

TEST(WorkerCheck, NanMatchesOnlyNanAndInfinityOnlyItself) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(compare_floats({nan, inf, 1}, {nan, inf, 1}), std::nullopt);
  EXPECT_EQ(compare_floats({1, 2}, {nan, 2}),
            "argument B differs from the untuned function's result at index [0]: expected 1, "
            "found nan (allowed difference 0.003); 1 of 2 elements differ");
  EXPECT_NE(compare_floats({inf, 2}, {-inf, 2}), std::nullopt);
}

TEST(WorkerCheck, IntegersMustBeEqualAndIndicesAreMultiDimensional) {
  TwoArgs ints({kDLInt, 16, 1}, {2, 4});
  TaskArguments args(ints.spec, 1);
  args.restore_all();
  std::vector<int16_t> expected = {0, 1, 2, 3, 4, 5, 6, 7};
  args.set_reference(std::string(reinterpret_cast<const char*>(expected.data()), 16));
  std::vector<int16_t> found = expected;
  found[5] = -3;
  std::memcpy(args.working(1), found.data(), 16);
  EXPECT_EQ(args.compare({}, false),
            "argument B differs from the untuned function's result at index [1, 1]: expected 5, "
            "found -3; 1 of 8 elements differ");
  // Only written arguments are compared after timing; an input changed is named as such.
  args.working(0)[0] ^= 1;
  std::memcpy(args.working(1), expected.data(), 16);
  EXPECT_EQ(args.compare({}, true), std::nullopt);
  std::optional<std::string> changed = args.compare({}, false);
  ASSERT_TRUE(changed.has_value());
  EXPECT_EQ(changed->rfind("argument A, which the function only reads, was changed at index "
                           "[0, 0]: expected ",
                           0),
            0u)
      << *changed;
}

TEST(WorkerCheck, HalfPrecisionMayDifferInItsLastBits) {
  TwoArgs halves({kDLFloat, 16, 1}, {2});
  TaskArguments args(halves.spec, 1);
  args.restore_all();
  std::vector<uint16_t> expected = {0x3c00, 0x3c00};  // 1.0, 1.0
  args.set_reference(std::string(reinterpret_cast<const char*>(expected.data()), 4));
  std::vector<uint16_t> found = {0x3c01, 0x3c00};  // 1 + 2^-10: one unit in the last place
  std::memcpy(args.working(1), found.data(), 4);
  EXPECT_EQ(args.compare(Tolerance{0, 0}, true), std::nullopt);
  found[0] = 0x3c20;  // 1 + 2^-5
  std::memcpy(args.working(1), found.data(), 4);
  EXPECT_EQ(args.compare(Tolerance{0, 0}, true),
            "argument B differs from the untuned function's result at index [0]: expected 1, "
            "found 1.03125 (allowed difference 0.0078125); 1 of 2 elements differ");
}

TEST(WorkerCheck, PerturbingChangesTheMiddleElementOfTheFirstOutput) {
  TwoArgs floats(kFloat32, {9});
  TaskArguments args(floats.spec, 3);
  args.restore_all();
  args.set_reference(args.snapshot_written());
  EXPECT_EQ(args.compare({}, false), std::nullopt);
  args.perturb_one_written();
  std::optional<std::string> message = args.compare({}, false);
  ASSERT_TRUE(message.has_value());
  EXPECT_EQ(message->rfind("argument B differs from the untuned function's result at index [4]", 0),
            0u)
      << *message;
}

// The first OpenCL device, or nothing (the test then skips).
std::optional<DLDevice> opencl_device() {
  int32_t count = 0;
  if (KilnDeviceCount(kDLOpenCL, &count) != 0 || count == 0) {
    KilnSetLastError(nullptr);
    return std::nullopt;
  }
  return DLDevice{kDLOpenCL, 0};
}

TEST(WorkerCheck, ArgumentsOnADeviceAreRestoredThereAndFetchedToCompare) {
  std::optional<DLDevice> device = opencl_device();
  if (!device) GTEST_SKIP() << "no OpenCL device";
  TwoArgs two(kFloat32, {3});
  TaskArguments args(two.spec, 1);
  args.restore_all();
  std::string pristine = args.snapshot_written();
  args.set_reference(pristine);  // a function that leaves B as it was
  args.place_on_device(*device);
  EXPECT_EQ(args.device().device_type, kDLOpenCL);
  const auto* b = static_cast<const DLTensor*>(args.values()[1].v_handle);
  EXPECT_EQ(b->device.device_type, kDLOpenCL);  // the packed arguments point at the device
  // A value written on the device is fetched for the comparison ...
  float changed[3] = {5, 5, 5};
  DLTensor host = *b;
  host.data = changed;
  host.device = DLDevice{kDLCPU, 0};
  ASSERT_EQ(KilnDeviceCopy(&host, const_cast<DLTensor*>(b)), 0) << KilnGetLastError();
  std::optional<std::string> wrong = args.compare({}, true);
  ASSERT_TRUE(wrong.has_value());
  EXPECT_NE(wrong->find("found 5"), std::string::npos) << *wrong;
  // ... and a restore puts the pristine values back there.
  args.restore_written();
  EXPECT_EQ(args.compare({}, false), std::nullopt);
  args.perturb_one_written();
  EXPECT_NE(args.compare({}, true), std::nullopt);
}

TEST(WorkerCheck, StridedArgumentsCannotGoToADevice) {
  std::vector<int64_t> shape = {2, 2}, strides = {4, 1};
  KilnArgSpec arg = {"A", kKilnArgTensor, kFloat32, 2, shape.data(), strides.data(), kDLCPU, 1, 1,
                     0};
  KilnFuncSpec spec = {"main", "kiln_unchecked_main", 1, &arg, 0, nullptr, nullptr, nullptr};
  TaskArguments args(spec, 1);
  try {
    args.place_on_device(DLDevice{kDLOpenCL, 0});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "tune worker: argument A has strides; a GPU function is tuned on compact arguments "
              "only");
  }
}

}  // namespace
}  // namespace kiln::autotune::detail
