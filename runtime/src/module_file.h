// The integrity of an exported module file, checked before dlopen maps it: its ELF headers
// against the file's size and this machine, and the checksum trailer that the exporter appends
// (format in kiln/runtime/c_runtime_api.h, "The module file").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln {
namespace runtime {

// The FNV-1a 64-bit hash of `size` bytes.
uint64_t fnv1a_64(const unsigned char* data, size_t size);

// Reads the file at `path` and checks, in order: that it can be read and is not empty; the ELF
// identification (magic, this machine's class and byte order), type (a shared object) and
// machine; that the program and section header tables, every PT_LOAD segment and every section
// with file contents lie inside the file; and that the checksum trailer is present, covers every
// byte before it and matches them. Returns "" when the file passes, else what is wrong, e.g.
// "truncated: the file has 1234 bytes but its section headers end at 5678". The file is read,
// never mapped, so a truncated file cannot fault.
std::string check_module_file(const std::string& path);

// Appends the checksum trailer to the file at `path`. Returns "" or what went wrong.
std::string seal_module_file(const std::string& path);

}  // namespace runtime
}  // namespace kiln
