// The bank model of shared memory (see the header): the accesses of one buffer evaluated for the
// threads of a warp, and the cost of a layout counted in wavefronts.
#include "autotune/space/shared_memory_banks.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include "kiln/arith/evaluate.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"

namespace kiln::autotune {

using namespace ir;

namespace {

// Bytes one request of a thread moves at most (ld.shared.v4 of 32-bit elements).
constexpr int kMaxRequestBytes = 16;

struct LoopInfo {
  const Var* var = nullptr;
  int64_t extent = 1;
  ForKind kind = ForKind::kSerial;
  std::string tag;
};

// An access of the buffer where it happens: the loops and block bindings around it.
struct Site {
  std::vector<Expr> indices;  // a ramp's base where the last index is a ramp
  int ramp_lanes = 0;         // the lanes of a last index that is a ramp of stride 1 (0: none)
  std::vector<LoopInfo> loops;
  std::vector<std::pair<const Var*, Expr>> bindings;
  std::vector<std::pair<const Var*, Expr>> lets;
};

class SiteCollector : public IRVisitor {
 public:
  explicit SiteCollector(const Var* data) : data_(data) {}
  std::vector<Site> sites;
  // An index of a vector type that is not a ramp of stride 1 along the last dimension (the model
  // reads scalar indices, and the contiguous rows of ldmatrix-like accesses).
  bool opaque = false;

 protected:
  using IRVisitor::visit;

  void visit(const For* op) override {
    LoopInfo info;
    info.var = op->loop_var.get();
    const int64_t* extent = as_const_int(op->extent);
    info.extent = extent != nullptr ? *extent : 1;
    info.kind = op->kind;
    info.tag = op->thread_tag;
    loops_.push_back(info);
    IRVisitor::visit(op);
    loops_.pop_back();
  }

  void visit(const BlockRealize* op) override {
    size_t before = bindings_.size();
    const Block& block = *op->block;
    for (size_t i = 0; i < block.iter_vars.size() && i < op->iter_values.size(); ++i) {
      bindings_.emplace_back(block.iter_vars[i].var.get(), op->iter_values[i]);
    }
    // The block's own reads and writes regions are summaries; its body holds the accesses.
    if (block.init.defined()) visit_stmt(block.init);
    visit_stmt(block.body);
    bindings_.resize(before);
  }

  void visit(const LetStmt* op) override {
    visit_expr(op->value);
    lets_.emplace_back(op->var.get(), op->value);
    visit_stmt(op->body);
    lets_.pop_back();
  }

  void visit(const BufferLoad* op) override {
    record(op->buffer, op->indices);
    IRVisitor::visit(op);
  }

  void visit(const BufferStore* op) override {
    record(op->buffer, op->indices);
    IRVisitor::visit(op);
  }

 private:
  void record(const Ref<Buffer>& buffer, const std::vector<Expr>& indices) {
    if (buffer->data.get() != data_) return;
    Site site{indices, 0, loops_, bindings_, lets_};
    const auto* ramp = indices.empty() ? nullptr : indices.back().as<Ramp>();
    const int64_t* stride = ramp != nullptr ? as_const_int(ramp->stride) : nullptr;
    if (stride != nullptr && *stride == 1 && ramp->base->dtype.lanes() == 1) {
      site.indices.back() = ramp->base;
      site.ramp_lanes = ramp->lanes;
    }
    for (const Expr& index : site.indices) opaque = opaque || index->dtype.lanes() != 1;
    sites.push_back(std::move(site));
  }

