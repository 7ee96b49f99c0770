// Buffer loads, stores and allocations. Every access computes the element offset from the
// buffer's strides (compact row-major when it has none) and elem_offset, and checks it against
// the extent of the storage behind the buffer's data variable: out of bounds is an error, never
// a silent read. Buffers that share a data variable share that storage, whatever their dtype.
// With GPU semantics, accesses to "shared" allocations are also checked for a missing barrier.
#include <sstream>

#include "compiler.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"

namespace kiln::interpreter {

using namespace kiln::ir;

namespace {

int log2_of(int bytes) {
  int shift = 0;
  while ((1 << shift) < bytes) ++shift;
  internal_check((1 << shift) == bytes) << "tir.interpret: element size " << bytes;
  return shift;
}

// The strides of `buffer` in elements, as expressions: its own, or the compact row-major ones.
std::vector<Expr> strides_of(const Buffer& buffer) {
  if (!buffer.strides.empty()) return buffer.strides;
  std::vector<Expr> strides(buffer.shape.size());
  Expr stride = make_const(DataType::int64(), int64_t{1});
  for (size_t k = buffer.shape.size(); k-- > 0;) {
    strides[k] = stride;
    stride = mul(stride, cast(DataType::int64(), buffer.shape[k]));
  }
  return strides;
}

// An integer expression that is a constant at compile time, or its compiled code.
struct IntOperand {
  int64_t constant = 0;
  ExprCodePtr code;  // null when constant

  int64_t eval(Frame& frame) const { return code ? code->eval(frame)[0].i : constant; }
};

IntOperand compile_operand(Compiler& compiler, const Expr& e) {
  IntOperand op;
  if (const int64_t* c = as_const_int(e)) {
    op.constant = *c;
  } else {
    op.code = compiler.expr(e);
  }
  return op;
}

// The address computation and bounds check of one load or store.
class BufferAccess {
 public:
  BufferAccess(Compiler& compiler, const Ref<Buffer>& buffer, const std::vector<Expr>& indices,
               int lanes, bool is_store)
      : buffer_(buffer),
        storage_(compiler.storage_of(*buffer)),
        kind_(elem_kind(buffer->dtype)),
        shift_(log2_of(buffer->dtype.element_of().bytes())),
        lanes_(lanes),
        is_store_(is_store),
        offsets_(lanes) {
    internal_check(indices.size() == buffer->shape.size())
        << "tir.interpret: " << indices.size() << " indices for the " << buffer->shape.size()
        << "-d buffer " << buffer->name;
    for (const Expr& index : indices) {
      type_check(index->dtype.is_integer())
          << "tir.interpret: buffer " << buffer->name << " is indexed by " << to_script(index)
          << " of dtype " << index->dtype << "; expected an integer index";
      indices_.push_back(compiler.expr(index));
    }
    for (const Expr& stride : strides_of(*buffer))
      strides_.push_back(compile_operand(compiler, stride));
    if (buffer->elem_offset.defined())
      elem_offset_ = compile_operand(compiler, buffer->elem_offset);
    for (size_t k = 0; k < indices_.size(); ++k) {
      terms_.push_back({indices_[k]->var_slot(), indices_[k].get(), strides_[k].constant,
                        strides_[k].code.get()});
    }
  }

