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

// Who last wrote and read one unit (an element of the allocation's dtype) of a "shared"
// allocation, and in which barrier epoch of its block (GPU semantics only). A thread is its
// linear index in the block; kSeveralReaders stands for two or more readers.
struct SharedAccess {
  static constexpr int64_t kSeveralReaders = -2;
  int64_t writer = -1;
  int64_t reader = -1;
  int64_t write_epoch = -1;
  int64_t read_epoch = -1;
};

// The access record of a "shared" allocation: one entry per unit of 2^unit_shift bytes.
struct SharedShadow {
  int unit_shift = 0;
  std::vector<SharedAccess> units;
};

// The memory that a data variable (the `data` of one or more buffers) refers to while it is
// bound: a function argument or an allocation. `shadow` is set for "shared" allocations run with
// GPU semantics: every access is then checked for a missing barrier (buffer_code.cc).
struct Storage {
  uint8_t* data = nullptr;
  int64_t bytes = 0;
  SharedShadow* shadow = nullptr;
};

// The six GPU thread tags, in this order, index GpuThread::index and GpuBlock::extent.
enum GpuTag { kBlockIdxX, kBlockIdxY, kBlockIdxZ, kThreadIdxX, kThreadIdxY, kThreadIdxZ };

// One thread block of a grid while it runs (gpu_code.cc).
struct GpuBlock {
  int64_t serial = 0;      // counts the blocks of the run: per-block allocations compare it
  int64_t epoch = 0;       // the span since the block's last barrier, unique in the run
  int64_t extent[6] = {};  // the launch extent of each tag
};

// One GPU thread of the running block.
struct GpuThread {
  int64_t index[6] = {};  // its block's and its own index along each tag
  int64_t linear = 0;     // threadIdx.x + threadIdx.y * x extent + threadIdx.z * x * y extents
  GpuBlock* block = nullptr;
  const void* barrier = nullptr;  // the barrier it waits at, while suspended
};

// The mutable state of one run: the lanes of every variable, and the storage of every data
// variable. Slots and storage indices are assigned by the Compiler. With GPU semantics each
// thread of a block runs on a Frame of its own: `thread` says which, and `states` holds where
// it stands in the statements it is suspended in (the resumable nodes of gpu_code.cc).
struct Frame {
  std::vector<Lane> slots;
  std::vector<Storage> storages;
  std::vector<int64_t> states;
  GpuThread* thread = nullptr;  // null outside a GPU loop nest
  int64_t blocks_started = 0;   // GPU thread blocks run so far (a GpuBlock's serial)
  int64_t epochs_started = 0;   // barrier epochs of all blocks so far (a GpuBlock's epoch)
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
  // Runs the statement for one GPU thread up to its next barrier: returns false when the thread
  // stopped at a barrier (a later call goes on from there), true when the statement finished.
  // Statements that contain no barrier run to the end.
  virtual bool run(Frame& frame) {
    exec(frame);
    return true;
  }
};
using StmtCodePtr = std::unique_ptr<StmtCode>;

}  // namespace kiln::interpreter
