#include "api/utf8.h"

#include "api/hb_assert.h"

namespace hb::api {
namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 when invalid.
std::size_t sequence_length(std::string_view text, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  std::size_t length;
  unsigned min_code;
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    min_code = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    min_code = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    min_code = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  unsigned code = lead & (0x7F >> length);
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if (code < min_code || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

bool is_continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

}  // namespace

std::string sanitize_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = sequence_length(text, i);
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

std::size_t utf8_length(std::string_view text) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < text.size(); ++count) {
    std::size_t length = sequence_length(text, i);
    i += length == 0 ? 1 : length;
  }
  return count;
}

std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t end = max_bytes;
  while (end > 0 && is_continuation(text[end])) --end;
  HB_ASSERT(end <= max_bytes);
  return text.substr(0, end);
}

std::string_view utf8_suffix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t start = text.size() - max_bytes;
  while (start < text.size() && is_continuation(text[start])) ++start;
  HB_ASSERT(text.size() - start <= max_bytes);
  return text.substr(start);
}

std::string_view utf8_last_chars(std::string_view text, std::size_t max_chars) {
  std::size_t start = text.size();
  for (std::size_t chars = 0; start > 0 && chars < max_chars; ++chars) {
    --start;
    // Back over continuation bytes to the start of the sequence (at most 3).
    for (int back = 0; back < 3 && start > 0 && is_continuation(text[start]); ++back) --start;
  }
  return text.substr(start);
}

std::string truncate_utf8(std::string_view text, std::size_t max_bytes) {
  constexpr std::string_view kEllipsis = "\xE2\x80\xA6";
  if (text.size() <= max_bytes) return std::string(text);
  if (max_bytes < kEllipsis.size()) return std::string(utf8_prefix(text, max_bytes));
  std::string out(utf8_prefix(text, max_bytes - kEllipsis.size()));
  out += kEllipsis;
  HB_ASSERT(out.size() <= max_bytes);
  return out;
}

}  // namespace hb::api