  const Var* data_;
  std::vector<LoopInfo> loops_;
  std::vector<std::pair<const Var*, Expr>> bindings_;
  std::vector<std::pair<const Var*, Expr>> lets_;
};

}  // namespace

double request_wavefronts(const std::vector<int64_t>& elements, int per_thread, int element_bytes) {
  per_thread = std::max(1, per_thread);
  int threads = static_cast<int>(elements.size()) / per_thread;
  int bytes = per_thread * element_bytes;
  int phase =
      bytes <= kSharedBankBytes ? threads : std::max(1, kSharedBanks * kSharedBankBytes / bytes);
  double wavefronts = 0;
  for (int start = 0; start < threads; start += phase) {
    std::map<int64_t, std::set<int64_t>> words_of_bank;
    for (int t = start; t < std::min(threads, start + phase); ++t) {
      for (int e = 0; e < per_thread; ++e) {
        int64_t byte = elements[static_cast<size_t>(t) * per_thread + e] * element_bytes;
        for (int64_t b = byte; b < byte + element_bytes; b += kSharedBankBytes) {
          int64_t word = arith::floor_divide(b, kSharedBankBytes);
          int64_t bank = word - arith::floor_divide(word, kSharedBanks) * kSharedBanks;
          words_of_bank[bank].insert(word);
        }
      }
    }
    size_t most = 1;
    for (const auto& [bank, words] : words_of_bank) most = std::max(most, words.size());
    wavefronts += static_cast<double>(most);
  }
  return wavefronts;
}

// One access evaluated: the index of each thread of the warp at each lane of its vector loop.
struct EvaluatedAccess {
  int lanes = 1;             // the extent of its vectorized loop (1: none)
  double executions = 1;     // per thread: the extents of the loops around it but threads, lanes
  int64_t merge_extent = 0;  // a loop of its thread stepping along its last dimension (0: none)
  // indices[(thread * lanes + lane) * ndim + d]
  std::vector<int64_t> indices;
};

struct SharedBankModel::Impl {
  bool valid = false;
  std::vector<int64_t> shape;
  int element_bytes = 4;
  int threads = 0;  // of the first warp
  std::vector<EvaluatedAccess> accesses;

  int ndim() const { return static_cast<int>(shape.size()); }

  int64_t flat(const EvaluatedAccess& a, int thread, int lane,
               const std::vector<int64_t>& strides) const {
    const int64_t* index = &a.indices[(static_cast<size_t>(thread) * a.lanes + lane) * ndim()];
    int64_t offset = 0;
    for (int d = 0; d < ndim(); ++d) offset += index[d] * strides[d];
    return offset;
  }

  // Elements one request of a thread of `a` moves: its lanes, or with SharedReads::kVector the
  // scalar reads along a row merged into a vector where every thread's first element is
  // aligned to it.
  int request_elements(const EvaluatedAccess& a, const std::vector<int64_t>& strides,
                       SharedReads reads) const {
    int most = std::max(1, kMaxRequestBytes / element_bytes);
    if (a.lanes > 1) return std::min(a.lanes, most);
    if (reads == SharedReads::kScalar) return 1;
    for (int width = most; width > 1; width /= 2) {
      if (a.merge_extent == 0 || a.merge_extent % width != 0) continue;
      bool aligned = true;
      for (int t = 0; t < threads && aligned; ++t) aligned = flat(a, t, 0, strides) % width == 0;
      if (aligned) return width;
    }
    return 1;
  }

  // Wavefronts of the warp's requests that move `elements` lanes from lane `first` (merged
  // scalar reads, of one lane, run on from its element).
  double wavefronts(const EvaluatedAccess& a, int first, int elements,
                    const std::vector<int64_t>& strides) const {
    std::vector<int64_t> moved;
    moved.reserve(static_cast<size_t>(threads) * elements);
    for (int t = 0; t < threads; ++t) {
      for (int e = first; e < first + elements; ++e) {
        int lane = std::min(e, a.lanes - 1);
        moved.push_back(flat(a, t, lane, strides) + (e - lane));
      }
    }
    return request_wavefronts(moved, elements, element_bytes);
  }
};

namespace {

// The extents of the loops around an access that set its number of executions per thread.
bool counts_executions(const LoopInfo& loop) {
  if (loop.kind == ForKind::kVectorized) return false;
  if (loop.kind == ForKind::kThreadBinding) return loop.tag.rfind("vthread", 0) == 0;
  return true;
}

}  // namespace

SharedBankModel::SharedBankModel(const ir::PrimFunc& compacted, const std::string& buffer,
                                 int warp_size)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  // The buffer: allocated by a block, shared, of constant shape.
  struct Finder : IRVisitor {
    std::string name;
    const Buffer* found = nullptr;
    using IRVisitor::visit;
    void visit(const Block* op) override {
      for (const Ref<Buffer>& b : op->alloc_buffers) {
        if (found == nullptr && b->name == name && b->scope == "shared") found = b.get();
      }
      IRVisitor::visit(op);
    }
  } finder;
  finder.name = buffer;
  finder.visit_stmt(compacted.body);
  const Buffer* found = finder.found;
  if (found == nullptr || found->ndim() < 2 || !found->strides.empty()) return;
  for (const Expr& extent : found->shape) {
    const int64_t* value = as_const_int(extent);
    if (value == nullptr || *value <= 0) return;
    m.shape.push_back(*value);
  }
  m.element_bytes = std::max(1, found->dtype.bytes());

