// The logger of the lowering pipeline: after each pass it verifies the IR, dumps its text and
// records how long the pass took (see LowerOptions in kiln/tir/pipeline.h).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "kiln/tir/pipeline.h"

namespace kiln::tir {

class PassLog {
 public:
  // Resolves the options against the environment (KILN_DUMP_IR, KILN_VERIFY_IR), verifies and
  // dumps the input, and starts the clock of the first pass.
  PassLog(const ir::Ref<ir::PrimFunc>& input, const LowerOptions& options);

  // Records that `pass` produced `func`: its time since the previous step, whether it changed
  // the function (pointer identity), the verifier's verdict and the dump file.
  void step(const std::string& pass, const ir::Ref<ir::PrimFunc>& func);

  // Writes timing.txt to the dump directory, if any.
  void finish();

 private:
  void dump(const std::string& file_name, const std::string& text) const;

  std::string dump_dir_;
  bool verify_;
  std::vector<PassTiming>* timing_out_;
  std::vector<PassTiming> timing_;
  std::string func_name_;
  ir::Ref<ir::PrimFunc> previous_;
  std::chrono::steady_clock::time_point clock_;
};

// The dump directory and verification setting after the environment is taken into account.
std::string resolve_dump_dir(const LowerOptions& options);
bool resolve_verify(const LowerOptions& options);

}  // namespace kiln::tir
