// Target strings: parsing, the canonical form, the features in effect, the vector unit and
// caches that schedules ask for, and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>

#include "kiln/codegen/target.h"
#include "kiln/support/error.h"

namespace kiln::codegen {
namespace {

using ir::DataType;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Target, HostIsTheCpuOfThisProcess) {
  Target t = parse_target("llvm");
  EXPECT_TRUE(t.is_host);
  EXPECT_FALSE(t.cpu.empty());
  EXPECT_NE(t.cpu, "generic");
  EXPECT_EQ(t.opt_level, 3);
  EXPECT_EQ(t.str().rfind("llvm -mtriple=", 0), 0u) << t.str();
  EXPECT_NE(t.str().find(" -mcpu=" + t.cpu), std::string::npos) << t.str();
}

TEST(Target, NativeCpuIsTheHost) {
  Target native = parse_target("llvm -mcpu=native");
  EXPECT_TRUE(native.is_host);
  EXPECT_EQ(native.str(), parse_target("llvm").str());
}

TEST(Target, CanonicalFormParsesToTheSameTarget) {
  for (const char* text : {"llvm", "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver4",
                           "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512 -opt-level=1",
                           "llvm -mtriple=x86_64-pc-linux-gnu -mattr=+avx512f,+avx512bw"}) {
    Target t = parse_target(text);
    Target again = parse_target(t.str());
    EXPECT_EQ(again.str(), t.str()) << text;
    EXPECT_EQ(again.isa_features(), t.isa_features()) << text;
  }
}

TEST(Target, NamedCpuHasItsFeatures) {
  Target t = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver4");
  EXPECT_FALSE(t.is_host);
  EXPECT_EQ(t.cpu, "znver4");
  for (const char* f :
       {"avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512vnni", "avx512bf16"}) {
    EXPECT_TRUE(t.has_feature(f)) << f;
  }
  EXPECT_FALSE(t.has_feature("amx-tile"));
  Target haswell = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell");
  EXPECT_TRUE(haswell.has_feature("avx2"));
  EXPECT_FALSE(haswell.has_feature("avx512f"));
}

// AVX-VNNI (vpdpbusd on ymm, VEX-encoded) is its own feature: Alder Lake has it without
// AVX-512, Sapphire Rapids with AVX-512 VNNI; it can be added to any AVX2 CPU.
TEST(Target, AvxVnniIsReportedApartFromAvx512Vnni) {
  Target alderlake = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=alderlake");
  EXPECT_TRUE(alderlake.has_feature("avxvnni"));
  EXPECT_FALSE(alderlake.has_feature("avx512f"));
  EXPECT_FALSE(alderlake.has_feature("avx512vnni"));
  const std::vector<std::string>& features = alderlake.isa_features();
  EXPECT_NE(std::find(features.begin(), features.end(), "avxvnni"), features.end());
  Target spr = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=sapphirerapids");
  EXPECT_TRUE(spr.has_feature("avxvnni"));
  EXPECT_TRUE(spr.has_feature("avx512vnni"));
  EXPECT_FALSE(
      parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver4").has_feature("avxvnni"));
  Target added = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell -mattr=+avxvnni");
  EXPECT_TRUE(added.has_feature("avxvnni"));
  EXPECT_FALSE(added.has_feature("avx512vnni"));
}

TEST(Target, AttrsAddAndRemoveFeatures) {
  Target t =
      parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=x86-64 -mattr=+avx512f,+avx512bw");
  EXPECT_TRUE(t.has_feature("avx512f"));
  EXPECT_TRUE(t.has_feature("avx2"));  // implied by avx512f
  EXPECT_TRUE(t.has_feature("avx512bw"));
  EXPECT_FALSE(t.has_feature("avx512vnni"));
  EXPECT_EQ(t.str(), "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=x86-64 -mattr=+avx512bw,+avx512f");
  Target off = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver4 -mattr=-avx512f");
  EXPECT_FALSE(off.has_feature("avx512f"));
  EXPECT_FALSE(off.has_feature("avx512bw"));
  EXPECT_TRUE(off.has_feature("avx2"));
}

// What tensor intrinsics may require: CPU features for llvm, architecture levels for cuda.
TEST(Target, IntrinsicFeaturesByKind) {
  Target znver4 = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver4");
  EXPECT_EQ(znver4.intrinsic_features(), znver4.isa_features());
  using Names = std::vector<std::string>;
  EXPECT_EQ(
      parse_target("cuda -arch=sm_75").intrinsic_features(),
      (Names{"sm_50", "sm_52", "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75"}));
  Names sm86 = parse_target("cuda -arch=sm_86").intrinsic_features();
  EXPECT_EQ(sm86.back(), "sm_86");
  EXPECT_NE(std::find(sm86.begin(), sm86.end(), "sm_80"), sm86.end());
  EXPECT_EQ(std::find(sm86.begin(), sm86.end(), "sm_87"), sm86.end());
  Names sm90a = parse_target("cuda -arch=sm_90a").intrinsic_features();
  EXPECT_EQ(Names(sm90a.end() - 2, sm90a.end()), (Names{"sm_90", "sm_90a"}));
  // A GPU target's host CPU runs no intrinsic of a kernel.
  EXPECT_TRUE(parse_target("opencl").intrinsic_features().empty());
}

TEST(Target, OptLevel) {
  EXPECT_EQ(parse_target("llvm -opt-level=2").opt_level, 2);
  EXPECT_EQ(parse_target("llvm -opt-level=0").str().find("-opt-level=0") != std::string::npos,
            true);
  EXPECT_EQ(parse_target("llvm -opt-level=3").str().find("-opt-level"), std::string::npos);
}

// The vector unit is the named CPU's, whatever CPU runs the test.
TEST(TargetVectorUnit, NamedCpus) {
  struct Expected {
    const char* text;
    int register_bits;
    int num_registers;
    bool fma;
    int float32_lanes;
  };
  const Expected cpus[] = {
      {"llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver4", 512, 32, true, 16},
      {"llvm -mtriple=x86_64-pc-linux-gnu -mcpu=sapphirerapids", 512, 32, true, 16},
      {"llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512", 512, 32, true, 16},
      {"llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver3", 256, 16, true, 8},
      {"llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell", 256, 16, true, 8},
      {"llvm -mtriple=x86_64-pc-linux-gnu -mcpu=sandybridge", 256, 16, false, 8},
      {"llvm -mtriple=x86_64-pc-linux-gnu -mcpu=x86-64", 128, 16, false, 4},
      {"llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell -mattr=-fma", 256, 16, false, 8}};
  for (const Expected& e : cpus) {
    Target t = parse_target(e.text);
    EXPECT_EQ(t.vector_register_bits, e.register_bits) << e.text;
    EXPECT_EQ(t.num_vector_registers, e.num_registers) << e.text;
    EXPECT_EQ(t.has_fma, e.fma) << e.text;
    EXPECT_EQ(t.vector_lanes(DataType::float32()), e.float32_lanes) << e.text;
    EXPECT_LE(t.preferred_vector_bits, t.vector_register_bits) << e.text;
    EXPECT_GE(t.preferred_vector_bits, 128) << e.text;
    // Caches are known for the host only.
    EXPECT_FALSE(t.l1d_cache_bytes.has_value()) << e.text;
    EXPECT_FALSE(t.l2_cache_bytes.has_value()) << e.text;
  }
}

TEST(TargetVectorUnit, PreferredWidthFollowsTheCpuTuning) {
  // skylake-avx512 has 512-bit registers but LLVM prefers 256-bit vectors there (frequency).
  Target skylake = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512");
  EXPECT_EQ(skylake.vector_register_bits, 512);
  EXPECT_EQ(skylake.preferred_vector_bits, 256);
  Target haswell = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell");
  EXPECT_EQ(haswell.preferred_vector_bits, 256);
}

TEST(TargetVectorUnit, AttrsChangeTheVectorUnit) {
  Target t = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=x86-64 -mattr=+avx512f");
  EXPECT_EQ(t.vector_register_bits, 512);
  EXPECT_EQ(t.num_vector_registers, 32);
  Target off = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver4 -mattr=-avx512f");
  EXPECT_EQ(off.vector_register_bits, 256);
  EXPECT_EQ(off.num_vector_registers, 16);
}

TEST(TargetVectorUnit, LanesPerDtype) {
  Target t = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell");
  EXPECT_EQ(t.vector_lanes(DataType::float64()), 4);
  EXPECT_EQ(t.vector_lanes(DataType::float_(16)), 16);
  EXPECT_EQ(t.vector_lanes(DataType::int_(8)), 32);
  EXPECT_EQ(t.vector_lanes(DataType::bool_()), 32);
}

TEST(TargetVectorUnit, LanesDividingAnExtentFallBackToA256BitHalf) {
  // Named CPUs with their triple: the test parses them on any host (LLVM knows every target).
  Target avx512 = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512");
  EXPECT_EQ(avx512.vector_lanes_dividing(DataType::float32(), 64), 16);
  EXPECT_EQ(avx512.vector_lanes_dividing(DataType::float32(), 56), 8);  // ymm halves
  EXPECT_EQ(avx512.vector_lanes_dividing(DataType::float32(), 12), 1);  // no xmm quarters
  EXPECT_EQ(avx512.vector_lanes_dividing(DataType::float64(), 4), 4);
  EXPECT_EQ(avx512.vector_lanes_dividing(DataType::int_(8), 96), 32);
  Target haswell = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell");
  EXPECT_EQ(haswell.vector_lanes_dividing(DataType::float32(), 56), 8);
  EXPECT_EQ(haswell.vector_lanes_dividing(DataType::float32(), 12), 1);  // no xmm halves
  EXPECT_EQ(haswell.vector_lanes_dividing(DataType::float32(), 0), 1);
  Target neon = parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1");
  EXPECT_EQ(neon.vector_lanes_dividing(DataType::float32(), 6), 1);
  EXPECT_EQ(neon.vector_lanes_dividing(DataType::float32(), 8), 4);
}

TEST(TargetVectorUnit, HostAgreesWithItsFeatures) {
  const Target& host = host_target();
  if (host.triple.rfind("x86_64", 0) != 0) GTEST_SKIP() << "the host is not x86-64";
  int expected = host.has_feature("avx512f") ? 512 : host.has_feature("avx") ? 256 : 128;
  EXPECT_EQ(host.vector_register_bits, expected);
  EXPECT_EQ(host.num_vector_registers, host.has_feature("avx512f") ? 32 : 16);
  EXPECT_EQ(host.has_fma, host.has_feature("fma"));
}

TEST(TargetVectorUnit, HostCachesFromTheSystem) {
  const Target& host = host_target();
  std::ifstream level("/sys/devices/system/cpu/cpu0/cache/index0/level");
  if (!level) GTEST_SKIP() << "this system does not describe its caches in sysfs";
  ASSERT_TRUE(host.l1d_cache_bytes.has_value());
  ASSERT_TRUE(host.l2_cache_bytes.has_value());
  EXPECT_GE(*host.l1d_cache_bytes, 4096);
  EXPECT_GT(*host.l2_cache_bytes, *host.l1d_cache_bytes);
}

TEST(TargetVectorUnit, AArch64) {
  Target t = parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1");
  EXPECT_EQ(t.vector_register_bits, 128);
  EXPECT_EQ(t.num_vector_registers, 32);
  EXPECT_TRUE(t.has_fma);
  EXPECT_EQ(t.vector_lanes(DataType::float32()), 4);
}

TEST(TargetErrors, VectorLanesOfAVectorDtype) {
  Target t = parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell");
  std::string msg = error_of([&] { t.vector_lanes(DataType::float32().with_lanes(4)); });
  EXPECT_NE(msg.find("Target.vector_lanes: expected a scalar element dtype such as float32, "
                     "found float32x4"),
            std::string::npos)
      << msg;
  msg = error_of([&] { t.vector_lanes(DataType::handle()); });
  EXPECT_NE(msg.find("found handle"), std::string::npos) << msg;
}

TEST(TargetErrors, UnknownKind) {
  std::string msg = error_of([] { parse_target("rocm -mcpu=gfx90a"); });
  EXPECT_NE(msg.find("parse_target: unknown target kind 'rocm'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("-mcpu=<cpu>"), std::string::npos) << msg;
}

TEST(TargetErrors, UnknownOptionListsTheValidOnes) {
  std::string msg = error_of([] { parse_target("llvm -march=znver4"); });
  EXPECT_NE(msg.find("parse_target: unknown option '-march=znver4'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("-mtriple=<triple>, -mcpu=<cpu>, -mattr=<+f,-g,...>, -opt-level=<0-3>"),
            std::string::npos)
      << msg;
  EXPECT_NE(error_of([] { parse_target("llvm -mcpu"); }).find("unknown option '-mcpu'"),
            std::string::npos);
}

TEST(TargetErrors, UnknownCpuListsTheValidOnes) {
  std::string msg =
      error_of([] { parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver9"); });
  EXPECT_NE(msg.find("parse_target: unknown CPU 'znver9' (-mcpu)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("znver4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("skylake-avx512"), std::string::npos) << msg;
}

TEST(TargetErrors, MalformedAttrs) {
  std::string msg =
      error_of([] { parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mattr=avx512f"); });
  EXPECT_NE(msg.find("parse_target: malformed -mattr entry 'avx512f'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("+feature or -feature"), std::string::npos) << msg;
  msg = error_of([] { parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mattr=+avx512f,,+fma"); });
  EXPECT_NE(msg.find("malformed -mattr entry ''"), std::string::npos) << msg;
  msg = error_of([] { parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mattr=+avx513"); });
  EXPECT_NE(msg.find("unknown feature 'avx513'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("avx512vnni"), std::string::npos) << msg;
}

TEST(TargetErrors, BadOptLevelAndTriple) {
  std::string msg = error_of([] { parse_target("llvm -opt-level=4"); });
  EXPECT_NE(msg.find("-opt-level must be 0, 1, 2 or 3, found '4'"), std::string::npos) << msg;
  msg = error_of([] { parse_target("llvm -mtriple=nonsense-unknown-none"); });
  EXPECT_NE(msg.find("-mtriple=nonsense-unknown-none names no target"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kiln::codegen
