// Every instruction kind a trace may contain, gathered from the primitive families.
#include "instruction_registry.h"

#include <mutex>

namespace kiln::schedule {

namespace {

const std::vector<InstructionKind>& all_kinds() {
  static const std::vector<InstructionKind> kinds = [] {
    std::vector<InstructionKind> k;
    register_getter_instructions(&k);
    register_sampling_instructions(&k);
    register_loop_transformation_instructions(&k);
    register_for_kind_instructions(&k);
    register_annotation_instructions(&k);
    register_compute_at_instructions(&k);
    register_compute_inline_instructions(&k);
    register_cache_read_write_instructions(&k);
    register_buffer_scope_instructions(&k);
    register_layout_transformation_instructions(&k);
    register_reduction_instructions(&k);
    register_blockize_tensorize_instructions(&k);
    return k;
  }();
  return kinds;
}

}  // namespace

const InstructionKind* find_instruction_kind(const std::string& name) {
  for (const InstructionKind& kind : all_kinds()) {
    if (name == kind.name) return &kind;
  }
  return nullptr;
}

}  // namespace kiln::schedule
