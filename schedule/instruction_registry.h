// The registration function of each primitive family, called once by instruction_registry.cc.
// A family's .cc appends one InstructionKind per primitive it defines.
#pragma once

#include <vector>

#include "kiln/schedule/trace.h"

namespace kiln::schedule {

void register_getter_instructions(std::vector<InstructionKind>* kinds);
void register_sampling_instructions(std::vector<InstructionKind>* kinds);
void register_loop_transformation_instructions(std::vector<InstructionKind>* kinds);
void register_for_kind_instructions(std::vector<InstructionKind>* kinds);
void register_annotation_instructions(std::vector<InstructionKind>* kinds);
void register_compute_at_instructions(std::vector<InstructionKind>* kinds);
void register_compute_inline_instructions(std::vector<InstructionKind>* kinds);
void register_cache_read_write_instructions(std::vector<InstructionKind>* kinds);
void register_buffer_scope_instructions(std::vector<InstructionKind>* kinds);
void register_layout_transformation_instructions(std::vector<InstructionKind>* kinds);
void register_reduction_instructions(std::vector<InstructionKind>* kinds);
void register_blockize_tensorize_instructions(std::vector<InstructionKind>* kinds);

}  // namespace kiln::schedule