  // The storage's memory, with the checked element offset of each lane in `offsets()`; with a
  // `mask` (a boolean per lane), only the lanes where it holds are checked and recorded.
  uint8_t* locate(Frame& frame, const Lane* mask = nullptr) {
    int64_t base = elem_offset_.eval(frame);
    if (lanes_ == 1) {
      int64_t offset = base;
      for (const Term& term : terms_) {
        int64_t index = term.slot >= 0 ? frame.slots[term.slot].i : term.index->eval(frame)[0].i;
        int64_t stride = term.stride_code ? term.stride_code->eval(frame)[0].i : term.stride;
        offset += index * stride;
      }
      offsets_[0] = offset;
    } else {
      for (int i = 0; i < lanes_; ++i) offsets_[i] = base;
      for (size_t k = 0; k < indices_.size(); ++k) {
        const Lane* index = indices_[k]->eval(frame);
        int64_t stride = strides_[k].eval(frame);
        bool is_vector = indices_[k]->lanes() > 1;
        for (int i = 0; i < lanes_; ++i) offsets_[i] += index[is_vector ? i : 0].i * stride;
      }
    }
    const Storage& storage = frame.storages[storage_];
    uint64_t extent = static_cast<uint64_t>(storage.bytes >> shift_);
    for (int i = 0; i < lanes_; ++i) {
      if (mask != nullptr && mask[i].i == 0) continue;
      if (static_cast<uint64_t>(offsets_[i]) >= extent) raise_out_of_bounds(frame, i, extent);
    }
    if (storage.shadow != nullptr && frame.thread != nullptr) {
      record_shared_access(frame, *storage.shadow, mask);
    }
    return storage.data;
  }

  const int64_t* offsets() const { return offsets_.data(); }
  ElemKind kind() const { return kind_; }
  int shift() const { return shift_; }

 private:
  // Checks an access of the running GPU thread to a "shared" allocation against the threads
  // that wrote or read the same units since the block's last barrier, then records it. Another
  // thread's write before a read or a write, and another thread's read before a write, need a
  // barrier between them.
  void record_shared_access(Frame& frame, SharedShadow& shadow, const Lane* mask) {
    const GpuThread& thread = *frame.thread;
    int64_t me = thread.linear;
    int64_t epoch = thread.block->epoch;
    for (int i = 0; i < lanes_; ++i) {
      if (mask != nullptr && mask[i].i == 0) continue;
      int64_t first = (offsets_[i] << shift_) >> shadow.unit_shift;
      int64_t last = (((offsets_[i] + 1) << shift_) - 1) >> shadow.unit_shift;
      for (int64_t u = first; u <= last; ++u) {
        SharedAccess& access = shadow.units[u];
        if (access.write_epoch == epoch && access.writer != me) {
          raise_missing_barrier(frame, i, "wrote", access.writer);
        }
        if (is_store_) {
          if (access.read_epoch == epoch && access.reader != me) {
            raise_missing_barrier(frame, i, "read", access.reader);
          }
          access.writer = me;
          access.write_epoch = epoch;
        } else if (access.read_epoch != epoch) {
          access.reader = me;
          access.read_epoch = epoch;
        } else if (access.reader != me) {
          access.reader = SharedAccess::kSeveralReaders;
        }
      }
    }
  }

  [[noreturn]] void raise_missing_barrier(Frame& frame, int lane, const char* did, int64_t other) {
    const GpuThread& thread = *frame.thread;
    std::string who = other == SharedAccess::kSeveralReaders
                          ? std::string("other threads")
                          : "thread " + thread_text(*thread.block, other);
    user_error(ErrorKind::kRuntime)
        << "tir.interpret: thread " << thread_text(*thread.block, thread.linear) << " of block "
        << block_text(thread) << (is_store_ ? " writes " : " reads ") << buffer_->name
        << index_text(frame, lane) << ", which " << who << " " << did
        << " since the last barrier: a storage_sync is missing between them";
  }

  // The indices of `lane` of this access, as "[i, j]".
  std::string index_text(Frame& frame, int lane) {
    std::ostringstream index;
    index << "[";
    for (size_t k = 0; k < indices_.size(); ++k) {
      const Lane* value = indices_[k]->eval(frame);
      index << (k > 0 ? ", " : "") << value[indices_[k]->lanes() > 1 ? lane : 0].i;
    }
    index << "]";
    return index.str();
  }

  [[noreturn]] void raise_out_of_bounds(Frame& frame, int lane, uint64_t extent) {
    user_error(ErrorKind::kIndex) << "tir.interpret: out-of-bounds "
                                  << (is_store_ ? "store to" : "load from") << " buffer "
                                  << buffer_->name << ": index " << index_text(frame, lane)
                                  << (lanes_ > 1 ? " (lane " + std::to_string(lane) + ")"
                                                 : std::string())
                                  << " is element " << offsets_[lane]
                                  << " of its storage, which has " << extent << " element"
                                  << (extent == 1 ? "" : "s");
  }