  SiteCollector collector(found->data.get());
  collector.visit_stmt(compacted.body);
  if (collector.opaque || collector.sites.empty()) return;

  // The threads of the first warp: per threadIdx axis the largest extent around the accesses.
  std::map<std::string, int64_t> axes;
  for (const Site& site : collector.sites) {
    for (const LoopInfo& loop : site.loops) {
      if (loop.kind == ForKind::kThreadBinding && loop.tag.rfind("threadIdx.", 0) == 0) {
        axes[loop.tag] = std::max(axes[loop.tag], loop.extent);
      }
    }
  }
  int64_t x = axes.count("threadIdx.x") ? axes["threadIdx.x"] : 1;
  int64_t y = axes.count("threadIdx.y") ? axes["threadIdx.y"] : 1;
  int64_t z = axes.count("threadIdx.z") ? axes["threadIdx.z"] : 1;
  m.threads = static_cast<int>(std::min<int64_t>(std::max(1, warp_size), x * y * z));

  for (const Site& site : collector.sites) {
    EvaluatedAccess access;
    const LoopInfo* vector_loop = nullptr;
    for (const LoopInfo& loop : site.loops) {
      if (loop.kind == ForKind::kVectorized) vector_loop = &loop;
      if (counts_executions(loop)) access.executions *= static_cast<double>(loop.extent);
    }
    access.lanes = vector_loop != nullptr ? static_cast<int>(vector_loop->extent) : 1;
    if (site.ramp_lanes > 0) {
      if (vector_loop != nullptr) return;  // a ramp in a vector loop: not read
      access.lanes = site.ramp_lanes;
    }
    // Indices at one point: the threads' values and `lane`, `merge` at 1 when given.
    auto indices_at = [&](int thread, int lane,
                          const Var* merge) -> std::optional<std::vector<int64_t>> {
      std::unordered_map<const Var*, int64_t> values;
      for (const LoopInfo& loop : site.loops) {
        int64_t value = 0;
        if (loop.kind == ForKind::kThreadBinding) {
          if (loop.tag == "threadIdx.x") value = thread % x;
          if (loop.tag == "threadIdx.y") value = thread / x % y;
          if (loop.tag == "threadIdx.z") value = thread / (x * y) % z;
        } else if (&loop == vector_loop) {
          value = lane;
        } else if (loop.var == merge) {
          value = 1;
        }
        values[loop.var] = value;
      }
      for (const auto& [var, value] : site.lets) {
        std::optional<int64_t> v = arith::evaluate_int(value, values);
        if (!v) return std::nullopt;
        values[var] = *v;
      }
      for (const auto& [var, value] : site.bindings) {
        std::optional<int64_t> v = arith::evaluate_int(value, values);
        if (!v) return std::nullopt;
        values[var] = *v;
      }
      std::vector<int64_t> out;
      for (const Expr& index : site.indices) {
        std::optional<int64_t> v = arith::evaluate_int(index, values);
        if (!v) return std::nullopt;
        out.push_back(*v);
      }
      return out;
    };
    for (int t = 0; t < m.threads; ++t) {
      for (int lane = 0; lane < access.lanes; ++lane) {
        std::optional<std::vector<int64_t>> index = indices_at(t, lane, nullptr);
        if (!index || static_cast<int>(index->size()) != m.ndim()) return;
        if (site.ramp_lanes > 0) index->back() += lane;
        access.indices.insert(access.indices.end(), index->begin(), index->end());
      }
    }
    // A scalar access in a loop of its thread that steps along its last dimension: the
    // innermost.
    if (vector_loop == nullptr && site.ramp_lanes == 0) {
      std::vector<int64_t> base(access.indices.begin(), access.indices.begin() + m.ndim());
      for (size_t l = site.loops.size(); l-- > 0;) {
        const LoopInfo& loop = site.loops[l];
        bool own = loop.kind == ForKind::kSerial || loop.kind == ForKind::kUnrolled;
        if (loop.extent < 2 || !own) continue;
        std::optional<std::vector<int64_t>> next = indices_at(0, 0, loop.var);
        if (!next) return;
        std::vector<int64_t> step(m.ndim());
        for (int d = 0; d < m.ndim(); ++d) step[d] = (*next)[d] - base[d];
        bool along_row = step.back() == 1 && std::all_of(step.begin(), step.end() - 1,
                                                         [](int64_t s) { return s == 0; });
        if (along_row) {
          access.merge_extent = loop.extent;
          break;
        }
      }
    }
    m.accesses.push_back(std::move(access));
  }
  m.valid = true;
}

