// Random arguments, reference results and the comparison of the tune worker (see
// worker_check.h and kiln/autotune/runner.h, "Arguments" and "Correctness").
#include "autotune/worker_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <limits>
#include <sstream>

#include "autotune/parallel.h"
#include "kiln/support/error.h"

namespace kiln::autotune::detail {

namespace {

enum class Kind { kFloat, kBFloat, kInt, kUInt, kBool };

struct ElementType {
  Kind kind = Kind::kFloat;
  int bytes = 4;  // of one lane
  int lanes = 1;
};

// splitmix64: a small generator with the same sequence everywhere, unlike std's distributions.
// Each draw steps the state by the same constant, so the n-th draw after a state can be made
// alone (the fill of the arguments is split over threads).
constexpr uint64_t kRandomStep = 0x9e3779b97f4a7c15ull;

uint64_t next_random(uint64_t* state) {
  uint64_t z = (*state += kRandomStep);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double half_to_double(uint16_t bits) {
  int sign = bits >> 15, exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  double value;
  if (exponent == 0) {
    value = std::ldexp(mantissa, -24);
  } else if (exponent == 0x1f) {
    value = mantissa == 0 ? std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::quiet_NaN();
  } else {
    value = std::ldexp(mantissa + 1024, exponent - 25);
  }
  return sign ? -value : value;
}

// float16 nearest to `value` (ties to even); overflow gives infinity.
uint16_t double_to_half(double value) {
  uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  double magnitude = std::fabs(value);
  if (std::isnan(value)) return 0x7e00;
  if (magnitude >= 65520.0) return sign | 0x7c00;  // rounds past the largest half, 65504
  int exponent;
  std::frexp(magnitude, &exponent);  // magnitude = m * 2^exponent, m in [0.5, 1)
  // Units of the last place: 2^(exponent - 11) for normals, 2^-24 below 2^-14.
  int ulp_exponent = std::max(exponent - 11, -24);
  double units = std::nearbyint(std::ldexp(magnitude, -ulp_exponent));  // ties to even
  uint32_t rounded = static_cast<uint32_t>(units);
  if (ulp_exponent == -24) return sign | static_cast<uint16_t>(rounded);  // subnormal (or 2^-14)
  if (rounded == 2048) {  // rounding carried into the next binade
    rounded = 1024;
    ++ulp_exponent;
  }
  uint32_t biased = static_cast<uint32_t>(ulp_exponent + 11 - 1 + 15);
  return sign | static_cast<uint16_t>((biased << 10) | (rounded - 1024));
}

double bfloat16_to_double(uint16_t bits) {
  uint32_t wide = uint32_t{bits} << 16;
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}

uint16_t double_to_bfloat16(double value) {
  float narrow = static_cast<float>(value);
  uint32_t bits;
  std::memcpy(&bits, &narrow, 4);
  if (std::isnan(narrow)) return 0x7fc0;
  bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

ElementType element_type(const KilnArgSpec& arg) {
  ElementType type;
  type.lanes = std::max<int>(arg.dtype.lanes, 1);
  const DLDataType& d = arg.dtype;
  if (d.code == KILN_DL_BOOL || (d.code == kDLUInt && d.bits == 1)) {
    type.kind = Kind::kBool;
    type.bytes = 1;
    return type;
  }
  bool supported = d.bits % 8 == 0 && d.bits > 0 && d.bits <= 64 &&
                   (d.code == kDLInt || d.code == kDLUInt || (d.code == kDLFloat && d.bits >= 16) ||
                    (d.code == kDLBfloat && d.bits == 16));
  user_check(supported) << "tune worker: argument " << arg.name << " has dtype code " << int{d.code}
                        << " bits " << int{d.bits}
                        << ", which the worker cannot fill with random values";
  type.bytes = d.bits / 8;
  type.kind = d.code == kDLInt     ? Kind::kInt
              : d.code == kDLUInt  ? Kind::kUInt
              : d.code == kDLFloat ? Kind::kFloat
                                   : Kind::kBFloat;
  return type;
}

bool is_float(const ElementType& type) {
  return type.kind == Kind::kFloat || type.kind == Kind::kBFloat;
}

// The value of lane element `i` of a buffer, as a double (floats) ...
double float_at(const char* data, const ElementType& type, size_t i) {
  const char* p = data + i * type.bytes;
  if (type.kind == Kind::kBFloat || type.bytes == 2) {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return type.kind == Kind::kBFloat ? bfloat16_to_double(bits) : half_to_double(bits);
  }
  if (type.bytes == 4) {
    float value;
    std::memcpy(&value, p, 4);
    return value;
  }
  double value;
  std::memcpy(&value, p, 8);
  return value;
}

void set_float(char* data, const ElementType& type, size_t i, double value) {
  char* p = data + i * type.bytes;
  if (type.kind == Kind::kBFloat || type.bytes == 2) {
    uint16_t bits = type.kind == Kind::kBFloat ? double_to_bfloat16(value) : double_to_half(value);
    std::memcpy(p, &bits, 2);
  } else if (type.bytes == 4) {
    float narrow = static_cast<float>(value);
    std::memcpy(p, &narrow, 4);
  } else {
    std::memcpy(p, &value, 8);
  }
}

// ... or as a sign-extended (kInt) or zero-extended integer.
int64_t int_at(const char* data, const ElementType& type, size_t i) {
  uint64_t raw = 0;
  std::memcpy(&raw, data + i * type.bytes, type.bytes);  // little-endian: the low bytes
  if (type.kind == Kind::kInt && type.bytes < 8) {
    int shift = 64 - 8 * type.bytes;
    return static_cast<int64_t>(raw << shift) >> shift;
  }
  return static_cast<int64_t>(raw);
}

void set_int(char* data, const ElementType& type, size_t i, int64_t value) {
  std::memcpy(data + i * type.bytes, &value, type.bytes);
}

// Elements [begin, end) of `data` (of `type`), each the next draw after `state` for element 0:
// floats in [-1, 1) (float16 and bfloat16 multiples of 1/64, exact in both), signed integers in
// [-8, 8], unsigned ones in [0, 15], booleans.
void fill_random_range(char* data, const ElementType& type, uint64_t state, size_t begin,
                       size_t end) {
  state += begin * kRandomStep;
  switch (type.kind) {
    case Kind::kFloat:
    case Kind::kBFloat:
      for (size_t i = begin; i < end; ++i) {
        uint64_t r = next_random(&state);
        set_float(data, type, i,
                  type.bytes == 2 ? (static_cast<int>(r % 129) - 64) / 64.0
                                  : static_cast<double>(r >> 11) * 0x1.0p-52 - 1.0);
      }
      break;
    case Kind::kInt:
    case Kind::kUInt:
    case Kind::kBool: {
      auto value_of = [&type](uint64_t r) {
        return type.kind == Kind::kInt    ? static_cast<int64_t>(r % 17) - 8
               : type.kind == Kind::kUInt ? static_cast<int64_t>(r % 16)
                                          : static_cast<int64_t>(r & 1);
      };
      // One loop per element size, so that each store is a plain store, not a memcpy call.
      auto fill = [&](auto zero) {
        using T = decltype(zero);
        T* out = reinterpret_cast<T*>(data);
        for (size_t i = begin; i < end; ++i) out[i] = static_cast<T>(value_of(next_random(&state)));
      };
      if (type.bytes == 1) {
        fill(uint8_t{});
      } else if (type.bytes == 2) {
        fill(uint16_t{});
      } else if (type.bytes == 4) {
        fill(uint32_t{});
      } else if (type.bytes == 8) {
        fill(uint64_t{});
      } else {
        for (size_t i = begin; i < end; ++i) set_int(data, type, i, value_of(next_random(&state)));
      }
      break;
    }
  }
}

// Fills the `elements` of `data` with the random values of fill_random_range, the same whatever
// the number of threads: a large tensor (a uint8 one of 2^31 elements took 20 s on one thread)
// is filled in slices on the cores the worker may use.
void fill_random(char* data, const ElementType& type, size_t elements, uint64_t state) {
  constexpr size_t kSlice = size_t{1} << 22;
  size_t slices = (elements + kSlice - 1) / kSlice;
  parallel_for(slices, available_cores(), [&](size_t k) {
    fill_random_range(data, type, state, k * kSlice, std::min(elements, (k + 1) * kSlice));
  });
}

// The machine epsilon of a float type: the floor of both tolerances is 4 of it.
double epsilon(const ElementType& type) {
  if (type.kind == Kind::kBFloat) return std::ldexp(1.0, -7);
  if (type.bytes == 2) return std::ldexp(1.0, -10);
  if (type.bytes == 4) return std::numeric_limits<float>::epsilon();
  return std::numeric_limits<double>::epsilon();
}

std::string format_number(double value, const ElementType& type) {
  std::ostringstream out;
  out << std::setprecision(type.bytes == 8 ? 17 : 9) << value;
  return out.str();
}

}  // namespace

struct TaskArguments::Tensor {
  std::string name;
  ElementType type;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // elements; empty: compact
  bool written = false;
  size_t elements = 0;  // lane elements the buffer spans
  size_t bytes = 0;
  char* working = nullptr;     // allocation + placement offset (TaskArguments::place)
  char* allocation = nullptr;  // kPlacementSlack bytes longer than the tensor
  size_t alignment = 64;
  std::unique_ptr<char[]> pristine;  // of `bytes`
  DLTensor tensor{};
  size_t value_index = 0;  // in the packed arguments
  // Its mirror in a GPU's memory (place_on_device); data null while in host memory.
  DLTensor device_tensor{};
  // The largest finite magnitude of its expected values (at least 1), which scales the
  // absolute tolerance of a float tensor; computed by the first compare after set_reference
  // (negative before).
  double expected_scale = -1;

  ~Tensor() {
    KilnFreeAligned(allocation);
    if (device_tensor.data != nullptr) {
      KilnDeviceFree(device_tensor.device.device_type, device_tensor.device.device_id,
                     device_tensor.data);
    }
  }

  // "[3, 17]" (and the lane) for a compact tensor, the element offset for a strided one.
  std::string index_text(size_t i) const {
    size_t element = i / type.lanes, lane = i % type.lanes;
    std::ostringstream out;
    if (!strides.empty()) {
      out << "element offset " << element;
    } else {
      std::vector<int64_t> index(shape.size());
      for (size_t d = shape.size(); d-- > 0;) {
        index[d] = static_cast<int64_t>(element % static_cast<size_t>(shape[d]));
        element /= static_cast<size_t>(shape[d]);
      }
      out << "index [";
      for (size_t d = 0; d < index.size(); ++d) out << (d ? ", " : "") << index[d];
      out << "]";
    }
    if (type.lanes > 1) out << " lane " << lane;
    return out.str();
  }
};

TaskArguments::TaskArguments(const KilnFuncSpec& spec, uint64_t seed) {
  uint64_t state = seed;
  for (int32_t a = 0; a < spec.num_args; ++a) {
    const KilnArgSpec& arg = spec.args[a];
    KilnValue value;
    if (arg.kind == kKilnArgScalar) {
      bool floating = arg.dtype.code == kDLFloat || arg.dtype.code == kDLBfloat;
      if (floating) {
        value.v_float64 = 0.5;
      } else {
        value.v_int64 = 1;
      }
      values_.push_back(value);
      codes_.push_back(floating ? kKilnFloat : arg.dtype.code == kDLUInt ? kKilnUInt : kKilnInt);
      continue;
    }
    // Step 1. The layout: shape and strides must be constants (make_task refuses symbolic
    // dimensions), the span covers every element the strides reach.
    auto tensor = std::make_unique<Tensor>();
    tensor->name = arg.name;
    tensor->type = element_type(arg);
    tensor->written = arg.written != 0;
    size_t span = 1;
    bool empty = false;
    for (int32_t d = 0; d < arg.ndim; ++d) {
      user_check(arg.shape[d] >= 0) << "tune worker: argument " << arg.name
                                    << " has a symbolic dimension; tuning needs a concrete shape";
      tensor->shape.push_back(arg.shape[d]);
      empty = empty || arg.shape[d] == 0;
    }
    if (arg.strides != nullptr) {
      for (int32_t d = 0; d < arg.ndim; ++d) {
        user_check(arg.strides[d] >= 0)
            << "tune worker: argument " << arg.name << " has a symbolic or negative stride";
        tensor->strides.push_back(arg.strides[d]);
        span += static_cast<size_t>((arg.shape[d] - 1) * arg.strides[d]);
      }
    } else {
      for (int64_t extent : tensor->shape) span *= static_cast<size_t>(extent);
    }
    if (empty) span = 0;
    tensor->elements = span * tensor->type.lanes;
    tensor->bytes = tensor->elements * tensor->type.bytes;

    // Step 2. The working buffer, aligned as the spec asks (64 bytes at least, as the
    // runtime's own arrays), and the pristine random values.
    size_t alignment = std::max<size_t>(64, static_cast<size_t>(std::max(arg.alignment, 1)));
    tensor->alignment = alignment;
    tensor->allocation =
        static_cast<char*>(KilnAllocAligned(tensor->bytes + kPlacementSlack, alignment));
    tensor->working = tensor->allocation;
    runtime_check(tensor->working != nullptr)
        << "tune worker: cannot allocate " << tensor->bytes << " bytes for argument " << arg.name;
    tensor->pristine.reset(new char[tensor->bytes]);  // not zeroed: the fill writes every byte
    fill_random(tensor->pristine.get(), tensor->type, tensor->elements, state);
    state += tensor->elements * kRandomStep;

    // Step 3. The DLTensor of the working buffer.
    DLTensor& t = tensor->tensor;
    t.data = tensor->working;
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = arg.ndim;
    t.dtype = arg.dtype;
    t.shape = tensor->shape.data();
    t.strides = tensor->strides.empty() ? nullptr : tensor->strides.data();
    t.byte_offset = 0;
    value.v_handle = &t;
    tensor->value_index = values_.size();
    values_.push_back(value);
    codes_.push_back(kKilnDLTensorHandle);
    tensors_.push_back(std::move(tensor));
  }
}

TaskArguments::~TaskArguments() = default;

char* TaskArguments::working(size_t index) {
  internal_check(index < tensors_.size()) << "tune worker: no tensor argument " << index;
  return tensors_[index]->working;
}

void TaskArguments::place_on_device(DLDevice device) {
  internal_check(device_.device_type == kDLCPU) << "tune worker: the arguments are on a device";
  for (auto& t : tensors_) {
    user_check(t->strides.empty())
        << "tune worker: argument " << t->name
        << " has strides; a GPU function is tuned on compact arguments only";
  }
  for (auto& t : tensors_) {
    void* data = nullptr;
    if (KilnDeviceAlloc(device.device_type, device.device_id, t->bytes, 0, &data) != 0) {
      runtime_check(false) << "tune worker: cannot allocate " << t->bytes
                           << " bytes of device memory for argument " << t->name << ": "
                           << KilnGetLastError();
    }
    t->device_tensor = t->tensor;
    t->device_tensor.data = data;
    t->device_tensor.device = device;
    values_[t->value_index].v_handle = &t->device_tensor;
  }
  device_ = device;
  upload(false);
}

void TaskArguments::upload(bool written_only) {
  if (device_.device_type == kDLCPU) return;
  for (auto& t : tensors_) {
    if ((written_only && !t->written) || t->bytes == 0) continue;
    runtime_check(KilnDeviceCopy(&t->tensor, &t->device_tensor) == 0)
        << "tune worker: copying argument " << t->name
        << " to the device failed: " << KilnGetLastError();
  }
}

void TaskArguments::fetch(bool written_only) {
  if (device_.device_type == kDLCPU) return;
  for (auto& t : tensors_) {
    if ((written_only && !t->written) || t->bytes == 0) continue;
    runtime_check(KilnDeviceCopy(&t->device_tensor, &t->tensor) == 0)
        << "tune worker: copying argument " << t->name
        << " from the device failed: " << KilnGetLastError();
  }
}

void TaskArguments::place(uint64_t index) {
  if (device_.device_type == kDLCPU) {
    for (size_t i = 0; i < tensors_.size(); ++i) {
      Tensor& t = *tensors_[i];
      size_t slots = std::max<size_t>(1, kPlacementSlack / t.alignment);
      uint64_t state = index * 0x9E3779B97F4A7C15ull + i;
      size_t slot = index == 0 ? 0 : static_cast<size_t>(next_random(&state) % slots);
      t.working = t.allocation + slot * t.alignment;
      t.tensor.data = t.working;
    }
  }
  restore_all();
}

void TaskArguments::restore_all() {
  for (auto& t : tensors_) std::memcpy(t->working, t->pristine.get(), t->bytes);
  upload(false);
}

void TaskArguments::restore_written() {
  for (auto& t : tensors_) {
    if (t->written) std::memcpy(t->working, t->pristine.get(), t->bytes);
  }
  upload(true);
}

std::string TaskArguments::snapshot_written() {
  fetch(true);
  std::string snapshot;
  for (const auto& t : tensors_) {
    if (t->written) snapshot.append(t->working, t->bytes);
  }
  return snapshot;
}

void TaskArguments::set_reference(const std::string& snapshot) {
  size_t expected = 0;
  for (const auto& t : tensors_) expected += t->written ? t->bytes : 0;
  internal_check(snapshot.size() == expected) << "tune worker: a reference of " << snapshot.size()
                                              << " bytes for arguments of " << expected;
  reference_ = snapshot;
  has_reference_ = true;
  for (auto& t : tensors_) t->expected_scale = -1;  // the expected values changed
}

bool TaskArguments::written_equal(const std::string& snapshot) {
  fetch(true);
  size_t offset = 0;
  for (const auto& t : tensors_) {
    if (!t->written) continue;
    if (offset + t->bytes > snapshot.size() ||
        std::memcmp(t->working, snapshot.data() + offset, t->bytes) != 0) {
      return false;
    }
    offset += t->bytes;
  }
  return offset == snapshot.size();
}

namespace {

// The elements of a float tensor outside the tolerance: how many, the worst one and by how much
// (the ratio of its difference to the allowed one; infinity for a NaN or infinity where the
// expected value has another).
struct FloatScan {
  size_t differ = 0, worst = 0;
  double worst_excess = -1;
};

// `expected(i)` and `found(i)` read element i as a double; a template, so that the common case
// of float32 compiles to a loop over two float arrays (the generic reader converts each element
// through a switch on its type: 35% of a tune worker's time on a 4096 x 4096 LayerNorm).
template <class Read>
FloatScan scan_floats(size_t n, Read expected, Read found, double atol, double rtol) {
  FloatScan scan;
  for (size_t i = 0; i < n; ++i) {
    double e = expected(i), f = found(i);
    // Within the tolerance; NaNs and infinities are judged below (an infinite expected value
    // makes the limit infinite).
    if (std::isfinite(e) && std::fabs(f - e) <= atol + rtol * std::fabs(e)) continue;
    double excess;
    if (std::isnan(e) && std::isnan(f)) continue;
    if (std::isnan(e) || std::isnan(f) || std::isinf(e) || std::isinf(f)) {
      if (e == f) continue;
      excess = std::numeric_limits<double>::infinity();
    } else {
      excess = std::fabs(f - e) / (atol + rtol * std::fabs(e));
    }
    ++scan.differ;
    if (excess > scan.worst_excess) {
      scan.worst_excess = excess;
      scan.worst = i;
    }
  }
  return scan;
}

template <class Read>
double largest_finite_magnitude(size_t n, Read read) {
  double scale = 1;
  for (size_t i = 0; i < n; ++i) {
    double v = read(i);
    if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
  }
  return scale;
}

// A reader of the elements of an array of T (float or double) as doubles.
template <class T>
auto plain_reader(const char* base) {
  return [base](size_t i) {
    T v;
    std::memcpy(&v, base + i * sizeof(T), sizeof(T));
    return static_cast<double>(v);
  };
}

// Calls `body` with readers of the elements of `first` and `second`: plain ones for float32 and
// float64, float_at for the other float types.
template <class Body>
auto with_readers(const char* first, const char* second, const ElementType& type, Body body) {
  if (type.kind == Kind::kFloat && type.bytes == 4) {
    return body(plain_reader<float>(first), plain_reader<float>(second));
  }
  if (type.kind == Kind::kFloat && type.bytes == 8) {
    return body(plain_reader<double>(first), plain_reader<double>(second));
  }
  auto reader = [&type](const char* base) {
    return [base, &type](size_t i) { return float_at(base, type, i); };
  };
  return body(reader(first), reader(second));
}

}  // namespace

std::optional<std::string> TaskArguments::compare(const Tolerance& tolerance, bool written_only) {
  internal_check(has_reference_) << "tune worker: compare before the reference was set";
  fetch(written_only);
  size_t offset = 0;
  for (const auto& t : tensors_) {
    const char* expected = t->written ? reference_.data() + offset : t->pristine.get();
    if (t->written) offset += t->bytes;
    if ((written_only && !t->written) || std::memcmp(t->working, expected, t->bytes) == 0) {
      continue;
    }
    // Step 1. Find the worst element: the largest excess over the tolerance for floats, the
    // largest difference for integers.
    const ElementType& type = t->type;
    size_t differ = 0, worst = 0;
    double worst_excess = -1, allowed = 0;
    double atol = 0, rtol = 0;
    if (is_float(type)) {
      FloatScan scan = with_readers(expected, t->working, type, [&](auto read_e, auto read_f) {
        if (t->expected_scale < 0)
          t->expected_scale = largest_finite_magnitude(t->elements, read_e);
        atol = std::max(tolerance.atol, 4 * epsilon(type)) * t->expected_scale;
        rtol = std::max(tolerance.rtol, 4 * epsilon(type));
        return scan_floats(t->elements, read_e, read_f, atol, rtol);
      });
      differ = scan.differ;
      worst = scan.worst;
    } else {
      for (size_t i = 0; i < t->elements; ++i) {
        int64_t e = int_at(expected, type, i), f = int_at(t->working, type, i);
        if (e == f) continue;
        double excess = type.kind == Kind::kUInt
                            ? std::fabs(static_cast<double>(static_cast<uint64_t>(f)) -
                                        static_cast<double>(static_cast<uint64_t>(e)))
                            : std::fabs(static_cast<double>(f) - static_cast<double>(e));
        ++differ;
        if (excess > worst_excess) {
          worst_excess = excess;
          worst = i;
        }
      }
    }
    if (differ == 0) continue;  // within tolerance everywhere

    // Step 2. The message.
    std::ostringstream out;
    if (t->written) {
      out << "argument " << t->name << " differs from the untuned function's result at ";
    } else {
      out << "argument " << t->name << ", which the function only reads, was changed at ";
    }
    out << t->index_text(worst) << ": expected ";
    if (is_float(type)) {
      double e = float_at(expected, type, worst);
      allowed = atol + rtol * std::fabs(e);
      out << format_number(e, type) << ", found "
          << format_number(float_at(t->working, type, worst), type) << " (allowed difference "
          << format_number(allowed, type) << ")";
    } else if (type.kind == Kind::kUInt) {
      out << static_cast<uint64_t>(int_at(expected, type, worst)) << ", found "
          << static_cast<uint64_t>(int_at(t->working, type, worst));
    } else {
      out << int_at(expected, type, worst) << ", found " << int_at(t->working, type, worst);
    }
    out << "; " << differ << " of " << t->elements << " elements differ";
    return out.str();
  }
  return std::nullopt;
}

void TaskArguments::perturb_one_written() {
  fetch(true);
  for (auto& t : tensors_) {
    if (!t->written || t->elements == 0) continue;
    size_t i = t->elements / 2;
    if (is_float(t->type)) {
      double v = float_at(t->working, t->type, i);
      set_float(t->working, t->type, i, std::isfinite(v) ? v + 1 + 2 * std::fabs(v) : 0.0);
    } else if (t->type.kind == Kind::kBool) {
      set_int(t->working, t->type, i, int_at(t->working, t->type, i) == 0 ? 1 : 0);
    } else {
      set_int(t->working, t->type, i, int_at(t->working, t->type, i) + 1);
    }
    upload(true);
    return;
  }
}

}  // namespace kiln::autotune::detail
