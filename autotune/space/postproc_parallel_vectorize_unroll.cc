// The postprocessor parallel_vectorize_unroll: applies what the rule of the same name sampled on
// the root block, once the loops are final. Per loop nest at the root: the outer loops that
// every block under them binds only to spatial iterators are fused, up to the largest parallel
// extent, and made parallel; each block's innermost loop, when spatial, is vectorized (a loop
// longer than the largest vector, or of no legal vector width, is split first: by the widest
// legal vector that divides it, else by one register's lanes, the last step masked by
// vectorize_loops); the nest's outermost loop is marked for automatic
// unrolling and keeps LLVM from unrolling what stays a loop (a nest that only copies into an
// intermediate buffer, a packed operand, unrolls at most kStagingCopyUnrollMaxStep steps); under
// kiln.nontemporal = 1 the outermost loop of each other nest is annotated pragma_nontemporal.
#include <algorithm>
#include <unordered_set>

#include "autotune/space/block_analysis.h"
#include "autotune/space/space_parts.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/schedule/annotation.h"
#include "kiln/schedule/for_kind.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/loop_transformation.h"
#include "kiln/schedule/tensor_intrin.h"
#include "kiln/tir/nontemporal.h"

namespace kiln::autotune {

namespace {

using namespace ir;
using schedule::RV;

// Whether every block under `loop` binds its variable only to spatial iterators.
bool is_spatial_for_all(const For* loop) {
  bool spatial = true;
  const Var* var = loop->loop_var.get();
  post_order_visit(loop->body, [&](const Node* node) {
    if (node->kind() != NodeKind::BlockRealize) return;
    const auto* realize = static_cast<const BlockRealize*>(node);
    for (size_t k = 0; k < realize->block->iter_vars.size(); ++k) {
      if (realize->block->iter_vars[k].type == IterType::kDataPar) continue;
      spatial =
          spatial && !uses_var(realize->iter_values[k], [var](const Var* v) { return v == var; });
    }
  });
  return spatial;
}

// The name of the first block of the nest `top` at the root block `root` (not a block nested in
// another, such as the init of a tensorized block).
std::string first_block(schedule::Schedule& sch, const Block* root, const For* top) {
  for (const std::string& name : sch.index("main").block_names()) {
    const schedule::BlockLocation* loc = sch.index("main").find_block(name);
    if (loc->scope == root && !loc->loops.empty() && loc->loops.front() == top) return name;
  }
  return "";
}

// The most steps automatic unrolling may copy in a nest that only stages data for another one
// (packs an operand into an intermediate buffer): a copy runs at the speed of memory, loop or
// not, and unrolled by the sampled 512 steps it was a quarter of the instructions of a tuned GEMM
// (the best eight GEMM 1024 candidates of a tuning run built 30-45% faster, ran as fast).
constexpr int64_t kStagingCopyUnrollMaxStep = 16;

// Whether the block `name` copies into an intermediate buffer: every iterator spatial, one
// store of a value that is one load (or its cast), a buffer that is not a parameter.
bool is_staging_copy(schedule::Schedule& sch, const std::string& name) {
  BlockAnalysis analysis = analyze_block(sch, name);
  if (!analysis.spatial || analysis.writes_output) return false;
  const auto* store = sch.index("main").find_block(name)->block->body.as<BufferStore>();
  if (store == nullptr) return false;
  Expr value = store->value;
  while (value.is<Cast>()) value = value.as<Cast>()->value;
  return value.is<BufferLoad>();
}

// Whether every block of the nest `top` at the root block `root` is a staging copy.
bool stages_only(schedule::Schedule& sch, const Block* root, const For* top) {
  bool any = false;
  for (const std::string& name : sch.index("main").block_names()) {
    const schedule::BlockLocation* loc = sch.index("main").find_block(name);
    if (loc->scope != root || loc->loops.empty() || loc->loops.front() != top) continue;
    if (!is_staging_copy(sch, name)) return false;
    any = true;
  }
  return any;
}

// Whether a block's own body decides its vectors, so that no loop around it is vectorized: a
// tensorized block (vector code already), or one that holds blocks, such as the init of a
// tensorized block (its inner block's loop is the one to vectorize).
bool vectorizes_inside(const Block& block) {
  bool holds_block = false;
  post_order_visit(block.body, [&holds_block](const Node* node) {
    holds_block = holds_block || node->kind() == NodeKind::Block;
  });
  return holds_block || block.annotations.count(schedule::kTensorIntrinAnnotation) != 0;
}

// Whether a vector of `extent` lanes is one LLVM splits into whole registers: a power of two,
// or a power-of-two number of full registers. (A <24 x float> is legalized lane by lane.)
bool legal_vector_extent(int64_t extent, int64_t lanes) {
  auto power_of_two = [](int64_t v) { return v > 0 && (v & (v - 1)) == 0; };
  return power_of_two(extent) || (lanes > 0 && extent % lanes == 0 && power_of_two(extent / lanes));
}

class ParallelVectorizeUnrollPostproc : public Postproc {
 public:
  explicit ParallelVectorizeUnrollPostproc(const SpaceContext& context)
      : lanes_(context.task->target.vector_register_bits > 0
                   ? context.task->target.vector_lanes(DataType::float32())
                   : 1) {}
  const char* name() const override { return "parallel_vectorize_unroll"; }

