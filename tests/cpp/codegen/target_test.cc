// Target strings: parsing, the canonical form, the features in effect, and the errors.
#include <gtest/gtest.h>

#include <functional>

#include "kiln/codegen/target.h"
#include "kiln/support/error.h"

namespace kiln::codegen {
namespace {

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
  for (const char* text : {"llvm", "llvm -mcpu=znver4", "llvm -mcpu=skylake-avx512 -opt-level=1",
                           "llvm -mtriple=x86_64-pc-linux-gnu -mattr=+avx512f,+avx512bw"}) {
    Target t = parse_target(text);
    Target again = parse_target(t.str());
    EXPECT_EQ(again.str(), t.str()) << text;
    EXPECT_EQ(again.isa_features(), t.isa_features()) << text;
  }
}

TEST(Target, NamedCpuHasItsFeatures) {
  Target t = parse_target("llvm -mcpu=znver4");
  EXPECT_FALSE(t.is_host);
  EXPECT_EQ(t.cpu, "znver4");
  for (const char* f :
       {"avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512vnni", "avx512bf16"}) {
    EXPECT_TRUE(t.has_feature(f)) << f;
  }
  EXPECT_FALSE(t.has_feature("amx-tile"));
  Target haswell = parse_target("llvm -mcpu=haswell");
  EXPECT_TRUE(haswell.has_feature("avx2"));
  EXPECT_FALSE(haswell.has_feature("avx512f"));
}

TEST(Target, AttrsAddAndRemoveFeatures) {
  Target t =
      parse_target("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=x86-64 -mattr=+avx512f,+avx512bw");
  EXPECT_TRUE(t.has_feature("avx512f"));
  EXPECT_TRUE(t.has_feature("avx2"));  // implied by avx512f
  EXPECT_TRUE(t.has_feature("avx512bw"));
  EXPECT_FALSE(t.has_feature("avx512vnni"));
  EXPECT_EQ(t.str(), "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=x86-64 -mattr=+avx512bw,+avx512f");
  Target off = parse_target("llvm -mcpu=znver4 -mattr=-avx512f");
  EXPECT_FALSE(off.has_feature("avx512f"));
  EXPECT_FALSE(off.has_feature("avx512bw"));
  EXPECT_TRUE(off.has_feature("avx2"));
}

TEST(Target, OptLevel) {
  EXPECT_EQ(parse_target("llvm -opt-level=2").opt_level, 2);
  EXPECT_EQ(parse_target("llvm -opt-level=0").str().find("-opt-level=0") != std::string::npos,
            true);
  EXPECT_EQ(parse_target("llvm -opt-level=3").str().find("-opt-level"), std::string::npos);
}

TEST(TargetErrors, UnknownKind) {
  std::string msg = error_of([] { parse_target("cuda -arch=sm_90"); });
  EXPECT_NE(msg.find("parse_target: unknown target kind 'cuda'"), std::string::npos) << msg;
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
  std::string msg = error_of([] { parse_target("llvm -mcpu=znver9"); });
  EXPECT_NE(msg.find("parse_target: unknown CPU 'znver9' (-mcpu)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("znver4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("skylake-avx512"), std::string::npos) << msg;
}

TEST(TargetErrors, MalformedAttrs) {
  std::string msg = error_of([] { parse_target("llvm -mattr=avx512f"); });
  EXPECT_NE(msg.find("parse_target: malformed -mattr entry 'avx512f'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("+feature or -feature"), std::string::npos) << msg;
  msg = error_of([] { parse_target("llvm -mattr=+avx512f,,+fma"); });
  EXPECT_NE(msg.find("malformed -mattr entry ''"), std::string::npos) << msg;
  msg = error_of([] { parse_target("llvm -mattr=+avx513"); });
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
