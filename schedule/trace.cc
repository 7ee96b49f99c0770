// Traces: JSON serialization, replay on a fresh schedule, and printing as Python.
#include "kiln/schedule/trace.h"

#include <sstream>
#include <unordered_map>

#include "kiln/schedule/schedule.h"
#include "kiln/support/error.h"

namespace kiln::schedule {

std::string RV::name() const {
  const char* prefix = kind == RVKind::kBlock ? "b" : kind == RVKind::kLoop ? "l" : "v";
  return prefix + std::to_string(id);
}

RV rv_from_json(const Json& value, const char* instruction) {
  user_check(value.is_string() && value.get<std::string>().size() >= 2)
      << "trace: instruction " << instruction << " expected a handle name such as \"b0\", found "
      << value.dump();
  const std::string text = value.get<std::string>();
  RV rv;
  switch (text[0]) {
    case 'b':
      rv.kind = RVKind::kBlock;
      break;
    case 'l':
      rv.kind = RVKind::kLoop;
      break;
    case 'v':
      rv.kind = RVKind::kExpr;
      break;
    default:
      user_error(ErrorKind::kValue) << "trace: instruction " << instruction << ": '" << text
                                    << "' is not a handle name (b…, l… or v…)";
  }
  try {
    size_t used = 0;
    rv.id = std::stoll(text.substr(1), &used);
    user_check(used == text.size() - 1) << "";
  } catch (const std::exception&) {
    user_error(ErrorKind::kValue) << "trace: instruction " << instruction << ": '" << text
                                  << "' is not a handle name (b…, l… or v…)";
  }
  return rv;
}

Json Trace::as_json() const {
  Json instructions = Json::array();
  for (const Instruction& inst : instructions_) {
    Json outputs = Json::array();
    for (const RV& rv : inst.outputs) outputs.push_back(rv.name());
    Json entry = {
        {"kind", inst.kind}, {"inputs", inst.inputs}, {"attrs", inst.attrs}, {"outputs", outputs}};
    if (!inst.decision.is_null()) entry["decision"] = inst.decision;
    instructions.push_back(std::move(entry));
  }
  return Json{{"version", 1}, {"instructions", std::move(instructions)}};
}

Trace Trace::with_decision(size_t index, const Json& decision) const {
  index_check(index < instructions_.size())
      << "Trace.with_decision: instruction index " << index << " is out of range for a trace of "
      << instructions_.size() << " instructions";
  user_check(!instructions_[index].decision.is_null())
      << "Trace.with_decision: instruction " << index << " (" << instructions_[index].kind
      << ") does not sample, so it has no decision to replace";
  Trace result = *this;
  result.instructions_[index].decision = decision;
  return result;
}

namespace {

// Replaces every handle name in `value` through `names`.
Json rename_handles(const Json& value, const std::unordered_map<std::string, std::string>& names,
                    const std::string& kind) {
  if (value.is_string()) {
    auto it = names.find(value.get<std::string>());
    user_check(it != names.end()) << "trace: instruction " << kind << " uses handle "
                                  << value.dump() << ", which no earlier instruction defined";
    return it->second;
  }
  if (value.is_array()) {
    Json out = Json::array();
    for (const Json& item : value) out.push_back(rename_handles(item, names, kind));
    return out;
  }
  return value;
}

// Python source of a JSON value with handle names left bare.
std::string python_value(const Json& value, bool handles) {
  if (value.is_null()) return "None";
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  if (value.is_string()) return handles ? value.get<std::string>() : value.dump();
  if (value.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < value.size(); ++i) {
      out += (i ? ", " : "") + python_value(value[i], handles);
    }
    return out + "]";
  }
  if (value.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [key, item] : value.items()) {
      out += (first ? "" : ", ") + Json(key).dump() + ": " + python_value(item, false);
      first = false;
    }
    return out + "}";
  }
  return value.dump();
}

}  // namespace

