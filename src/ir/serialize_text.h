// Text helpers shared by the writer, the JSON parser and the reader of IR serialization
// (kiln/ir/serialize.h): the UTF-8 rule JSON strings follow, and names quoted for messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln::ir::serialize {

// The length of the well-formed UTF-8 sequence that starts at s[i] (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or 0 when the bytes there are not one.
size_t utf8_sequence_length(std::string_view s, size_t i);

// `s` in double quotes for an error message: at most `limit` bytes of it, with control
// characters and bytes that are not UTF-8 written as \xNN. Names in IR may hold any bytes,
// and a message must be valid UTF-8 to become a Python exception.
std::string quoted(std::string_view s, size_t limit = 60);

}  // namespace kiln::ir::serialize
