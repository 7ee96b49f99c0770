// Loop kinds: parallel, vectorize, unroll, bind.
#include "kiln/schedule/for_kind.h"

#include <set>

#include "instruction_registry.h"
#include "kiln/ir/functor.h"
#include "schedule_util.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// Throws when a block under `loop` binds a non-spatial iterator with the loop variable.
void check_spatial_bindings(Schedule& sch, const RV& loop_rv, const For* loop,
                            const char* primitive, const std::string& why) {
  const Var* v = loop->loop_var.get();
  auto is_loop_var = [v](const Var* x) { return x == v; };
  // Walk every BlockRealize under the loop, nested ones included.
  std::vector<const BlockRealize*> pending = child_block_realizes(loop->body);
  while (!pending.empty()) {
    const BlockRealize* realize = pending.back();
    pending.pop_back();
    const Block* block = realize->block.get();
    for (size_t k = 0; k < block->iter_vars.size(); ++k) {
      const IterVar& iv = block->iter_vars[k];
      if (iv.type != IterType::kDataPar && uses_var(realize->iter_values[k], is_loop_var)) {
        schedule_error("WrongBlockIterTypeError", primitive,
                       "loop '" + v->name + "' binds iterator '" + iv.var->name + "' of block '" +
                           block->name + "', which is a " + iter_type_name(iv.type) +
                           " iterator; " + why,
                       sch.func(sch.func_name(loop_rv)), realize);
      }
    }
    for (const BlockRealize* inner : child_block_realizes(block->body)) pending.push_back(inner);
  }
}

void set_kind(Schedule& sch, const RV& loop_rv, ForKind kind, const std::string& thread_tag,
              const char* primitive) {
  const LoopLocation& loc = sch.loop(loop_rv, primitive);
  const std::string& func_name = sch.func_name(loop_rv);
  Ref<PrimFunc> func = sch.func(func_name);
  auto loop = copy(loc.loop);
  loop->kind = kind;
  loop->thread_tag = thread_tag;
  sch.replace(func_name, with_body(func, replace_stmt(func->body, loc.loop, loop)), primitive);
}

}  // namespace

void parallel(Schedule& sch, const RV& loop) {
  const For* f = sch.loop(loop, "parallel").loop;
  check_spatial_bindings(sch, loop, f, "parallel",
                         "iterations of a reduction cannot run in parallel (rfactor it first)");
  set_kind(sch, loop, ForKind::kParallel, "", "parallel");
  sch.record(Instruction{"parallel", Json::array({loop.name()}), Json::object(), {}, Json()});
}

void vectorize(Schedule& sch, const RV& loop) {
  const For* f = sch.loop(loop, "vectorize").loop;
  check_spatial_bindings(sch, loop, f, "vectorize",
                         "iterations of a reduction cannot become vector lanes (rfactor it first)");
  set_kind(sch, loop, ForKind::kVectorized, "", "vectorize");
  sch.record(Instruction{"vectorize", Json::array({loop.name()}), Json::object(), {}, Json()});
}

void unroll(Schedule& sch, const RV& loop) {
  set_kind(sch, loop, ForKind::kUnrolled, "", "unroll");
  sch.record(Instruction{"unroll", Json::array({loop.name()}), Json::object(), {}, Json()});
}

void bind_loop(Schedule& sch, const RV& loop, const std::string& thread_axis) {
  static const std::set<std::string> kAxes = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                              "threadIdx.x", "threadIdx.y", "threadIdx.z",
                                              "vthread.x",   "vthread.y",   "vthread.z"};
  const For* f = sch.loop(loop, "bind").loop;
  if (kAxes.count(thread_axis) == 0) {
    schedule_error("InvalidThreadTagError", "bind",
                   "'" + thread_axis +
                       "' is not a thread axis; expected blockIdx.x/y/z, threadIdx.x/y/z or "
                       "vthread.x/y/z",
                   sch.func(sch.func_name(loop)), f);
  }
  if (thread_axis.rfind("threadIdx", 0) != 0) {
    check_spatial_bindings(sch, loop, f, "bind",
                           "only threadIdx axes may bind a reduction (a cross-thread reduction)");
  }
  set_kind(sch, loop, ForKind::kThreadBinding, thread_axis, "bind");
  sch.record(
      Instruction{"bind", Json::array({loop.name()}), {{"thread_axis", thread_axis}}, {}, Json()});
}

void register_for_kind_instructions(std::vector<InstructionKind>* kinds) {
  kinds->push_back(
      {"parallel", {"loop"}, false, [](Schedule& sch, const Json& in, const Json&, const Json&) {
         parallel(sch, rv_from_json(in.at(0), "parallel"));
         return std::vector<RV>{};
       }});
  kinds->push_back(
      {"vectorize", {"loop"}, false, [](Schedule& sch, const Json& in, const Json&, const Json&) {
         vectorize(sch, rv_from_json(in.at(0), "vectorize"));
         return std::vector<RV>{};
       }});
  kinds->push_back(
      {"unroll", {"loop"}, false, [](Schedule& sch, const Json& in, const Json&, const Json&) {
         unroll(sch, rv_from_json(in.at(0), "unroll"));
         return std::vector<RV>{};
       }});
  kinds->push_back(
      {"bind", {"loop"}, false, [](Schedule& sch, const Json& in, const Json& attrs, const Json&) {
         bind_loop(sch, rv_from_json(in.at(0), "bind"), attrs.at("thread_axis").get<std::string>());
         return std::vector<RV>{};
       }});
}

}  // namespace kiln::schedule