  void apply(schedule::Schedule& sch) override {
    const schedule::BlockLocation* root = sch.index("main").find_block("root");
    if (root == nullptr) return;
    int64_t parallel_max = annotation_or(*root->block, kParallelMaxAnnotation, 0);
    int64_t vectorize_max = annotation_or(*root->block, kVectorizeMaxAnnotation, 0);
    int64_t unroll = annotation_or(*root->block, kUnrollMaxAnnotation, -1);
    bool stream = annotation_or(*root->block, kStreamingAnnotation, 0) != 0;
    // Step 1. The nests at the root, named by a block inside each (the IR changes as we go),
    // and whether each only stages data.
    std::vector<std::string> nests;
    std::vector<bool> staging;
    Stmt body = root->block->body;
    std::vector<Stmt> tops = body.as<SeqStmt>() ? body.as<SeqStmt>()->seq : std::vector<Stmt>{body};
    for (const Stmt& top : tops) {
      if (!top.is<For>()) continue;
      nests.push_back(first_block(sch, root->block, top.as<For>()));
      staging.push_back(stages_only(sch, root->block, top.as<For>()));
    }
    // Step 2. Vectorize innermost loops first: fusing outer loops does not change them.
    if (vectorize_max > 1) vectorize_innermost(sch, vectorize_max, lanes_);
    for (size_t n = 0; n < nests.size(); ++n) {
      if (nests[n].empty()) continue;
      if (parallel_max > 0) parallelize_outer(sch, nests[n], parallel_max);
      if (stream && !staging[n]) mark_streaming(sch, nests[n]);
      if (unroll < 0) continue;
      mark_unroll(sch, nests[n], staging[n] ? std::min(unroll, kStagingCopyUnrollMaxStep) : unroll);
    }
  }

 private:
  static void vectorize_innermost(schedule::Schedule& sch, int64_t vectorize_max, int64_t lanes) {
    std::vector<std::string> names = sch.index("main").block_names();
    for (const std::string& name : names) {
      const schedule::BlockLocation* loc = sch.index("main").find_block(name);
      if (loc == nullptr || loc->loops.empty() || loc->realize == nullptr) continue;
      const For* inner = loc->loops.back();
      const int64_t* extent = as_const_int(inner->extent);
      if (vectorizes_inside(*loc->block) || inner->kind != ForKind::kSerial || extent == nullptr ||
          *extent < 2 || inner->body.get() != loc->realize || !is_spatial_for_all(inner)) {
        continue;
      }
      int64_t width = *extent;
      if (width > vectorize_max || !legal_vector_extent(width, lanes)) {
        // A longer loop (an element-wise block the tiling rules leave whole) is split: its
        // inner part, the widest legal vector that divides it, is vectorized; with none, one
        // register's lanes, the last step masked (a padded row of 58).
        width = widest_vector(*extent, vectorize_max, lanes);
        if (width < 2 && lanes >= 2 && *extent > lanes && lanes <= vectorize_max) width = lanes;
        if (width < 2) continue;
      }
      RV block = schedule::get_block(sch, name);
      RV loop = schedule::get_loops(sch, block).back();
      if (width != *extent) {
        loop = schedule::split(sch, loop, {schedule::SplitFactor(), schedule::SplitFactor(width)})
                   .back();
      }
      schedule::vectorize(sch, loop);
    }
  }

