// The pipeline's logger: verification, dump files (NN_<pass>.py, timing.txt) and pass times.
#include "tir/pass_log.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "kiln/ir/printer.h"
#include "kiln/support/error.h"
#include "kiln/tir/verify_ir.h"

namespace kiln::tir {

using namespace ir;

namespace {

std::string function_name(const PrimFunc& func) {
  auto symbol = func.attrs.find("global_symbol");
  if (symbol != func.attrs.end()) {
    if (const auto* s = symbol->second.as<StringImm>()) return s->value;
  }
  return "main";
}

}  // namespace

std::string resolve_dump_dir(const LowerOptions& options) {
  if (!options.dump_dir.empty()) return options.dump_dir;
  const char* env = std::getenv("KILN_DUMP_IR");
  return env == nullptr ? std::string() : std::string(env);
}

bool resolve_verify(const LowerOptions& options) {
  const char* env = std::getenv("KILN_VERIFY_IR");
  return options.verify || (env != nullptr && std::string(env) == "1");
}

PassLog::PassLog(const Ref<PrimFunc>& input, const LowerOptions& options)
    : dump_dir_(resolve_dump_dir(options)),
      verify_(resolve_verify(options)),
      timing_out_(options.timing),
      func_name_(function_name(*input)),
      previous_(input) {
  if (verify_) verify_ir(input, "the input of lower (before any pass)");
  if (!dump_dir_.empty()) {
    std::error_code error;
    std::filesystem::create_directories(dump_dir_, error);
    user_check(!error) << "lower: cannot create the dump directory " << dump_dir_ << ": "
                       << error.message();
    dump("00_input.py", to_script(input, func_name_));
  }
  clock_ = std::chrono::steady_clock::now();
}

void PassLog::step(const std::string& pass, const Ref<PrimFunc>& func) {
  auto now = std::chrono::steady_clock::now();
  PassTiming t;
  t.pass = pass;
  t.seconds = std::chrono::duration<double>(now - clock_).count();
  t.changed = !func.same_as(previous_);
  timing_.push_back(t);
  if (verify_ && t.changed) verify_ir(func, "pass " + pass);
  if (!dump_dir_.empty()) {
    char prefix[32];
    std::snprintf(prefix, sizeof(prefix), "%02zu_", timing_.size());
    dump(prefix + pass + ".py", t.changed ? to_script(func, func_name_) : "(unchanged)");
  }
  previous_ = func;
  clock_ = std::chrono::steady_clock::now();
}

void PassLog::finish() {
  if (timing_out_ != nullptr) {
    timing_out_->insert(timing_out_->end(), timing_.begin(), timing_.end());
  }
  if (dump_dir_.empty()) return;
  std::ostringstream text;
  double total = 0.0;
  for (size_t k = 0; k < timing_.size(); ++k) {
    const PassTiming& t = timing_[k];
    total += t.seconds;
    text << std::setw(2) << std::setfill('0') << k + 1 << std::setfill(' ') << "  " << std::left
         << std::setw(28) << t.pass << std::right << std::fixed << std::setprecision(6)
         << std::setw(12) << t.seconds << " s  " << (t.changed ? "changed" : "unchanged") << "\n";
  }
  text << "    " << std::left << std::setw(28) << "total" << std::right << std::fixed
       << std::setprecision(6) << std::setw(12) << total << " s\n";
  dump("timing.txt", text.str());
}

void PassLog::dump(const std::string& file_name, const std::string& text) const {
  std::filesystem::path path = std::filesystem::path(dump_dir_) / file_name;
  std::ofstream out(path);
  user_check(out.good()) << "lower: cannot write the dump file " << path.string();
  out << text << "\n";
}

}  // namespace kiln::tir
