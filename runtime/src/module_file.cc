// Checks of a module file before dlopen: a shared object that is truncated or corrupted can make
// the dynamic loader read past the end of its mapping (SIGBUS) or run garbage, so the runtime
// reads the file first and compares its ELF headers and checksum trailer with what it holds.
#include "module_file.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace kiln {
namespace runtime {
namespace {

using Ehdr = ElfW(Ehdr);
using Phdr = ElfW(Phdr);
using Shdr = ElfW(Shdr);

constexpr char kTrailerMagic[8] = {'K', 'I', 'L', 'N', 'S', 'U', 'M', '1'};
constexpr size_t kTrailerBytes = 24;

// This machine's ELF identification.
#if __SIZEOF_POINTER__ == 8
constexpr unsigned char kHostClass = ELFCLASS64;
#else
constexpr unsigned char kHostClass = ELFCLASS32;
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
constexpr unsigned char kHostData = ELFDATA2LSB;
#else
constexpr unsigned char kHostData = ELFDATA2MSB;
#endif
#if defined(__x86_64__)
constexpr int kHostMachine = EM_X86_64;
#elif defined(__i386__)
constexpr int kHostMachine = EM_386;
#elif defined(__aarch64__)
constexpr int kHostMachine = EM_AARCH64;
#elif defined(__arm__)
constexpr int kHostMachine = EM_ARM;
#elif defined(__riscv)
constexpr int kHostMachine = EM_RISCV;
#elif defined(__powerpc64__)
constexpr int kHostMachine = EM_PPC64;
#elif defined(__s390x__)
constexpr int kHostMachine = EM_S390;
#else
constexpr int kHostMachine = EM_NONE;  // unknown to this file: the machine is left to dlopen
#endif

std::string machine_name(int machine) {
  switch (machine) {
    case EM_X86_64:
      return "x86-64";
    case EM_386:
      return "i386";
    case EM_AARCH64:
      return "aarch64";
    case EM_ARM:
      return "arm";
    case EM_RISCV:
      return "riscv";
    case EM_PPC64:
      return "ppc64";
    case EM_S390:
      return "s390";
  }
  return "machine " + std::to_string(machine);
}

std::string type_name(int type) {
  switch (type) {
    case ET_REL:
      return "a relocatable object (.o)";
    case ET_EXEC:
      return "an executable";
    case ET_CORE:
      return "a core dump";
  }
  return "ELF type " + std::to_string(type);
}

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

uint64_t read_le64(const unsigned char* bytes) {
  uint64_t value = 0;
  for (int k = 7; k >= 0; --k) value = (value << 8) | bytes[k];
  return value;
}

void write_le64(uint64_t value, unsigned char* bytes) {
  for (int k = 0; k < 8; ++k) bytes[k] = static_cast<unsigned char>(value >> (8 * k));
}

// Reads the whole file; "" or why it cannot be read.
std::string read_file(const std::string& path, std::vector<unsigned char>* bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::string("cannot open: ") + std::strerror(errno);
  struct stat info;
  std::string error;
  if (::fstat(fd, &info) != 0) {
    error = std::string("cannot open: ") + std::strerror(errno);
  } else if (!S_ISREG(info.st_mode)) {
    error = "cannot open: not a regular file";
  } else {
    bytes->resize(static_cast<size_t>(info.st_size));
    size_t done = 0;
    while (done < bytes->size()) {
      ssize_t got = ::read(fd, bytes->data() + done, bytes->size() - done);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        error = std::string("cannot read: ") + std::strerror(errno);
        break;
      }
      if (got == 0) break;  // the file shrank while it was read
      done += static_cast<size_t>(got);
    }
    bytes->resize(done);
  }
  ::close(fd);
  return error;
}

// "truncated: ..." when [offset, offset + count * size) does not lie inside `file_size` bytes.
std::string check_range(uint64_t offset, uint64_t count, uint64_t size, uint64_t file_size,
                        const std::string& what) {
  uint64_t bytes = 0, end = 0;
  if (__builtin_mul_overflow(count, size, &bytes) || __builtin_add_overflow(offset, bytes, &end)) {
    return "corrupted: " + what + " at offset " + std::to_string(offset) + " reach past 2^64 bytes";
  }
  if (end <= file_size) return "";
  return "truncated: the file has " + std::to_string(file_size) + " bytes but " + what +
         " end at " + std::to_string(end);
}

// The ELF checks, against the whole file: identification, then every range the loader reads.
std::string check_elf(const std::vector<unsigned char>& file) {
  uint64_t size = file.size();
  if (size < 4 || std::memcmp(file.data(), ELFMAG, SELFMAG) != 0) {
    return "not an ELF shared library: the file does not start with the ELF magic \\x7fELF";
  }
  if (size < sizeof(Ehdr)) {
    return "truncated: the file has " + std::to_string(size) + " bytes, fewer than its " +
           std::to_string(sizeof(Ehdr)) + "-byte ELF header";
  }
  Ehdr header;
  std::memcpy(&header, file.data(), sizeof(header));
  if (header.e_ident[EI_CLASS] != kHostClass) {
    return std::string("the ELF class is ") +
           (header.e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : "64-bit or unknown") +
           ", but this machine runs " + (kHostClass == ELFCLASS64 ? "64-bit" : "32-bit") + " code";
  }
  if (header.e_ident[EI_DATA] != kHostData) {
    return "the ELF byte order is not this machine's";
  }
  if (kHostMachine != EM_NONE && header.e_machine != kHostMachine) {
    return "the ELF file is for " + machine_name(header.e_machine) + ", but this machine is " +
           machine_name(kHostMachine);
  }
  if (header.e_type != ET_DYN) {
    return "the ELF file is " + type_name(header.e_type) + ", not a shared library";
  }
  // Extended numbering: counts that do not fit the header live in section header 0.
  uint64_t num_sections = header.e_shnum;
  uint64_t num_segments = header.e_phnum;
  if (header.e_shoff != 0) {
    if (header.e_shentsize != sizeof(Shdr)) {
      return "corrupted: section header entries of " + std::to_string(header.e_shentsize) +
             " bytes, expected " + std::to_string(sizeof(Shdr));
    }
    if (num_sections == 0 || num_segments == PN_XNUM) {
      std::string error =
          check_range(header.e_shoff, 1, sizeof(Shdr), size, "its first section header");
      if (!error.empty()) return error;
      Shdr first;
      std::memcpy(&first, file.data() + header.e_shoff, sizeof(first));
      if (num_sections == 0) num_sections = first.sh_size;
      if (num_segments == PN_XNUM) num_segments = first.sh_info;
    }
  }
  if (num_segments > 0 && header.e_phentsize != sizeof(Phdr)) {
    return "corrupted: program header entries of " + std::to_string(header.e_phentsize) +
           " bytes, expected " + std::to_string(sizeof(Phdr));
  }
  std::string error =
      check_range(header.e_phoff, num_segments, sizeof(Phdr), size, "its program headers");
  if (error.empty() && header.e_shoff != 0) {
    error = check_range(header.e_shoff, num_sections, sizeof(Shdr), size, "its section headers");
  }
  if (!error.empty()) return error;
  for (uint64_t k = 0; k < num_segments; ++k) {
    Phdr segment;
    std::memcpy(&segment, file.data() + header.e_phoff + k * sizeof(Phdr), sizeof(segment));
    if (segment.p_type != PT_LOAD && segment.p_type != PT_DYNAMIC) continue;
    std::string what = "segment " + std::to_string(k) +
                       (segment.p_type == PT_LOAD ? " (PT_LOAD)" : " (PT_DYNAMIC)");
    error = check_range(segment.p_offset, segment.p_filesz, 1, size, what);
    if (!error.empty()) return error;
  }
  for (uint64_t k = 0; k < num_sections && header.e_shoff != 0; ++k) {
    Shdr section;
    std::memcpy(&section, file.data() + header.e_shoff + k * sizeof(Shdr), sizeof(section));
    if (section.sh_type == SHT_NOBITS || section.sh_type == SHT_NULL) continue;
    error = check_range(section.sh_offset, section.sh_size, 1, size,
                        "section " + std::to_string(k) + " (its contents)");
    if (!error.empty()) return error;
  }
  return "";
}

// The trailer check: present, covering every byte before it, and matching them.
std::string check_trailer(const std::vector<unsigned char>& file) {
  uint64_t size = file.size();
  if (size < kTrailerBytes ||
      std::memcmp(file.data() + size - 8, kTrailerMagic, sizeof(kTrailerMagic)) != 0) {
    return "no checksum trailer: a module written by kiln's export_library ends with one (see "
           "KilnModuleFileSeal), so this file was truncated, modified or linked by other means "
           "(modules exported for runtime ABI version 1 have none: export them again)";
  }
  uint64_t covered = read_le64(file.data() + size - kTrailerBytes);
  uint64_t recorded = read_le64(file.data() + size - 16);
  if (covered != size - kTrailerBytes) {
    return "truncated or extended: its checksum trailer covers " + std::to_string(covered) +
           " bytes, but " + std::to_string(size - kTrailerBytes) + " bytes precede it";
  }
  uint64_t computed = fnv1a_64(file.data(), covered);
  if (computed != recorded) {
    return "corrupted: the checksum of its " + std::to_string(covered) + " bytes is " +
           hex(computed) + ", but the exporter recorded " + hex(recorded);
  }
  return "";
}

}  // namespace

