// Annotations of blocks and loops: annotate, unannotate.
#include "kiln/schedule/annotation.h"

#include "instruction_registry.h"
#include "kiln/ir/op.h"
#include "schedule_util.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

Json value_json(const Expr& value) {
  if (const auto* s = value.as<StringImm>()) return s->value;
  if (const auto* i = value.as<IntImm>()) {
    if (value->dtype.is_bool()) return Json(i->value != 0);
    return Json(i->value);
  }
  if (const auto* f = value.as<FloatImm>()) return Json(f->value);
  return Json();
}

Expr value_from_json(const Json& value) {
  if (value.is_string()) return make<StringImm>(value.get<std::string>());
  if (value.is_boolean()) return bool_const(value.get<bool>());
  if (value.is_number_integer()) {
    int64_t v = value.get<int64_t>();
    return make_const(v == static_cast<int32_t>(v) ? DataType::int32() : DataType::int64(), v);
  }
  if (value.is_number()) return make_const(DataType::float64(), value.get<double>());
  user_error(ErrorKind::kValue) << "trace: annotation value " << value.dump()
                                << " is not an int, float, bool or string";
}

// Applies `edit` to the annotations of the block or loop and installs the result.
template <class Edit>
void edit_annotations(Schedule& sch, const RV& rv, const char* primitive, Edit edit) {
  const std::string& func_name = sch.func_name(rv);
  Ref<PrimFunc> func = sch.func(func_name);
  Stmt old_stmt, new_stmt;
  if (rv.kind == RVKind::kLoop) {
    const For* loop = sch.loop(rv, primitive).loop;
    auto n = copy(loop);
    edit(&n->annotations, loop);
    old_stmt = Stmt(loop);
    new_stmt = n;
  } else {
    const Block* block = sch.block(rv, primitive).block;
    auto n = copy(block);
    edit(&n->annotations, block);
    old_stmt = Stmt(block);
    new_stmt = n;
  }
  sch.replace(func_name, with_body(func, replace_stmt(func->body, old_stmt.get(), new_stmt)),
              primitive);
}

}  // namespace

void annotate(Schedule& sch, const RV& block_or_loop, const std::string& key, const Expr& value) {
  const char* primitive = "annotate";
  Json json = value_json(value);
  if (json.is_null()) {
    schedule_error(
        "InvalidAnnotationError", primitive,
        "the value of annotation '" + key + "' must be a constant int, float, bool or string");
  }
  edit_annotations(sch, block_or_loop, primitive,
                   [&](Attrs* attrs, const Node*) { (*attrs)[key] = value; });
  sch.record(Instruction{primitive,
                         Json::array({block_or_loop.name()}),
                         {{"ann_key", key}, {"ann_val", json}},
                         {},
                         Json()});
}

void annotate(Schedule& sch, const RV& block_or_loop, const std::string& key, const RV& value) {
  const char* primitive = "annotate";
  Expr constant = sch.expr(value, primitive);
  if (value_json(constant).is_null()) {
    schedule_error("InvalidAnnotationError", primitive,
                   "the value of annotation '" + key + "' (" + value.name() +
                       ") must be a constant int, float, bool or string");
  }
  edit_annotations(sch, block_or_loop, primitive,
                   [&](Attrs* attrs, const Node*) { (*attrs)[key] = constant; });
  // The value is recorded as its handle: a trace that changes the decision behind it changes
  // the annotation too.
  sch.record(Instruction{primitive,
                         Json::array({block_or_loop.name(), value.name()}),
                         {{"ann_key", key}},
                         {},
                         Json()});
}

void unannotate(Schedule& sch, const RV& block_or_loop, const std::string& key) {
  const char* primitive = "unannotate";
  const std::string& func_name = sch.func_name(block_or_loop);
  edit_annotations(sch, block_or_loop, primitive, [&](Attrs* attrs, const Node* node) {
    if (attrs->erase(key) == 0) {
      schedule_error("AnnotationNotFoundError", primitive,
                     "there is no annotation '" + key + "' to remove", sch.func(func_name), node);
    }
  });
  sch.record(
      Instruction{primitive, Json::array({block_or_loop.name()}), {{"ann_key", key}}, {}, Json()});
}

void register_annotation_instructions(std::vector<InstructionKind>* kinds) {
  kinds->push_back({"annotate",
                    {"block_or_loop", "ann_val"},
                    false,
                    [](Schedule& sch, const Json& in, const Json& attrs, const Json&) {
                      RV target = rv_from_json(in.at(0), "annotate");
                      std::string key = attrs.at("ann_key").get<std::string>();
                      if (in.size() > 1) {
                        annotate(sch, target, key, rv_from_json(in.at(1), "annotate"));
                      } else {
                        annotate(sch, target, key, value_from_json(attrs.at("ann_val")));
                      }
                      return std::vector<RV>{};
                    }});
  kinds->push_back({"unannotate",
                    {"block_or_loop"},
                    false,
                    [](Schedule& sch, const Json& in, const Json& attrs, const Json&) {
                      unannotate(sch, rv_from_json(in.at(0), "unannotate"),
                                 attrs.at("ann_key").get<std::string>());
                      return std::vector<RV>{};
                    }});
}

}  // namespace kiln::schedule
