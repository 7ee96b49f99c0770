// Damaged module files: the runtime reads a module file before dlopen maps it and refuses, with
// kKilnErrorModuleFile and a message naming the path and the damage, an empty, non-ELF,
// truncated or corrupted file. Each case damages a copy of the (sealed) fake module.
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/runtime/c_runtime_api.h"
#include "test_util.h"

namespace kiln {
namespace runtime {
namespace testing {
namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The file offset of the section named `name` of an ELF image.
size_t section_offset(const std::string& image, const char* name) {
  ElfW(Ehdr) header;
  std::memcpy(&header, image.data(), sizeof(header));
  ElfW(Shdr) names;
  std::memcpy(&names, image.data() + header.e_shoff + header.e_shstrndx * sizeof(ElfW(Shdr)),
              sizeof(names));
  for (size_t k = 0; k < header.e_shnum; ++k) {
    ElfW(Shdr) section;
    std::memcpy(&section, image.data() + header.e_shoff + k * sizeof(ElfW(Shdr)), sizeof(section));
    if (std::strcmp(image.data() + names.sh_offset + section.sh_name, name) == 0) {
      return section.sh_offset;
    }
  }
  ADD_FAILURE() << "no section " << name;
  return 0;
}

class ModuleFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kiln_module_file_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    image_ = read_bytes(fake_module_path("ok"));
    ASSERT_GT(image_.size(), 1000u);
  }
  void TearDown() override {
    for (const std::string& file : files_) std::remove(file.c_str());
    rmdir(dir_.c_str());
  }

  // Writes `bytes` to a fresh file and loads it. Returns "" when it loads, else the message; a
  // refusal must have the code kKilnErrorModuleFile.
  std::string load(const std::string& bytes) {
    std::string path = dir_ + "/module" + std::to_string(files_.size()) + ".so";
    files_.push_back(path);
    write_bytes(path, bytes);
    ModuleGuard module;
    int32_t status = KilnModuleLoadFromFile(path.c_str(), module.out());
    if (status == 0) return "";
    EXPECT_EQ(status, kKilnErrorModuleFile) << KilnGetLastError();
    std::string message = KilnGetLastError();
    EXPECT_EQ(message.rfind("KilnModuleLoadFromFile: " + path + ": ", 0), 0u) << message;
    return message.substr(std::strlen("KilnModuleLoadFromFile: ") + path.size() + 2);
  }

