// The compiled form that the reference interpreter runs. A PrimFunc is translated once into a
// tree of ExprCode / StmtCode objects that mirror the IR, with every variable resolved to an
// integer slot of a Frame and every buffer to a storage index, so that running the tree
// allocates nothing per node.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/ir/dtype.h"
#include "value.h"

namespace kiln::interpreter {

// The memory that a data variable (the `data` of one or more buffers) refers to while it is
// bound: a function argument or an allocation.
struct Storage {
  uint8_t* data = nullptr;
  int64_t bytes = 0;
};

// The mutable state of one run: the lanes of every variable, and the storage of every data
// variable. Slots and storage indices are assigned by the Compiler.
struct Frame {
  std::vector<Lane> slots;
  std::vector<Storage> storages;
};

// A compiled expression.
class ExprCode {
 public:
  explicit ExprCode(ir::DataType dtype) : dtype_(dtype) {}
  ExprCode(const ExprCode&) = delete;
  ExprCode& operator=(const ExprCode&) = delete;
  virtual ~ExprCode() = default;

  // Computes the value and returns its lanes. The pointer stays valid until this node is
  // evaluated again; a parent reads it before evaluating anything that could do so.
  virtual const Lane* eval(Frame& frame) = 0;

  ir::DataType dtype() const { return dtype_; }
  int lanes() const { return dtype_.lanes(); }
  // The slot of a node that only reads a variable, else -1: hot paths (buffer indices, block
  // bindings) read such a slot directly instead of calling eval.
  virtual int var_slot() const { return -1; }

 private:
  ir::DataType dtype_;
};
using ExprCodePtr = std::unique_ptr<ExprCode>;

// An expression whose value lives in lanes that the node owns, sized once when compiled.
class ResultCode : public ExprCode {
 protected:
  explicit ResultCode(ir::DataType dtype) : ExprCode(dtype), out_(dtype.lanes()) {}
  Lane* out() { return out_.data(); }

 private:
  std::vector<Lane> out_;
};

// A compiled statement.
class StmtCode {
 public:
  StmtCode() = default;
  StmtCode(const StmtCode&) = delete;
  StmtCode& operator=(const StmtCode&) = delete;
  virtual ~StmtCode() = default;
  virtual void exec(Frame& frame) = 0;
};
using StmtCodePtr = std::unique_ptr<StmtCode>;

}  // namespace kiln::interpreter