  Ref<Buffer> buffer_;
  int storage_;
  ElemKind kind_;
  int shift_;
  int lanes_;
  bool is_store_;
  std::vector<ExprCodePtr> indices_;
  std::vector<IntOperand> strides_;
  IntOperand elem_offset_;
  // index * stride for each dimension, flattened for the scalar path.
  struct Term {
    int slot;  // >= 0: the index is this variable
    ExprCode* index;
    int64_t stride;
    ExprCode* stride_code;  // null: `stride` is constant
  };
  std::vector<Term> terms_;
  std::vector<int64_t> offsets_;
};

class LoadCode final : public ResultCode {
 public:
  LoadCode(DataType dtype, BufferAccess access) : ResultCode(dtype), access_(std::move(access)) {}
  const Lane* eval(Frame& frame) override {
    uint8_t* data = access_.locate(frame);
    const int64_t* offsets = access_.offsets();
    Lane* out = this->out();
    for (int i = 0; i < lanes(); ++i) {
      out[i] = read_element(access_.kind(), data + (offsets[i] << access_.shift()));
    }
    return out;
  }

 private:
  BufferAccess access_;
};

// A load of the lanes where a mask holds (the then-arm of an if_then_else whose condition varies
// across lanes); the other lanes are 0.
class MaskedLoadCode final : public ResultCode {
 public:
  MaskedLoadCode(DataType dtype, BufferAccess access, const std::vector<Lane>* mask)
      : ResultCode(dtype), access_(std::move(access)), mask_(mask) {}
  const Lane* eval(Frame& frame) override {
    const Lane* mask = mask_->data();
    uint8_t* data = access_.locate(frame, mask);
    const int64_t* offsets = access_.offsets();
    Lane* out = this->out();
    for (int i = 0; i < lanes(); ++i) {
      out[i] = mask[i].i == 0
                   ? Lane{0}
                   : read_element(access_.kind(), data + (offsets[i] << access_.shift()));
    }
    return out;
  }

 private:
  BufferAccess access_;
  const std::vector<Lane>* mask_;
};

class StoreCode final : public StmtCode {
 public:
  StoreCode(ExprCodePtr value, BufferAccess access)
      : value_(std::move(value)), access_(std::move(access)) {}
  void exec(Frame& frame) override {
    const Lane* value = value_->eval(frame);
    uint8_t* data = access_.locate(frame);
    const int64_t* offsets = access_.offsets();
    for (int i = 0; i < value_->lanes(); ++i) {
      write_element(access_.kind(), value[i], data + (offsets[i] << access_.shift()));
    }
  }

 private:
  ExprCodePtr value_;
  BufferAccess access_;
};

class MaskedStoreCode final : public StmtCode {
 public:
  MaskedStoreCode(ExprCodePtr mask, ExprCodePtr value, BufferAccess access)
      : mask_(std::move(mask)), value_(std::move(value)), access_(std::move(access)) {}
  void exec(Frame& frame) override {
    const Lane* mask = mask_->eval(frame);
    int lanes = value_->lanes();
    held_.assign(mask, mask + lanes);  // the value's evaluation may reuse the mask's storage
    const Lane* value = value_->eval(frame);
    uint8_t* data = access_.locate(frame, held_.data());
    const int64_t* offsets = access_.offsets();
    for (int i = 0; i < lanes; ++i) {
      if (held_[i].i == 0) continue;
      write_element(access_.kind(), value[i], data + (offsets[i] << access_.shift()));
    }
  }

