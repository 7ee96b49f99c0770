// The device state of one module: its device code built on each device where it is launched, on
// first use. kiln_module_device_ctx points to it; KilnDeviceLaunch takes it back.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device.h"
#include "manifest.h"

namespace kiln {
namespace runtime {

class ModuleDeviceState {
 public:
  // `manifest` (the module's) must outlive the state; `module_label` names it in messages.
  ModuleDeviceState(const Manifest* manifest, std::string module_label)
      : manifest_(manifest), module_label_(std::move(module_label)) {}
  ModuleDeviceState(const ModuleDeviceState&) = delete;
  ModuleDeviceState& operator=(const ModuleDeviceState&) = delete;

  // KilnDeviceLaunch on this module: builds the code for the device on the first launch there
  // (a build that fails is tried again at the next launch).
  int32_t launch(int32_t kernel_index, int32_t device_type, int32_t device_id,
                 const int64_t* launch, void* const* arg_values, const int64_t* arg_sizes,
                 int32_t num_args);

 private:
  struct Loaded {
    int32_t device_type;
    int32_t device_id;
    std::unique_ptr<DeviceProgram> program;
  };

  const Manifest* manifest_;
  std::string module_label_;
  std::mutex mutex_;
  std::vector<Loaded> loaded_;
};

}  // namespace runtime
}  // namespace kiln
