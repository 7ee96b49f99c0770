// compile_jit's object cache: a module compiled before is loaded from the cache directory and
// runs as the compiled one; another target or pipeline misses; a damaged entry is never linked;
// a directory that cannot be written only costs the caching.
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "codegen_test_util.h"

namespace kiln::codegen::testing {
namespace {

// for i in 0..64: C[i] = A[i] * 2 + 1
Ref<PrimFunc> scale_add(const std::string& symbol) {
  Ref<Buffer> a = buffer_1d("A", DataType::float32(), int32_const(64));
  Ref<Buffer> c = buffer_1d("C", DataType::float32(), int32_const(64));
  Ref<Var> i = make_var("i");
  Expr value = buffer_load(a, {Expr(i)}) * make_const(DataType::float32(), 2.0) +
               make_const(DataType::float32(), 1.0);
  return packed_func(symbol, {a, c}, serial(i, int32_const(64), buffer_store(c, value, {Expr(i)})));
}

// `ir` without its comments ("; preds = ...").
std::string without_comments(const std::string& ir) {
  std::string out;
  bool comment = false;
  for (char ch : ir) {
    if (ch == ';') comment = true;
    if (ch == '\n') comment = false;
    if (!comment) out += ch;
  }
  return out;
}

class ObjectCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kiln_object_cache_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::string cache() const { return dir_ + "/objects"; }

  // The cache's entries (files named llvmcache-KEY), as paths.
  std::vector<std::string> entries() const {
    std::vector<std::string> found;
    DIR* d = opendir(cache().c_str());
    if (d == nullptr) return found;
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("llvmcache-", 0) == 0) found.push_back(cache() + "/" + name);
    }
    closedir(d);
    return found;
  }

  std::unique_ptr<JitModule> compile(const Target& target, const std::string& dir) {
    return compile_jit({scale_add("kiln_scale_add")}, target, "", {}, dir);
  }

  // Runs the module's function on 0..63 and checks every result.
  void expect_computes(const JitModule& module) {
    Tensor<float> a(64, DataType::float32()), c(64, DataType::float32());
    for (int k = 0; k < 64; ++k) a[k] = static_cast<float>(k);
    ASSERT_EQ(call_packed(module, "kiln_scale_add", {tensor_arg(a.dl()), tensor_arg(c.dl())}), 0);
    for (int k = 0; k < 64; ++k) EXPECT_EQ(c[k], 2.0f * static_cast<float>(k) + 1.0f) << k;
  }

  std::string dir_;
};

TEST_F(ObjectCacheTest, ASecondCompileOfTheSameModuleLoadsTheStoredObject) {
  auto first = compile(host_target(), cache());
  EXPECT_FALSE(first->timings().from_cache);
  EXPECT_GT(first->timings().emit_ms, 0.0);
  ASSERT_EQ(entries().size(), 1u);
  auto second = compile(host_target(), cache());
  EXPECT_TRUE(second->timings().from_cache);
  EXPECT_EQ(second->timings().optimize_ms, 0.0);
  EXPECT_EQ(second->timings().emit_ms, 0.0);
  expect_computes(*first);
  expect_computes(*second);
  // The sources of a cached module: its IR optimized on demand, the same as the compiled one's
  // (the compiled one's is a copy, whose blocks list their predecessors in another order).
  EXPECT_EQ(without_comments(second->get_source("ll")), without_comments(first->get_source("ll")));
  EXPECT_NE(second->get_source("asm").find("kiln_scale_add"), std::string::npos);
  EXPECT_EQ(entries().size(), 1u);
}

TEST_F(ObjectCacheTest, AnotherOptLevelOrFunctionIsAnotherEntry) {
  compile(host_target(), cache());
  Target o1 = parse_target(host_target().str() + " -opt-level=1");
  auto other_level = compile(o1, cache());
  EXPECT_FALSE(other_level->timings().from_cache);
  expect_computes(*other_level);
  auto renamed = compile_jit({scale_add("kiln_scale_add2")}, host_target(), "", {}, cache());
  EXPECT_FALSE(renamed->timings().from_cache);
  EXPECT_EQ(entries().size(), 3u);
  EXPECT_TRUE(compile(o1, cache())->timings().from_cache);
}

TEST_F(ObjectCacheTest, ADamagedEntryIsCompiledAgainAndReplaced) {
  compile(host_target(), cache());
  ASSERT_EQ(entries().size(), 1u);
  std::string entry = entries()[0];
  {
    // One byte of the object changed: its stored hash no longer matches.
    std::fstream file(entry, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(100);
    file.put('\x5a');
  }
  auto damaged = compile(host_target(), cache());
  EXPECT_FALSE(damaged->timings().from_cache);
  expect_computes(*damaged);
  EXPECT_TRUE(compile(host_target(), cache())->timings().from_cache);
  // Cut short: the same.
  ASSERT_EQ(truncate(entry.c_str(), 16), 0);
  auto cut = compile(host_target(), cache());
  EXPECT_FALSE(cut->timings().from_cache);
  expect_computes(*cut);
  EXPECT_TRUE(compile(host_target(), cache())->timings().from_cache);
}

TEST_F(ObjectCacheTest, ADirectoryThatCannotBeWrittenOnlyCostsTheCaching) {
  std::string file = dir_ + "/a_file";
  std::ofstream(file) << "not a directory";
  for (int k = 0; k < 2; ++k) {
    auto module = compile(host_target(), file + "/objects");
    EXPECT_FALSE(module->timings().from_cache);
    expect_computes(*module);
  }
}

TEST_F(ObjectCacheTest, WithoutADirectoryNothingIsCached) {
  auto module = compile(host_target(), "");
  EXPECT_FALSE(module->timings().from_cache);
  EXPECT_FALSE(compile(host_target(), "")->timings().from_cache);
  expect_computes(*module);
}

}  // namespace
}  // namespace kiln::codegen::testing
