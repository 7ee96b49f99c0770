// Serialization of IR to JSON text and back: any node (an expression, a statement, a buffer, a
// PrimFunc, an IRModule) becomes a self-contained document that a later run or another process
// loads into an equal tree. The tuning database stores functions this way and worker processes
// receive them this way, so the contract is:
//
//   structural_equal(load_json(save_json(x)), x) and the same structural_hash, in any process.
//
// Format, version 1. One JSON object with four fields:
//
//   {"kiln_ir_format": 1,
//    "vars": [{"name": "n", "dtype": "int32", "size_var": true}, ...],
//    "buffers": [{"name": "A", "data": 1, "dtype": "float32",
//                 "shape": [{"kind": "Var", "var": 0}, {"kind": "IntImm", ...}],
//                 "strides": [], "elem_offset": {...}, "scope": "global",
//                 "data_alignment": 0, "offset_factor": 1}, ...],
//    "root": {"kind": "PrimFunc", "params": [1, 2], "buffer_map": [[1, 0], [2, 1]],
//             "attrs": [["global_symbol", {"kind": "StringImm", ...}]], "body": {...}}}
//
//  * Variables and buffers are objects whose identity matters, so each is written once, in the
//    "vars" or "buffers" table, and referred to by its index there: a Var used in five places
//    is one object after loading, and a buffer named by loads, stores and the buffer_map is one
//    Buffer. In expression position a variable is {"kind": "Var", "var": index}; a field that
//    holds a variable (a loop variable, a parameter) or a buffer holds the index alone. A buffer
//    may refer only to buffers before it in the table (its shape could load from one), which
//    rules out cycles.
//  * Every other node is an object with "kind" (the name of its kind in node.h, never the
//    enum's number, so reordering the kind lists changes nothing) and one field per field of the
//    C++ struct, under the same name (For.kind, the loop kind, is "for_kind": "kind" is taken);
//    expressions also carry "dtype". Enumerations are written by name: builtins as in
//    builtin.h ("exp", "if_then_else"), loop kinds as for_kind_name ("serial", "unroll"),
//    iterator types as iter_type_name ("spatial", "reduce").
//  * Ranges are [min, extent]; iterators {"var": index, "dom": [min, extent], "type": "reduce"};
//    regions {"buffer": index, "region": [[min, extent], ...]}; attribute maps, buffer maps and
//    a module's functions are arrays of pairs, [[key, value], ...]. Null is written only where
//    the IR allows it: IfThenElse.else_case, Block.init, Buffer.elem_offset, Reduce.condition.
//  * dtypes are strings ("float32x8", "bool", "handle", "void").
//  * Integers are exact (int64; a uint64 constant is written unsigned). Floats are written with
//    the shortest decimal text that reads back to the same double, always with a '.' or an
//    exponent; inf, -inf and nan, which JSON lacks, are the strings "inf", "-inf" and "nan",
//    and a NaN other than the default quiet NaN is "nan(0x...)" with its 64 bits.
//  * Strings that are valid UTF-8 are JSON strings; any other bytes are {"hex": "ff00..."}.
//
// The loader checks what it reads and raises a kValue error that names the place in the
// document as a path (`$.root.body.seq[1].value.a`) and says what was expected and found: for
// text that is not JSON, a document of another version or without one, an unknown kind, a
// missing, extra or mistyped field, a node of the wrong family (a statement where an expression
// belongs), an index past its table, a call of the wrong arity, an access whose number of
// indices differs from its buffer's dimensions, a BlockRealize that binds another number of
// iterators than its block has, a constant outside its dtype, a name given twice in a map, and
// nesting deeper than kMaxSerializedDepth nodes. It does not check types or scopes beyond
// that; kiln::tir::verify_ir does.
//
// Tested by tests/cpp/ir/serialize_test.cc (every node kind, exact values, sharing, errors, a
// fuzzer of the loader) and tests/python/test_serialize.py (the test corpora before and after
// scheduling and lowering, across processes, pickle, a build of a loaded function).
#pragma once

#include <string>

#include "kiln/ir/function.h"

namespace kiln::ir {

// The version written in "kiln_ir_format"; the loader reads this version only.
constexpr int kSerializedFormatVersion = 1;

// Trees nested deeper than this many nodes are refused by both directions, so that loading
// (which recurses, about half a kilobyte of stack per level) cannot exhaust a thread's stack on
// a crafted document. Real functions nest a few dozen levels.
constexpr int kMaxSerializedDepth = 4096;

// `node` (any kind) as a JSON document (see the file comment). Null becomes a document whose
// root is null. Throws a kValue error when the tree cannot be written faithfully: a null where
// the IR requires a node, a dtype with no text form, a buffer that refers to itself, or nesting
// deeper than kMaxSerializedDepth.
std::string save_json(const Ref<Node>& node);

// The tree a document of save_json holds, with fresh variables and buffers shared as in the
// saved tree. Throws a kValue error naming what is wrong and where (see the file comment).
Ref<Node> load_json(const std::string& text);

// load_json for a document whose root must be a PrimFunc / an IRModule; a document holding
// another kind is a kType error naming the kind it holds.
Ref<PrimFunc> load_prim_func(const std::string& text);
Ref<IRModule> load_module(const std::string& text);

}  // namespace kiln::ir