void Trace::apply_json(const Json& json, Schedule* sch, bool redraw_invalid_decisions) {
  user_check(json.is_object() && json.contains("instructions") && json["instructions"].is_array())
      << "Trace.apply_json_to_schedule: expected an object with a list \"instructions\", found "
      << json.dump().substr(0, 200);
  std::unordered_map<std::string, std::string> names;
  for (const Json& entry : json["instructions"]) {
    user_check(entry.is_object() && entry.contains("kind") && entry["kind"].is_string())
        << "Trace.apply_json_to_schedule: an instruction without a \"kind\": "
        << entry.dump().substr(0, 200);
    const std::string kind = entry["kind"].get<std::string>();
    const InstructionKind* info = find_instruction_kind(kind);
    user_check(info != nullptr) << "Trace.apply_json_to_schedule: unknown instruction kind '"
                                << kind << "'";
    Json inputs = rename_handles(entry.value("inputs", Json::array()), names, kind);
    Json attrs = entry.value("attrs", Json::object());
    Json decision = entry.value("decision", Json());
    std::vector<RV> outputs;
    try {
      try {
        outputs = info->apply(*sch, inputs, attrs, decision);
      } catch (const ScheduleError& e) {
        // A decision that no longer fits (an extent an earlier decision changed) is drawn anew.
        if (!redraw_invalid_decisions || decision.is_null() ||
            e.error_class() != "InvalidDecisionError") {
          throw;
        }
        outputs = info->apply(*sch, inputs, attrs, Json());
      }
    } catch (const Json::exception& e) {
      user_error(ErrorKind::kValue)
          << "Trace.apply_json_to_schedule: malformed instruction " << kind << ": " << e.what();
    }
    Json old_outputs = entry.value("outputs", Json::array());
    user_check(old_outputs.is_array() && old_outputs.size() == outputs.size())
        << "Trace.apply_json_to_schedule: instruction " << kind << " lists " << old_outputs.size()
        << " outputs but produced " << outputs.size();
    for (size_t i = 0; i < outputs.size(); ++i) {
      user_check(old_outputs[i].is_string()) << "Trace.apply_json_to_schedule: output " << i
                                             << " of " << kind << " is not a handle name";
      names[old_outputs[i].get<std::string>()] = outputs[i].name();
    }
  }
}

std::string Trace::as_python() const {
  std::ostringstream out;
  for (const Instruction& inst : instructions_) {
    const InstructionKind* info = find_instruction_kind(inst.kind);
    internal_check(info != nullptr) << "trace: no instruction kind '" << inst.kind << "'";
    std::string lhs;
    for (size_t i = 0; i < inst.outputs.size(); ++i) {
      lhs += (i ? ", " : "") + inst.outputs[i].name();
    }
    if (info->returns_list && inst.outputs.size() == 1) lhs = "(" + lhs + ",)";
    if (!lhs.empty()) out << lhs << " = ";
    out << "sch." << inst.kind << "(";
    bool first = true;
    for (size_t i = 0; i < inst.inputs.size() && i < info->input_names.size(); ++i) {
      const char* name = info->input_names[i];
      if (name[0] == '*') {
        // A variadic input (fuse(*loops)) is printed as positional arguments.
        for (const Json& item : inst.inputs[i]) {
          out << (first ? "" : ", ") << python_value(item, true);
          first = false;
        }
        continue;
      }
      out << (first ? "" : ", ") << name << "=" << python_value(inst.inputs[i], true);
      first = false;
    }
    for (const auto& [key, value] : inst.attrs.items()) {
      out << (first ? "" : ", ") << key << "=" << python_value(value, false);
      first = false;
    }
    if (!inst.decision.is_null()) {
      out << (first ? "" : ", ") << "decision=" << python_value(inst.decision, false);
    }
    out << ")\n";
  }
  return out.str();
}

}  // namespace kiln::schedule
