// Tests of the lowering pipeline: every operator lowers to a program that computes the same
// results and meets the code generators' input contract; the dump directory gets one file per
// pass with "(unchanged)" where a pass did nothing; timing and verification work; modules lower.
#include "kiln/tir/pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tir_test_util.h"

namespace kiln::tir::testing {
namespace {

namespace fs = std::filesystem;

// Checks the contract of the code generators: no Block, BlockRealize or Reduce; every load and
// store has one index; every Allocate allocates a one-dimensional buffer.
void expect_codegen_contract(const Ref<PrimFunc>& f) {
  post_order_visit(f->body, [&](const Node* node) {
    switch (node->kind()) {
      case NodeKind::Block:
      case NodeKind::BlockRealize:
      case NodeKind::Reduce:
        ADD_FAILURE() << kind_name(node->kind()) << " left after lowering:\n" << to_script(f);
        break;
      case NodeKind::BufferLoad:
        EXPECT_EQ(static_cast<const BufferLoad*>(node)->indices.size(), 1u) << to_script(f);
        break;
      case NodeKind::BufferStore:
        EXPECT_EQ(static_cast<const BufferStore*>(node)->indices.size(), 1u) << to_script(f);
        break;
      case NodeKind::Allocate:
        EXPECT_EQ(static_cast<const Allocate*>(node)->buffer->ndim(), 1) << to_script(f);
        break;
      default:
        break;
    }
  });
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("kiln_tir_test_" + name);
  fs::remove_all(dir);
  return dir;
}

LowerOptions verified() {
  LowerOptions options;
  options.verify = true;
  return options;
}

TEST(Pipeline, OperatorsKeepTheirResultsAndMeetTheContract) {
  for (const Ref<PrimFunc>& f : {matmul_func(6, 5, 4), conv2d_func(), softmax_func(4, 7),
                                 layer_norm_func(4, 6), tiled_producer_consumer(32, 8)}) {
    Ref<PrimFunc> lowered = lower(f, verified());
    expect_codegen_contract(lowered);
    expect_same_results(f, lowered);
  }
  Ref<PrimFunc> symbolic = symbolic_elementwise_func();
  Ref<PrimFunc> lowered = lower(symbolic, verified());
  expect_codegen_contract(lowered);
  for (int64_t n : {1, 5, 16}) expect_same_results(symbolic, lowered, {{"n", n}});
}

TEST(Pipeline, TiledIntermediateIsCompactedAndHoisted) {
  Ref<PrimFunc> lowered = lower(tiled_producer_consumer(16, 4), verified());
  EXPECT_EQ(to_script(lowered->body), R"(with T.allocate((16,), "float32") as tmp:
    for i0, j0 in T.grid(4, 4):
        for i1, j1 in T.grid(4, 4):
            tmp[i1 * 4 + j1] = A[i0 * 64 + i1 * 16 + j0 * 4 + j1] * T.float32(2)
        for i2, j2 in T.grid(4, 4):
            B[i0 * 64 + i2 * 16 + j0 * 4 + j2] = tmp[i2 * 4 + j2] + T.float32(1))");
}

TEST(Pipeline, DumpsOneFilePerPass) {
  fs::path dir = fresh_dir("dump");
  std::vector<PassTiming> timing;
  LowerOptions options = verified();
  options.dump_dir = dir.string();
  options.timing = &timing;
  lower(matmul_func(4, 4, 4), options);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  std::vector<std::string> expected = {"00_input.py"};
  for (size_t k = 0; k < timing.size(); ++k) {
    char prefix[32];
    std::snprintf(prefix, sizeof(prefix), "%02zu_", k + 1);
    expected.push_back(prefix + timing[k].pass + ".py");
    std::string text = read_file(dir / expected.back());
    if (timing[k].changed) {
      EXPECT_NE(text.find("@T.prim_func"), std::string::npos) << expected.back();
    } else {
      EXPECT_EQ(text, "(unchanged)\n") << expected.back();
    }
  }
  expected.push_back("timing.txt");
  EXPECT_EQ(names, expected);
  // A matmul has no intermediate buffer: planning and compaction do nothing.
  EXPECT_EQ(read_file(dir / "02_plan_buffer_allocation.py"), "(unchanged)\n");
  EXPECT_EQ(read_file(dir / "03_compact_buffer_allocation.py"), "(unchanged)\n");
  EXPECT_NE(read_file(dir / "01_lower_init_block.py").find("if v_k == 0:"), std::string::npos);
  EXPECT_NE(read_file(dir / "00_input.py").find("with T.init():"), std::string::npos);
  std::string timing_text = read_file(dir / "timing.txt");
  EXPECT_NE(timing_text.find("01  lower_init_block"), std::string::npos) << timing_text;
  EXPECT_NE(timing_text.find("unchanged"), std::string::npos) << timing_text;
  EXPECT_NE(timing_text.find("total"), std::string::npos) << timing_text;
  fs::remove_all(dir);
}

TEST(Pipeline, DumpDirectoryFromTheEnvironment) {
  fs::path dir = fresh_dir("env");
  setenv("KILN_DUMP_IR", dir.c_str(), 1);
  lower(symbolic_elementwise_func());
  unsetenv("KILN_DUMP_IR");
  EXPECT_TRUE(fs::exists(dir / "05_flatten_buffers.py"));
  fs::remove_all(dir);
}

// The first half of the pipeline, in order, and the storage rewrite after the loop passes.
TEST(Pipeline, RunsThePassesInOrder) {
  std::vector<PassTiming> timing;
  LowerOptions options;
  options.timing = &timing;
  lower(matmul_func(2, 2, 2), options);
  std::vector<std::string> passes;
  for (const PassTiming& t : timing) {
    passes.push_back(t.pass);
    EXPECT_GE(t.seconds, 0.0);
  }
  ASSERT_GE(passes.size(), 7u);
  EXPECT_EQ(std::vector<std::string>(passes.begin(), passes.begin() + 6),
            (std::vector<std::string>{"lower_init_block", "plan_buffer_allocation",
                                      "compact_buffer_allocation", "lower_opaque_block",
                                      "flatten_buffers", "simplify"}));
  EXPECT_EQ(std::count(passes.begin(), passes.end(), "storage_rewrite"), 1);
  EXPECT_TRUE(timing[0].changed);
  EXPECT_FALSE(timing[1].changed);
}

TEST(Pipeline, VerifierBlamesTheInput) {
  Ref<Buffer> a = buffer({4}, "A");
  Ref<Var> stray = make_var("stray");
  Ref<PrimFunc> broken = make_func({a}, buffer_store(a, f32(1), {stray}));
  std::string message = error_of([&] { lower(broken, verified()); });
  EXPECT_NE(message.find("malformed after the input of lower (before any pass)"), std::string::npos)
      << message;
}

TEST(Pipeline, VerificationFromTheEnvironment) {
  Ref<Buffer> a = buffer({4}, "A");
  Ref<Var> stray = make_var("stray");
  Ref<PrimFunc> broken = make_func({a}, buffer_store(a, f32(1), {stray}));
  LowerOptions quiet;
  quiet.verify = false;
  EXPECT_EQ(error_of([&] { lower(broken, quiet); }), "");
  setenv("KILN_VERIFY_IR", "1", 1);
  std::string message = error_of([&] { lower(broken, quiet); });
  unsetenv("KILN_VERIFY_IR");
  EXPECT_NE(message.find("variable stray is used"), std::string::npos) << message;
}

TEST(Pipeline, LowersEveryFunctionOfAModule) {
  auto mod = make<IRModule>();
  mod->functions["matmul"] = matmul_func(3, 3, 3);
  mod->functions["softmax"] = softmax_func(2, 3);
  Ref<IRModule> lowered = lower(mod, verified());
  ASSERT_EQ(lowered->functions.size(), 2u);
  for (const auto& [name, func] : lowered->functions) {
    expect_codegen_contract(func);
    expect_same_results(mod->functions.at(name), func);
  }
  EXPECT_TRUE(lower(lowered).same_as(lowered));
}

}  // namespace
}  // namespace kiln::tir::testing
