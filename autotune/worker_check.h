// The arguments of a task's function inside the tune worker and the correctness check: random
// values made once per task from the seed, the working copies that every call receives (in
// host memory, or mirrored in a GPU's memory for a GPU target), the reference results of the
// untuned function, and the element-wise comparison of a candidate's results with them (the
// rule is written in kiln/autotune/runner.h, "Correctness").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/runtime/c_runtime_api.h"

namespace kiln::autotune::detail {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-3;
};

class TaskArguments {
 public:
  // Allocates one working and one pristine buffer per tensor parameter of `spec` (the untuned
  // function's) and fills the pristine ones from `seed`. Raises a kValue error for a parameter
  // the worker cannot make: a symbolic dimension or stride, a dtype of fewer than 8 bits (bool
  // aside).
  TaskArguments(const KilnFuncSpec& spec, uint64_t seed);
  ~TaskArguments();
  TaskArguments(const TaskArguments&) = delete;
  TaskArguments& operator=(const TaskArguments&) = delete;

  // The packed arguments of a call, pointing at the working buffers.
  const KilnValue* values() const { return values_.data(); }
  const int32_t* type_codes() const { return codes_.data(); }
  int32_t count() const { return static_cast<int32_t>(values_.size()); }

  // The working buffer of the `index`-th tensor parameter (tests write results into it).
  char* working(size_t index);

  // Gives every tensor a buffer of its size on `device` (a GPU) and points the packed
  // arguments there: from then on the restores copy the pristine values into the device's
  // buffers, and what reads results (snapshot_written, written_equal, compare,
  // perturb_one_written) copies them back first. Raises a kValue error for a strided tensor
  // (device copies are compact) and a kRuntime error with the driver's message when memory
  // cannot be allocated or copied (so may the restores and the reads afterwards).
  void place_on_device(DLDevice device);
  // Where the working buffers live: kDLCPU, or the device of place_on_device.
  DLDevice device() const { return device_; }

  // Moves every working buffer in host memory to the `index`-th placement and restores all of
  // them (restore_all). A buffer lies at an offset of its allocation between 0 and
  // kPlacementSlack, a multiple of its alignment (64 bytes at least), that a hash of `index`
  // and the tensor's position picks: so the tensors' placements relative to each other, within
  // a page, change from one index to the next, as those of a caller's arrays may. Index 0 puts
  // every buffer at offset 0. Arguments on a device are only restored.
  void place(uint64_t index);
  static constexpr size_t kPlacementSlack = 4096;

  // Copies the pristine values into every working buffer, or into those the function writes.
  void restore_all();
  void restore_written();

  // The working buffers that the function writes, concatenated: after a call of the untuned
  // function, the reference. set_reference takes such a snapshot back (a kInternal error for
  // one of another size).
  std::string snapshot_written();
  void set_reference(const std::string& snapshot);
  // Whether the written working buffers hold exactly `snapshot`'s bytes.
  bool written_equal(const std::string& snapshot);

  // Compares the working buffers with the expected state: the reference for the written
  // arguments, the pristine values for the others (skipped with `written_only`). Returns
  // nothing when they agree, else the message naming the worst element.
  std::optional<std::string> compare(const Tolerance& tolerance, bool written_only);

  // Changes one element of the first written argument well past any tolerance: the
  // "wrong_result" test hook.
  void perturb_one_written();

 private:
  struct Tensor;
  // Copies the working buffers to the device (restore) or back (fetch): all of them, or those
  // the function writes. Nothing in host memory.
  void upload(bool written_only);
  void fetch(bool written_only);

  std::vector<std::unique_ptr<Tensor>> tensors_;  // tensor parameters, in order
  std::vector<KilnValue> values_;
  std::vector<int32_t> codes_;
  std::string reference_;  // the written arguments after the untuned function's call
  bool has_reference_ = false;
  DLDevice device_{kDLCPU, 0};
};

}  // namespace kiln::autotune::detail
