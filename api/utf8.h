// UTF-8 text helpers shared by the operator and the runner: valid UTF-8 for
// JSON, cutting at character boundaries (never inside a sequence), counting
// characters (memory block limits are in characters). Pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hb::api {

// Replaces invalid UTF-8 sequences with U+FFFD.
std::string sanitize_utf8(std::string_view text);
// Number of Unicode code points (invalid bytes count one each).
std::size_t utf8_length(std::string_view text);
// The longest prefix of at most max_bytes that ends on a character boundary.
std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes);
// The same as an owned string (status fields are built from temporaries).
inline std::string utf8_prefix_string(std::string_view text, std::size_t max_bytes) {
  return std::string(utf8_prefix(text, max_bytes));
}
// The longest suffix of at most max_bytes that starts on a character boundary.
std::string_view utf8_suffix(std::string_view text, std::size_t max_bytes);
// The last max_chars code points of `text` (invalid bytes count one each).
std::string_view utf8_last_chars(std::string_view text, std::size_t max_chars);
// Prefix plus an ellipsis marker when cut ("…" counted in max_bytes; below
// 3 bytes no marker fits and the bare prefix is returned).
std::string truncate_utf8(std::string_view text, std::size_t max_bytes);

}  // namespace hb::api