  std::string dir_;
  std::string image_;
  std::vector<std::string> files_;
};

TEST_F(ModuleFile, IntactCopyLoads) {
  EXPECT_EQ(load(image_), "");
}

TEST_F(ModuleFile, EmptyFile) {
  EXPECT_EQ(load(""), "the file is empty (0 bytes), not a kiln module");
}

TEST_F(ModuleFile, TextFile) {
  EXPECT_EQ(load("not a shared library\n"),
            "not an ELF shared library: the file does not start with the ELF magic \\x7fELF");
}

TEST_F(ModuleFile, ShorterThanAnElfHeader) {
  EXPECT_EQ(load(image_.substr(0, 20)), "truncated: the file has 20 bytes, fewer than its " +
                                            std::to_string(sizeof(ElfW(Ehdr))) +
                                            "-byte ELF header");
}

TEST_F(ModuleFile, TruncatedToAThird) {
  std::string message = load(image_.substr(0, image_.size() / 3));
  EXPECT_EQ(message.rfind(
                "truncated: the file has " + std::to_string(image_.size() / 3) + " bytes but ", 0),
            0u)
      << message;
}

TEST_F(ModuleFile, TruncatedToTwoThirds) {
  std::string message = load(image_.substr(0, image_.size() * 2 / 3));
  EXPECT_EQ(message.rfind("truncated: the file has ", 0), 0u) << message;
  EXPECT_NE(message.find(" end at "), std::string::npos) << message;
}

TEST_F(ModuleFile, EveryTruncationIsRefused) {
  // Not one prefix of the file may load, and none may fault.
  for (size_t length = 0; length < image_.size(); length += 97) {
    EXPECT_NE(load(image_.substr(0, length)), "") << length;
  }
}

TEST_F(ModuleFile, TruncatedJustBeforeTheTrailer) {
  std::string message = load(image_.substr(0, image_.size() - 24));
  EXPECT_EQ(message.rfind("no checksum trailer: ", 0), 0u) << message;
}

TEST_F(ModuleFile, TrailerThatCoversTooFewBytes) {
  // Bytes inserted before an intact trailer.
  std::string extended =
      image_.substr(0, image_.size() - 24) + "junk" + image_.substr(image_.size() - 24);
  std::string message = load(extended);
  EXPECT_EQ(message, "truncated or extended: its checksum trailer covers " +
                         std::to_string(image_.size() - 24) + " bytes, but " +
                         std::to_string(image_.size() - 20) + " bytes precede it");
}

TEST_F(ModuleFile, FlippedByteInTheCode) {
  std::string damaged = image_;
  damaged[section_offset(image_, ".text") + 3] ^= 0x40;
  std::string message = load(damaged);
  EXPECT_EQ(message.rfind("corrupted: the checksum of its ", 0), 0u) << message;
  EXPECT_NE(message.find(", but the exporter recorded 0x"), std::string::npos) << message;
}

TEST_F(ModuleFile, FlippedByteInTheManifest) {
  std::string damaged = image_;
  size_t manifest = damaged.find("\"abi_version\": 2");
  ASSERT_NE(manifest, std::string::npos);
  damaged[manifest + 15] = '3';  // a module of ABI version 3, as a flipped bit would make it
  EXPECT_EQ(load(damaged).rfind("corrupted: the checksum of its ", 0), 0u);
}

TEST_F(ModuleFile, ElfForAnotherMachine) {
  std::string damaged = image_;
  uint16_t machine = EM_SPARCV9;  // no machine these tests run on
  std::memcpy(&damaged[offsetof(ElfW(Ehdr), e_machine)], &machine, sizeof(machine));
  std::string message = load(damaged);
  EXPECT_EQ(message.rfind("the ELF file is for machine 43, but this machine is ", 0), 0u)
      << message;
}

TEST_F(ModuleFile, ObjectFileIsNotASharedLibrary) {
  std::string damaged = image_;
  uint16_t type = ET_REL;
  std::memcpy(&damaged[offsetof(ElfW(Ehdr), e_type)], &type, sizeof(type));
  EXPECT_EQ(load(damaged), "the ELF file is a relocatable object (.o), not a shared library");
}

TEST_F(ModuleFile, SectionHeadersPastTheEnd) {
  std::string damaged = image_;
  ElfW(Off) offset = image_.size() * 4;
  std::memcpy(&damaged[offsetof(ElfW(Ehdr), e_shoff)], &offset, sizeof(offset));
  std::string message = load(damaged);
  EXPECT_EQ(message.rfind("truncated: the file has " + std::to_string(image_.size()) +
                              " bytes but its section headers end at ",
                          0),
            0u)
      << message;
}

TEST_F(ModuleFile, DirectoryIsNotAModule) {
  ModuleGuard module;
  EXPECT_EQ(KilnModuleLoadFromFile(dir_.c_str(), module.out()), kKilnErrorModuleFile);
  EXPECT_NE(std::string(KilnGetLastError()).find("cannot open: not a regular file"),
            std::string::npos)
      << KilnGetLastError();
}

TEST_F(ModuleFile, SealTwiceIsRefused) {
  std::string path = dir_ + "/sealed.so";
  files_.push_back(path);
  write_bytes(path, image_);
  EXPECT_EQ(KilnModuleFileSeal(path.c_str()), kKilnErrorModuleFile);
  EXPECT_EQ(std::string(KilnGetLastError()),
            "KilnModuleFileSeal: " + path + ": the file already ends with a checksum trailer");
}

TEST_F(ModuleFile, SealMakesALinkedLibraryLoadable) {
  std::string path = dir_ + "/resealed.so";
  files_.push_back(path);
  write_bytes(path, image_.substr(0, image_.size() - 24));
  ModuleGuard refused;
  EXPECT_EQ(KilnModuleLoadFromFile(path.c_str(), refused.out()), kKilnErrorModuleFile);
  ASSERT_EQ(KilnModuleFileSeal(path.c_str()), 0) << KilnGetLastError();
  EXPECT_EQ(read_bytes(path), image_);
  ModuleGuard module;
  EXPECT_EQ(KilnModuleLoadFromFile(path.c_str(), module.out()), 0) << KilnGetLastError();
}

TEST_F(ModuleFile, SealOfAMissingFile) {
  std::string path = dir_ + "/missing.so";
  EXPECT_EQ(KilnModuleFileSeal(path.c_str()), kKilnErrorModuleFile);
  EXPECT_EQ(std::string(KilnGetLastError()),
            "KilnModuleFileSeal: " + path + ": cannot open: No such file or directory");
}

}  // namespace
}  // namespace testing
}  // namespace runtime
}  // namespace kiln
