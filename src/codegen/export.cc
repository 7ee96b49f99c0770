// Export of compiled functions as a shared library: the object file comes from LLVM, the link
// from the system C compiler, run without a shell, and the checksum trailer from the runtime.
#include "kiln/codegen/export.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "kiln/codegen/codegen_llvm.h"
#include "kiln/ir/functor.h"
#include "kiln/runtime/c_runtime_api.h"
#include "kiln/support/error.h"
#include "llvm_support.h"

extern char** environ;

namespace kiln::codegen {

namespace {

// A private temporary directory, removed with its files at the end of the scope.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/kiln_export_XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    runtime_check(::mkdtemp(buffer.data()) != nullptr)
        << "export_library: cannot create a temporary directory from " << pattern << ": "
        << std::strerror(errno);
    path_ = buffer.data();
  }
  ~TempDir() {
    for (const std::string& file : files_) ::unlink(file.c_str());
    ::rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // A path in the directory, removed with it.
  std::string file(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  runtime_check(out.good()) << "export_library: cannot write " << path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs `argv` with stdout and stderr sent to `log`; returns the exit status (-1: not started).
int run_command(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The libraries opened with KilnLoadLibrary that define a C function the extern calls of `funcs`
// name, in order of first call. Functions of the process (libc, libm) need no library.
std::vector<std::string> extern_libraries(const std::vector<ir::Ref<ir::PrimFunc>>& funcs) {
  std::vector<std::string> libraries;
  for (const auto& func : funcs) {
    ir::post_order_visit(func->body, [&](const ir::Node* n) {
      if (n->kind() != ir::NodeKind::Call) return;
      const auto* call = static_cast<const ir::Call*>(n);
      if (call->op != ir::Builtin::CallExtern && call->op != ir::Builtin::CallPureExtern) return;
      const auto* name = call->args.empty() ? nullptr : call->args[0].as<ir::StringImm>();
      if (name == nullptr) return;
      void* address = nullptr;
      const char* library = nullptr;
      KilnFindExternSymbol(name->value.c_str(), &address, &library);
      if (library == nullptr) return;
      for (const std::string& known : libraries) {
        if (known == library) return;
      }
      libraries.emplace_back(library);
    });
  }
  return libraries;
}

}  // namespace

std::string compile_object(const std::vector<ir::Ref<ir::PrimFunc>>& funcs, const Target& target,
                           const std::string& manifest_json) {
  detail::LLVMErrorScope scope(detail::describe_functions(funcs, target));
  llvm::LLVMContext context;
  std::shared_ptr<llvm::TargetMachine> machine = detail::lease_target_machine(target);
  std::unique_ptr<llvm::Module> module =
      codegen_llvm(funcs, target, *machine, context, manifest_json);
  detail::optimize_module(*module, *machine, target.opt_level);
  return detail::emit_machine_code(*module, *machine, detail::MachineCodeKind::kObject);
}

std::string compile_source(const std::vector<ir::Ref<ir::PrimFunc>>& funcs, const Target& target,
                           const std::string& format) {
  user_check(format == "ll" || format == "asm")
      << "compile_source: unknown format '" << format
      << "'; the formats are \"ll\" (optimized LLVM IR) and \"asm\" (assembly)";
  detail::LLVMErrorScope scope(detail::describe_functions(funcs, target));
  llvm::LLVMContext context;
  std::shared_ptr<llvm::TargetMachine> machine = detail::lease_target_machine(target);
  std::unique_ptr<llvm::Module> module = codegen_llvm(funcs, target, *machine, context, "");
  detail::optimize_module(*module, *machine, target.opt_level);
  if (format == "asm") {
    return detail::emit_machine_code(*module, *machine, detail::MachineCodeKind::kAssembly);
  }
  std::string text;
  llvm::raw_string_ostream stream(text);
  module->print(stream, nullptr);
  return stream.str();
}

void export_library(const std::vector<ir::Ref<ir::PrimFunc>>& funcs, const Target& target,
                    const std::string& manifest_json, const std::string& path) {
  user_check(!path.empty()) << "export_library: the output path is empty";
  std::string object = compile_object(funcs, target, manifest_json);
  TempDir dir;
  std::string object_path = dir.file("module.o");
  std::string log_path = dir.file("link.log");
  write_file(object_path, object);
  std::vector<std::string> command = {"cc", "-shared", "-o", path, object_path, "-lm"};
  // A library that extern calls need becomes a DT_NEEDED entry (with its directory as a run
  // path), so that the loader opens it with the module wherever the module is loaded.
  for (const std::string& library : extern_libraries(funcs)) {
    command.push_back(library);
    std::string directory = library.substr(0, library.find_last_of('/'));
    if (library.find('/') != std::string::npos && !directory.empty()) {
      command.push_back("-Wl,-rpath," + directory);
    }
  }
  int status = run_command(command, log_path);
  std::string command_text;
  for (const std::string& part : command) command_text += (command_text.empty() ? "" : " ") + part;
  runtime_check(status == 0) << "export_library: linking " << path << " failed ("
                             << (status < 0 ? "the C compiler `cc` could not be run"
                                            : "exit status " + std::to_string(status))
                             << "): " << command_text << "\n"
                             << read_file(log_path);
  // The checksum trailer lets the runtime refuse a truncated or corrupted copy before dlopen.
  runtime_check(KilnModuleFileSeal(path.c_str()) == 0) << "export_library: " << KilnGetLastError();
}

}  // namespace kiln::codegen