SharedBankModel::~SharedBankModel() = default;

bool SharedBankModel::valid() const {
  return impl_->valid;
}

const std::vector<int64_t>& SharedBankModel::shape() const {
  return impl_->shape;
}

std::vector<int64_t> SharedBankModel::strides(const std::optional<SharedPadding>& padding) const {
  const std::vector<int64_t>& shape = impl_->shape;
  std::vector<int64_t> out(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 0;) {
    if (d + 1 < shape.size()) out[d] = out[d + 1] * shape[d + 1];
    if (padding && static_cast<int64_t>(d) == padding->axis) out[d] += padding->pad;
  }
  return out;
}

SharedCost SharedBankModel::cost(const std::vector<int64_t>& strides, SharedReads reads) const {
  const Impl& m = *impl_;
  SharedCost total;
  if (!m.valid) return total;
  for (const EvaluatedAccess& a : m.accesses) {
    int elements = m.request_elements(a, strides, reads);
    // Requests of one execution of the access (a merged request covers `elements` executions).
    double executions = a.lanes > 1 ? a.executions : a.executions / elements;
    int span = a.lanes > 1 ? a.lanes : elements;
    for (int first = 0; first < span; first += elements) {
      int count = std::min(elements, span - first);
      total.wavefronts += executions * m.wavefronts(a, first, count, strides);
      total.requests += executions;
    }
  }
  return total;
}

std::optional<SharedPadding> SharedBankModel::best_padding(SharedReads reads) const {
  const Impl& m = *impl_;
  if (!m.valid) return std::nullopt;
  // A row of banks, in elements; paddings keep each vector access's alignment.
  int64_t factor = std::max<int64_t>(1, kSharedBanks * kSharedBankBytes / m.element_bytes);
  int64_t step = 1;
  for (const EvaluatedAccess& a : m.accesses) step = std::lcm(step, int64_t{a.lanes});
  if (reads == SharedReads::kVector) {
    step = std::lcm(step, std::max<int64_t>(1, kMaxRequestBytes / m.element_bytes));
  }
  // Fewest wavefronts, then fewest requests, then fewest padding elements (the compact layout
  // none); costs within a rounding error are equal.
  auto before = [](const SharedCost& a, int64_t a_elements, const SharedCost& b,
                   int64_t b_elements) {
    constexpr double kTie = 1e-9;
    if (std::abs(a.wavefronts - b.wavefronts) > kTie) return a.wavefronts < b.wavefronts;
    if (std::abs(a.requests - b.requests) > kTie) return a.requests < b.requests;
    return a_elements < b_elements;
  };
  std::vector<int64_t> compact_strides = strides();
  std::optional<SharedPadding> best;
  SharedCost best_cost = cost(compact_strides, reads);
  int64_t best_elements = 0;
  int64_t rows = 1;  // of the dimensions up to the padded one
  for (int64_t axis = 0; axis + 1 < m.ndim(); ++axis) {
    rows *= m.shape[axis];
    for (int64_t pad = step; pad < factor; pad += step) {
      SharedPadding padding;
      padding.axis = axis;
      padding.factor = factor;
      padding.pad = pad;
      padding.offset = (compact_strides[axis] + pad) % factor;
      SharedCost c = cost(strides(padding), reads);
      if (before(c, rows * pad, best_cost, best_elements)) {
        best = padding;
        best_cost = c;
        best_elements = rows * pad;
      }
    }
  }
  return best;
}

}  // namespace kiln::autotune
