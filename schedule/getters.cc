// Getters: get_block, get_loops, get_child_blocks, get_producers, get_consumers.
#include "kiln/schedule/getters.h"

#include <algorithm>

#include "instruction_registry.h"
#include "kiln/ir/functor.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

std::vector<RV> block_rvs(Schedule& sch, const std::string& func_name,
                          const std::vector<const Block*>& blocks) {
  std::vector<RV> rvs;
  for (const Block* b : blocks) rvs.push_back(sch.new_block_rv(func_name, b->name));
  return rvs;
}

// The blocks of `index` whose scope is `scope`, in program order.
std::vector<const Block*> blocks_in_scope(const FunctionIndex& index, const Block* scope) {
  std::vector<const Block*> out;
  for (const std::string& name : index.block_names()) {
    const BlockLocation* loc = index.find_block(name);
    if (loc->scope == scope) out.push_back(loc->block);
  }
  return out;
}

bool touches_any(const std::vector<BufferRegion>& regions, const std::vector<BufferRegion>& other) {
  for (const BufferRegion& a : regions) {
    for (const BufferRegion& b : other) {
      if (a.buffer.same_as(b.buffer)) return true;
    }
  }
  return false;
}

// Collects the blocks directly under a statement, without entering them.
class ChildBlockCollector : public IRVisitor {
 public:
  std::vector<const Block*> blocks;

 protected:
  using IRVisitor::visit;
  void visit(const BlockRealize* op) override { blocks.push_back(op->block.get()); }
};

}  // namespace

RV get_block(Schedule& sch, const std::string& name, const std::string& func_name) {
  // Step 1. Find the function and the block.
  user_check(sch.mod()->functions.count(func_name) > 0)
      << "get_block: the module has no function named '" << func_name << "'";
  const FunctionIndex& index = sch.index(func_name);
  if (index.find_block(name) == nullptr) {
    std::string names;
    for (const std::string& n : index.block_names()) names += (names.empty() ? "" : ", ") + n;
    schedule_error(
        "BlockNotFoundError", "get_block",
        "function '" + func_name + "' has no block named '" + name + "'; its blocks are: " + names);
  }
  // Step 2. Make the handle and record.
  RV rv = sch.new_block_rv(func_name, name);
  sch.record(Instruction{
      "get_block", Json::array(), {{"name", name}, {"func_name", func_name}}, {rv}, Json()});
  return rv;
}

std::vector<RV> get_loops(Schedule& sch, const RV& block) {
  const BlockLocation& loc = sch.block(block, "get_loops");
  std::string func_name = sch.func_name(block);
  std::vector<RV> loops;
  for (const For* f : loc.loops) loops.push_back(sch.new_loop_rv(func_name, f->loop_var));
  sch.record(Instruction{"get_loops", Json::array({block.name()}), Json::object(), loops, Json()});
  return loops;
}

std::vector<RV> get_child_blocks(Schedule& sch, const RV& block_or_loop) {
  ChildBlockCollector collector;
  if (block_or_loop.kind == RVKind::kLoop) {
    collector.visit_stmt(Stmt(sch.loop(block_or_loop, "get_child_blocks").loop->body));
  } else {
    const Block* block = sch.block(block_or_loop, "get_child_blocks").block;
    collector.visit_stmt(block->init);
    collector.visit_stmt(block->body);
  }
  std::vector<RV> out = block_rvs(sch, sch.func_name(block_or_loop), collector.blocks);
  sch.record(Instruction{"get_child_blocks", Json::array({block_or_loop.name()}), Json::object(),
                         out, Json()});
  return out;
}

namespace {

std::vector<RV> related_blocks(Schedule& sch, const RV& block, bool producers) {
  const char* primitive = producers ? "get_producers" : "get_consumers";
  const BlockLocation& loc = sch.block(block, primitive);
  std::string func_name = sch.func_name(block);
  std::vector<const Block*> related;
  for (const Block* other : blocks_in_scope(sch.index(func_name), loc.scope)) {
    if (other == loc.block) continue;
    bool hit = producers ? touches_any(other->writes, loc.block->reads)
                         : touches_any(loc.block->writes, other->reads);
    if (hit) related.push_back(other);
  }
  std::vector<RV> out = block_rvs(sch, func_name, related);
  sch.record(Instruction{primitive, Json::array({block.name()}), Json::object(), out, Json()});
  return out;
}

}  // namespace

std::vector<RV> get_producers(Schedule& sch, const RV& block) {
  return related_blocks(sch, block, true);
}

std::vector<RV> get_consumers(Schedule& sch, const RV& block) {
  return related_blocks(sch, block, false);
}

void register_getter_instructions(std::vector<InstructionKind>* kinds) {
  kinds->push_back(
      {"get_block", {}, false, [](Schedule& sch, const Json&, const Json& attrs, const Json&) {
         return std::vector<RV>{get_block(sch, attrs.at("name").get<std::string>(),
                                          attrs.at("func_name").get<std::string>())};
       }});
  kinds->push_back(
      {"get_loops", {"block"}, true, [](Schedule& sch, const Json& in, const Json&, const Json&) {
         return get_loops(sch, rv_from_json(in.at(0), "get_loops"));
       }});
  kinds->push_back({"get_child_blocks",
                    {"block_or_loop"},
                    true,
                    [](Schedule& sch, const Json& in, const Json&, const Json&) {
                      return get_child_blocks(sch, rv_from_json(in.at(0), "get_child_blocks"));
                    }});
  kinds->push_back({"get_producers",
                    {"block"},
                    true,
                    [](Schedule& sch, const Json& in, const Json&, const Json&) {
                      return get_producers(sch, rv_from_json(in.at(0), "get_producers"));
                    }});
  kinds->push_back({"get_consumers",
                    {"block"},
                    true,
                    [](Schedule& sch, const Json& in, const Json&, const Json&) {
                      return get_consumers(sch, rv_from_json(in.at(0), "get_consumers"));
                    }});
}

}  // namespace kiln::schedule