  // The largest extent at most `vectorize_max` that divides `extent` and makes a legal vector of
  // at least `lanes` lanes; 1 when there is none.
  static int64_t widest_vector(int64_t extent, int64_t vectorize_max, int64_t lanes) {
    for (int64_t width = vectorize_max; width >= std::max<int64_t>(lanes, 2); --width) {
      if (extent % width == 0 && legal_vector_extent(width, lanes)) return width;
    }
    return 1;
  }

  static void parallelize_outer(schedule::Schedule& sch, const std::string& name,
                                int64_t parallel_max) {
    const schedule::BlockLocation* loc = sch.index("main").find_block(name);
    if (loc == nullptr || loc->loops.empty()) return;
    size_t count = 0;
    int64_t product = 1;
    for (size_t l = 0; l < loc->loops.size(); ++l) {
      const For* loop = loc->loops[l];
      const int64_t* extent = as_const_int(loop->extent);
      bool nested = l == 0 || loc->loops[l - 1]->body.get() == loop;
      if (extent == nullptr || loop->kind != ForKind::kSerial || !nested ||
          !is_spatial_for_all(loop)) {
        break;
      }
      if (count > 0 && product * *extent > parallel_max) break;
      product *= *extent;
      ++count;
    }
    if (count == 0 || product < 2) return;
    RV block = schedule::get_block(sch, name);
    std::vector<RV> loops = schedule::get_loops(sch, block);
    RV outer = count == 1
                   ? loops[0]
                   : schedule::fuse(sch, std::vector<RV>(loops.begin(), loops.begin() + count));
    schedule::parallel(sch, outer);
  }

  // The stores of the nest to outputs it does not read go past the caches (the code generator
  // picks them: kiln/tir/nontemporal.h).
  static void mark_streaming(schedule::Schedule& sch, const std::string& name) {
    if (sch.index("main").find_block(name) == nullptr) return;
    RV outer = schedule::get_loops(sch, schedule::get_block(sch, name)).front();
    schedule::annotate(sch, outer, tir::kNontemporalAnnotation, make_const(DataType::int32(), 1));
  }

  static void mark_unroll(schedule::Schedule& sch, const std::string& name, int64_t steps) {
    if (sch.index("main").find_block(name) == nullptr) return;
    RV block = schedule::get_block(sch, name);
    RV outer = schedule::get_loops(sch, block).front();
    if (steps > 0) {
      schedule::annotate(sch, outer, "pragma_auto_unroll_max_step",
                         make_const(DataType::int32(), steps));
      schedule::annotate(sch, outer, "pragma_unroll_explicit", make_const(DataType::int32(), 1));
    }
    // What is unrolled is this decision's (and the register tile's, which multi_level_tiling
    // unrolls): LLVM's own unrolling of the nest would cost most of the build for nothing.
    // What is vectorized is the space's too: LLVM's loop vectorizer would only add masked
    // versions of loops the schedule left scalar on purpose (a guarded padding row). The
    // pragma keeps LLVM from doing either (tir/unroll_loops.h, rule 4).
    schedule::annotate(sch, outer, "pragma_llvm_unroll", make_const(DataType::int32(), 0));
  }

  int64_t lanes_;
};

}  // namespace

std::unique_ptr<Postproc> make_parallel_vectorize_unroll_postproc(const SpaceContext& context) {
  return std::make_unique<ParallelVectorizeUnrollPostproc>(context);
}

}  // namespace kiln::autotune
