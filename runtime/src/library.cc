// External libraries for extern calls: KilnLoadLibrary opens one into the global scope, where
// the JIT, the interpreter and loaded modules find its functions; the list of those opened lets
// export_library link an exported module against the libraries it calls into.
#include <dlfcn.h>
#include <link.h>

#include <deque>
#include <mutex>
#include <string>

#include "error.h"
#include "kiln/runtime/c_runtime_api.h"

namespace kiln::runtime {
namespace {

struct LoadedLibrary {
  void* handle;
  std::string path;  // the file the loader opened, as a full path when it knows one
};

std::mutex& libraries_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Never destroyed: compiled code may call into the libraries until the process ends.
// A deque keeps the paths in place as it grows (KilnFindExternSymbol hands them out).
std::deque<LoadedLibrary>& loaded_libraries() {
  static auto* libraries = new std::deque<LoadedLibrary>();
  return *libraries;
}

}  // namespace
}  // namespace kiln::runtime

using kiln::runtime::fail;
using kiln::runtime::LoadedLibrary;

extern "C" int32_t KilnLoadLibrary(const char* path) {
  if (path == nullptr || path[0] == '\0') {
    return fail(kKilnErrorValue, "KilnLoadLibrary: the library path is empty");
  }
  dlerror();
  void* handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return fail(kKilnErrorValue, std::string("KilnLoadLibrary: cannot load ") + path + ": " +
                                     (why != nullptr ? why : "unknown dynamic loader error"));
  }
  std::string full = path;
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    full = map->l_name;
  }
  std::lock_guard<std::mutex> lock(kiln::runtime::libraries_mutex());
  for (const LoadedLibrary& library : kiln::runtime::loaded_libraries()) {
    if (library.handle == handle) {
      dlclose(handle);  // the loader counts references: keep one per library
      return 0;
    }
  }
  kiln::runtime::loaded_libraries().push_back({handle, full});
  return 0;
}

extern "C" const char* KilnLoadedLibrary(int32_t index) {
  std::lock_guard<std::mutex> lock(kiln::runtime::libraries_mutex());
  const auto& libraries = kiln::runtime::loaded_libraries();
  if (index < 0 || static_cast<size_t>(index) >= libraries.size()) return nullptr;
  return libraries[index].path.c_str();
}

extern "C" int32_t KilnFindExternSymbol(const char* symbol, void** address, const char** library) {
  *address = nullptr;
  *library = nullptr;
  if (symbol == nullptr) return 0;
  {
    std::lock_guard<std::mutex> lock(kiln::runtime::libraries_mutex());
    for (const LoadedLibrary& loaded : kiln::runtime::loaded_libraries()) {
      // dlsym also searches the library's own dependencies (libc, libm …): the symbol is the
      // library's only when its address lies in the library's file.
      void* found = dlsym(loaded.handle, symbol);
      Dl_info info;
      if (found != nullptr && dladdr(found, &info) != 0 && info.dli_fname != nullptr &&
          loaded.path == info.dli_fname) {
        *address = found;
        *library = loaded.path.c_str();  // stable: entries are never removed
        return 0;
      }
    }
  }
  *address = dlsym(RTLD_DEFAULT, symbol);
  return 0;
}
