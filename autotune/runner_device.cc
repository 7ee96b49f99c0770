// The identity of the device a runner measures on, as the tuning database keys records: the
// CPU's model name and the ISA features of the target in effect, or the GPU's name and its
// OpenCL driver version or CUDA compute capability; and the GPU's numbers the prior models.
#include <fstream>
#include <string>

#include "kiln/autotune/runner.h"
#include "kiln/codegen/target.h"
#include "kiln/runtime/c_runtime_api.h"

namespace kiln::autotune {

namespace {

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

// The first "model name" of /proc/cpuinfo (x86 and some others), or "" when there is none
// (ARM kernels do not name the model there).
std::string cpuinfo_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos || trim(line.substr(0, colon)) != "model name") continue;
    std::string name = trim(line.substr(colon + 1));
    if (!name.empty()) return name;
  }
  return "";
}

}  // namespace

const std::string& cpu_model_name() {
  static const std::string name = [] {
    std::string model = cpuinfo_model_name();
    return model.empty() ? codegen::host_target().cpu : model;
  }();
  return name;
}

TargetKey local_target_key(const codegen::Target& target, int num_threads) {
  TargetKey key;
  key.target = target.str();
  if (target.is_gpu()) {
    key.num_threads = kGpuKeyThreads;
    int32_t id = codegen::find_gpu_device(target);
    if (id < 0) return key;  // no device: a key that no record has
    int32_t type = target.device_type();
    char text[256] = {0};
    if (KilnDeviceName(type, id, text, sizeof(text)) != 0) {
      KilnSetLastError(nullptr);
      return key;
    }
    key.device_model = text;
    if (type == kDLCUDA) {
      int64_t capability = codegen::gpu_device_attribute(target, id, kKilnDeviceComputeCapability);
      if (capability > 0) key.device_features = "sm_" + std::to_string(capability);
    } else if (KilnDeviceDriverVersion(type, id, text, sizeof(text)) == 0) {
      key.device_features = std::string("driver=") + text;
    }
    KilnSetLastError(nullptr);
    return key;
  }
  key.num_threads = num_threads;
  key.device_model = cpu_model_name();
  for (const std::string& feature : target.isa_features()) {
    key.device_features += (key.device_features.empty() ? "" : ",") + feature;
  }
  return key;
}

void describe_local_gpu(const codegen::Target& target, MachineOptions* options) {
  if (!target.is_gpu()) return;
  int32_t id = codegen::find_gpu_device(target);
  if (id < 0) return;
  options->gpu_multiprocessors =
      static_cast<int>(codegen::gpu_device_attribute(target, id, kKilnDeviceMultiprocessorCount));
  if (target.device_type() == kDLCUDA) {
    options->gpu_compute_capability =
        static_cast<int>(codegen::gpu_device_attribute(target, id, kKilnDeviceComputeCapability));
  }
}

}  // namespace kiln::autotune