uint64_t fnv1a_64(const unsigned char* data, size_t size) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string check_module_file(const std::string& path) {
  std::vector<unsigned char> file;
  std::string error = read_file(path, &file);
  if (!error.empty()) return error;
  if (file.empty()) return "the file is empty (0 bytes), not a kiln module";
  error = check_elf(file);
  if (!error.empty()) return error;
  return check_trailer(file);
}

std::string seal_module_file(const std::string& path) {
  std::vector<unsigned char> file;
  std::string error = read_file(path, &file);
  if (!error.empty()) return error;
  if (check_trailer(file).empty()) return "the file already ends with a checksum trailer";
  unsigned char trailer[kTrailerBytes];
  write_le64(file.size(), trailer);
  write_le64(fnv1a_64(file.data(), file.size()), trailer + 8);
  std::memcpy(trailer + 16, kTrailerMagic, sizeof(kTrailerMagic));
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return std::string("cannot open for writing: ") + std::strerror(errno);
  size_t done = 0;
  while (done < kTrailerBytes) {
    ssize_t wrote = ::write(fd, trailer + done, kTrailerBytes - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      error = std::string("cannot write the trailer: ") + std::strerror(errno);
      break;
    }
    done += static_cast<size_t>(wrote);
  }
  if (::close(fd) != 0 && error.empty()) {
    error = std::string("cannot write the trailer: ") + std::strerror(errno);
  }
  return error;
}

}  // namespace runtime
}  // namespace kiln
