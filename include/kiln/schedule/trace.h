// Traces: a schedule as a program. Every primitive, sampling included, appends an Instruction;
// a trace serializes to plain JSON and replays on a fresh schedule of the same function.
//
// JSON form (what Trace::as_json gives and apply_json reads):
//   {"version": 1, "instructions": [
//      {"kind": "get_block", "inputs": [], "attrs": {"name": "C", "func_name": "main"},
//       "outputs": ["b0"]},
//      {"kind": "sample_perfect_tile", "inputs": ["l1"], "attrs": {"n": 2, …},
//       "outputs": ["v3", "v4"], "decision": [8, 16]},
//      {"kind": "split", "inputs": ["l1", ["v3", "v4"]], "attrs": {…}, "outputs": ["l5", "l6"]}]}
// A string in "inputs" is always a handle: "b…" a block, "l…" a loop, "v…" a value; other
// inputs are numbers, null or lists of these. Attributes hold every non-handle argument.
// The kind is the name of the Python method that applies it, so as_python is mechanical.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::schedule {

using Json = nlohmann::json;

enum class RVKind : uint8_t { kBlock, kLoop, kExpr };

// A handle ("random variable") of a schedule: a block, a loop or a value.
struct RV {
  RVKind kind = RVKind::kBlock;
  int64_t id = -1;
  // "b3", "l4", "v5": the name used in traces.
  std::string name() const;
  bool operator==(const RV& other) const { return kind == other.kind && id == other.id; }
};

struct Instruction {
  std::string kind;
  Json inputs = Json::array();  // handles as their names (see the file comment)
  Json attrs = Json::object();
  std::vector<RV> outputs;
  Json decision;  // null unless the instruction samples
};

class Schedule;

class Trace {
 public:
  const std::vector<Instruction>& instructions() const { return instructions_; }
  void append(Instruction instruction) { instructions_.push_back(std::move(instruction)); }

  Json as_json() const;
  // The trace as Python statements that apply it to a schedule called `sch`.
  std::string as_python() const;
  // A copy whose instruction `index` (a sampling instruction) has `decision`.
  Trace with_decision(size_t index, const Json& decision) const;

  // Replays `json` (see the file comment) on `sch`, which must hold the same function. The
  // decisions stored in the JSON are used rather than fresh samples (a null decision is drawn).
  // With `redraw_invalid_decisions`, a decision that no longer fits its instruction (a tile
  // decision of a loop whose extent an earlier, changed decision made different) is drawn anew
  // instead of failing: the tuner replays mutated traces so. A malformed trace or an unknown
  // kind raises a kValue error; a step that fails raises its ScheduleError.
  static void apply_json(const Json& json, Schedule* sch, bool redraw_invalid_decisions = false);
  void apply_to(Schedule* sch) const { apply_json(as_json(), sch); }

 private:
  std::vector<Instruction> instructions_;
};

// How an instruction kind replays: given the schedule, the inputs with handle names already
// replaced by the new schedule's handles (RVs as Json strings "b7"), its attributes and its
// decision, apply the primitive and return its outputs. One entry per primitive, listed in
// schedule/instruction_registry.cc.
using ApplyFn = std::function<std::vector<RV>(Schedule& sch, const Json& inputs, const Json& attrs,
                                              const Json& decision)>;
struct InstructionKind {
  const char* name;
  // The Python keyword of each input; "*name" marks a list passed as positional arguments.
  std::vector<const char*> input_names;
  bool returns_list;  // the Python method returns a list of handles
  ApplyFn apply;
};
const InstructionKind* find_instruction_kind(const std::string& name);

// Helpers for ApplyFn implementations: a handle from its Json name.
RV rv_from_json(const Json& value, const char* instruction);

}  // namespace kiln::schedule
