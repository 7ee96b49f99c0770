// The "kiln.storage_align" annotation: schedule's storage_align records on the block that writes
// a buffer which of its dimensions get a padded stride, and the lowering pass
// compact_buffer_allocation applies them to the buffer's final (compacted) shape, as TVM does:
// a tile compacted out of a large buffer then gets the padded pitch of its own rows, not the
// pitch of the large buffer's.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/ir/expr.h"

namespace kiln::ir {

constexpr const char* kStorageAlignAnnotation = "kiln.storage_align";

// Dimension `axis` of the block's write buffer `buffer_index` gets a stride s with
// s % factor == offset (the smallest such s not below the compact stride).
struct StorageAlign {
  int64_t buffer_index = 0;
  int64_t axis = 0;
  int64_t factor = 1;
  int64_t offset = 0;
};

// The annotation's text: "buffer_index:axis:factor:offset" entries separated by ';'.
inline std::string format_storage_align(const std::vector<StorageAlign>& entries) {
  std::string out;
  for (const StorageAlign& e : entries) {
    if (!out.empty()) out += ";";
    out += std::to_string(e.buffer_index) + ":" + std::to_string(e.axis) + ":" +
           std::to_string(e.factor) + ":" + std::to_string(e.offset);
  }
  return out;
}

// The entries of an annotation value; malformed entries are skipped.
inline std::vector<StorageAlign> parse_storage_align(const Expr& value) {
  std::vector<StorageAlign> out;
  const auto* text = value.as<StringImm>();
  if (text == nullptr) return out;
  std::istringstream stream(text->value);
  std::string item;
  while (std::getline(stream, item, ';')) {
    StorageAlign e;
    char c1 = 0, c2 = 0, c3 = 0;
    std::istringstream fields(item);
    if (fields >> e.buffer_index >> c1 >> e.axis >> c2 >> e.factor >> c3 >> e.offset && c1 == ':' &&
        c2 == ':' && c3 == ':' && e.factor > 0) {
      out.push_back(e);
    }
  }
  return out;
}

}  // namespace kiln::ir