 private:
  ExprCodePtr mask_, value_;
  BufferAccess access_;
  std::vector<Lane> held_;
};

int index_lanes(const std::vector<Expr>& indices) {
  int lanes = 1;
  for (const Expr& index : indices) lanes = std::max(lanes, index->dtype.lanes());
  return lanes;
}

}  // namespace

ExprCodePtr compile_load(Compiler& compiler, const BufferLoad& load) {
  type_check(load.dtype.element_of() == load.buffer->dtype)
      << "tir.interpret: the load " << to_script(Expr(&load)) << " has dtype " << load.dtype
      << ", but buffer " << load.buffer->name << " holds " << load.buffer->dtype;
  BufferAccess access(compiler, load.buffer, load.indices, load.dtype.lanes(), false);
  return std::make_unique<LoadCode>(load.dtype, std::move(access));
}

ExprCodePtr compile_masked_load(Compiler& compiler, const BufferLoad& load,
                                const std::vector<Lane>* mask) {
  type_check(load.dtype.element_of() == load.buffer->dtype &&
             load.dtype.lanes() == static_cast<int>(mask->size()))
      << "tir.interpret: the masked load " << to_script(Expr(&load)) << " has dtype " << load.dtype
      << "; expected " << load.buffer->dtype.with_lanes(static_cast<int>(mask->size()))
      << " (buffer " << load.buffer->name << "'s dtype with the lanes of the condition)";
  BufferAccess access(compiler, load.buffer, load.indices, load.dtype.lanes(), false);
  return std::make_unique<MaskedLoadCode>(load.dtype, std::move(access), mask);
}

StmtCodePtr compile_store(Compiler& compiler, const BufferStore& store) {
  DataType t = store.value->dtype;
  type_check(t.element_of() == store.buffer->dtype && t.lanes() == index_lanes(store.indices))
      << "tir.interpret: a store to buffer " << store.buffer->name << " expects a value of dtype "
      << store.buffer->dtype.with_lanes(index_lanes(store.indices))
      << " (the buffer's dtype with the lanes of the index), found " << to_script(store.value)
      << " of dtype " << t;
  ExprCodePtr value = compiler.expr(store.value);
  BufferAccess access(compiler, store.buffer, store.indices, t.lanes(), true);
  compiler.mark_written(compiler.storage_of(*store.buffer));
  return std::make_unique<StoreCode>(std::move(value), std::move(access));
}

StmtCodePtr compile_masked_store(Compiler& compiler, const BufferStore& store, const Expr& mask) {
  DataType t = store.value->dtype;
  type_check(t.element_of() == store.buffer->dtype && t.lanes() == index_lanes(store.indices) &&
             mask->dtype.lanes() == t.lanes() && (mask->dtype.is_bool() || mask->dtype.is_int()))
      << "tir.interpret: a store to buffer " << store.buffer->name << " under the condition "
      << to_script(mask) << " expects a value of dtype "
      << store.buffer->dtype.with_lanes(index_lanes(store.indices))
      << " and a boolean condition of as many lanes, found " << to_script(store.value)
      << " of dtype " << t << " and a condition of dtype " << mask->dtype;
  ExprCodePtr mask_code = compiler.expr(mask);
  ExprCodePtr value = compiler.expr(store.value);
  BufferAccess access(compiler, store.buffer, store.indices, t.lanes(), true);
  compiler.mark_written(compiler.storage_of(*store.buffer));
  return std::make_unique<MaskedStoreCode>(std::move(mask_code), std::move(value),
                                           std::move(access));
}

// ---------------------------------------------------------------------------------------------
// Allocation

AllocationCode::AllocationCode(Compiler& compiler, const Ref<Buffer>& buffer)
    : buffer_(buffer),
      placement_(!compiler.in_grid()                     ? Placement::kRun
                 : buffer->scope.rfind("shared", 0) == 0 ? Placement::kBlock
                                                         : Placement::kThread),
      // A "shared" buffer allocated outside the grids of a function run with GPU semantics
      // (scheduled TensorIR allocates it in the root block) is checked as well.
      track_(buffer->scope.rfind("shared", 0) == 0 && (compiler.gpu || compiler.in_grid())) {
  type_check(!buffer->dtype.is_handle() && buffer->dtype.is_scalar())
      << "tir.interpret: cannot allocate buffer " << buffer->name << " of dtype " << buffer->dtype
      << "; expected a scalar number or bool dtype";
  // The extent in elements: compact, or the span that the strides reach, plus the offset.
  std::vector<Expr> strides = strides_of(*buffer);
  Expr span = make_const(DataType::int64(), int64_t{1});
  Expr empty = bool_const(false);
  for (size_t k = 0; k < buffer->shape.size(); ++k) {
    Expr extent = cast(DataType::int64(), buffer->shape[k]);
    span = add(span, mul(sub(extent, make_const(DataType::int64(), int64_t{1})),
                         cast(DataType::int64(), strides[k])));
    empty = logical_or(empty, le(extent, make_const(DataType::int64(), int64_t{0})));
  }
  Expr elements = select(empty, make_const(DataType::int64(), int64_t{0}), span);
  if (buffer->elem_offset.defined()) {
    elements = add(elements, cast(DataType::int64(), buffer->elem_offset));
  }
  elements_ = compiler.expr(elements);
  storage_ = compiler.bind_storage(buffer->data.get());
}

void AllocationCode::end_scope(Compiler& compiler) {
  compiler.unbind_storage(buffer_->data.get());
}

Storage AllocationCode::allocate(Frame& frame, std::vector<uint64_t>* memory) {
  int64_t elements = elements_->eval(frame)[0].i;
  int64_t size = buffer_->dtype.bytes();
  user_check(elements >= 0 && elements <= (int64_t{1} << 40) / size)
      << "tir.interpret: buffer " << buffer_->name << " needs " << elements << " elements of "
      << size << " bytes; the interpreter allocates at most 2^40 bytes";
  int64_t bytes = elements * size;
  memory->resize(static_cast<size_t>((bytes + 7) / 8));
  uint8_t* data = reinterpret_cast<uint8_t*>(memory->data());
  fill_garbage(buffer_->dtype, data, bytes);
  return Storage{data, bytes};
}

SharedShadow* AllocationCode::reset_shadow(const Storage& storage) {
  shadow_.unit_shift = log2_of(buffer_->dtype.bytes());
  shadow_.units.assign(static_cast<size_t>(storage.bytes >> shadow_.unit_shift), SharedAccess());
  return &shadow_;
}

void AllocationCode::enter(Frame& frame) {
  switch (placement_) {
    case Placement::kRun:
      saved_ = frame.storages[storage_];
      frame.storages[storage_] = allocate(frame, &memory_);
      if (track_) frame.storages[storage_].shadow = reset_shadow(frame.storages[storage_]);
      return;
    case Placement::kBlock: {
      // The first thread of a block to come here allocates; the others share its memory.
      const GpuThread& thread = *frame.thread;
      if (block_serial_ != thread.block->serial) {
        block_serial_ = thread.block->serial;
        block_storage_ = allocate(frame, &memory_);
        block_storage_.shadow = reset_shadow(block_storage_);
      }
      if (thread_saved_.size() <= static_cast<size_t>(thread.linear)) {
        thread_saved_.resize(thread.linear + 1);
      }
      thread_saved_[thread.linear] = frame.storages[storage_];
      frame.storages[storage_] = block_storage_;
      return;
    }
    case Placement::kThread: {
      const GpuThread& thread = *frame.thread;
      if (thread_memory_.size() <= static_cast<size_t>(thread.linear)) {
        thread_memory_.resize(thread.linear + 1);
        thread_saved_.resize(thread.linear + 1);
      }
      thread_saved_[thread.linear] = frame.storages[storage_];
      frame.storages[storage_] = allocate(frame, &thread_memory_[thread.linear]);
      return;
    }
  }
}

void AllocationCode::exit(Frame& frame) {
  frame.storages[storage_] =
      placement_ == Placement::kRun ? saved_ : thread_saved_[frame.thread->linear];
}

}  // namespace kiln::interpreter
