#include "kube/watch_scan.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>

namespace hb::kube {
namespace {

class Scanner {
 public:
  explicit Scanner(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  const char* pos() const { return p_; }
  bool at_end() {
    skip_ws();
    return p_ == end_;
  }

  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }

  bool consume(char c) {
    skip_ws();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }

  // A string's contents (without quotes); escaped tells whether it had '\'.
  // Accepts exactly what the full decoder accepts (valid escapes, valid
  // UTF-8), so a line the scanner takes never fails a later full parse.
  bool string(std::string_view* out, bool* escaped) {
    skip_ws();
    if (p_ >= end_ || *p_ != '"') return false;
    const char* start = ++p_;
    *escaped = false;
    while (p_ < end_ && *p_ != '"') {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '\\') {
        *escaped = true;
        if (!escape()) return false;
      } else if (c < 0x20) {
        return false;  // control characters must be escaped
      } else if (c >= 0x80) {
        if (!utf8_sequence()) return false;
      } else {
        ++p_;
      }
    }
    if (p_ >= end_) return false;
    *out = std::string_view(start, static_cast<size_t>(p_ - start));
    ++p_;
    return true;
  }

  // One escape at p_ ('\\'); a \u surrogate must come as a high-low pair.
  bool escape() {
    if (++p_ >= end_) return false;
    const char e = *p_++;
    if (e != 'u')
      return e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' ||
             e == 't';
    int unit = hex4();
    if (unit >= 0xDC00 && unit <= 0xDFFF) return false;  // a low surrogate alone
    if (unit < 0xD800 || unit > 0xDBFF) return unit >= 0;
    if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
    p_ += 2;
    unit = hex4();
    return unit >= 0xDC00 && unit <= 0xDFFF;
  }

  // Four hex digits at p_ as a number, or -1.
  int hex4() {
    if (end_ - p_ < 4) return -1;
    int value = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (!std::isxdigit(c)) return -1;
      value = value * 16 + (std::isdigit(c) ? c - '0' : (std::tolower(c) - 'a' + 10));
    }
    return value;
  }

  // One well-formed UTF-8 sequence of 2..4 bytes at p_ (RFC 3629: no
  // overlongs, no surrogates, nothing above U+10FFFF).
  bool utf8_sequence() {
    const auto lead = static_cast<unsigned char>(*p_);
    int length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the second byte's range
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      return false;
    }
    if (end_ - p_ < length) return false;
    for (int i = 1; i < length; ++i) {
      const auto b = static_cast<unsigned char>(p_[i]);
      if (b < (i == 1 ? low : 0x80) || b > (i == 1 ? high : 0xBF)) return false;
    }
    p_ += length;
    return true;
  }

  bool value(int depth) {
    if (depth > kKubeObjectDepthMax) return false;
    skip_ws();
    if (p_ >= end_) return false;
    switch (*p_) {
      case '"': {
        std::string_view s;
        bool escaped;
        return string(&s, &escaped);
      }
      case '{':
        return object(depth, [](std::string_view, const char*) { return false; });
      case '[': {
        ++p_;
        if (consume(']')) return true;
        do {
          if (!value(depth + 1)) return false;
        } while (consume(','));
        return consume(']');
      }
      default:
        return scalar();
    }
  }

  // Walks an object; for each member, on_member(key, key_start) may scan the
  // value itself (return true) or leave it to be skipped (return false).
  bool object(int depth, const std::function<bool(std::string_view, const char*)>& on_member) {
    if (depth > kKubeObjectDepthMax || !consume('{')) return false;
    if (consume('}')) return true;
    do {
      skip_ws();
      const char* key_start = p_;
      std::string_view key;
      bool escaped;
      if (!string(&key, &escaped) || !consume(':')) return false;
      if (!on_member(escaped ? std::string_view() : key, key_start)) {
        if (!value(depth + 1)) return false;
      }
      if (failed_) return false;
    } while (consume(','));
    return consume('}');
  }

  // A number (JSON's grammar: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?), true,
  // false or null.
  bool scalar() {
    for (std::string_view word : {"true", "false", "null"}) {
      if (static_cast<size_t>(end_ - p_) >= word.size() &&
          std::string_view(p_, word.size()) == word) {
        p_ += word.size();
        return true;
      }
    }
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ < end_ && *p_ == '0') {
      ++p_;
    } else if (!digits()) {
      return false;
    }
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (!digits()) return false;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digits()) return false;
      return finite(start);
    }
    return static_cast<size_t>(p_ - start) < kPlainNumberCharsMax || finite(start);
  }

  // The full decoder refuses a number past double's range; only one with an
  // exponent or hundreds of digits can be, so only those pay for strtod.
  static constexpr size_t kPlainNumberCharsMax = 300;
  bool finite(const char* start) const {
    const std::string token(start, p_);
    return std::isfinite(std::strtod(token.c_str(), nullptr));
  }

  // One or more decimal digits.
  bool digits() {
    const char* start = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return p_ > start;
  }

  // An unescaped string value into *out; escapes are refused (fall back).
  bool plain_string(std::string_view* out) {
    bool escaped;
    if (!string(out, &escaped)) return fail();
    return escaped ? fail() : true;
  }

  bool fail() {
    failed_ = true;
    return false;
  }
  bool failed() const { return failed_; }

 private:
  const char* p_;
  const char* end_;
  bool failed_ = false;
};

}  // namespace

std::string ScannedWatchEvent::compact_object_text() const {
  if (managed_fields_member.empty()) return std::string(object_text);
  size_t cut = static_cast<size_t>(managed_fields_member.data() - object_text.data());
  std::string out;
  out.reserve(object_text.size() - managed_fields_member.size());
  out.append(object_text.substr(0, cut));
  out.append(object_text.substr(cut + managed_fields_member.size()));
  return out;
}

std::optional<ScannedWatchEvent> scan_watch_event(std::string_view line) {
  Scanner s(line);
  ScannedWatchEvent out{};
  std::string_view type;
  bool have_object = false;

  auto on_metadata_member = [&](std::string_view key, const char* key_start) -> bool {
    if (key == "name") return s.plain_string(&out.name) || true;
    if (key == "namespace") return s.plain_string(&out.namespace_) || true;
    if (key == "resourceVersion") return s.plain_string(&out.resource_version) || true;
    if (key == "managedFields") {
      if (!s.value(3)) return s.fail() || true;
      const char* member_end = s.pos();
      // Take one comma with it: the one after, or else the one before.
      const char* start = key_start;
      Scanner after(std::string_view(member_end,
                                     static_cast<size_t>(line.data() + line.size() - member_end)));
      if (after.consume(',')) {
        member_end = after.pos();
      } else {
        const char* q = key_start;
        while (q > line.data() && (q[-1] == ' ' || q[-1] == '\n' || q[-1] == '\t' || q[-1] == '\r'))
          --q;
        if (q > line.data() && q[-1] == ',') start = q - 1;
      }
      out.managed_fields_member = std::string_view(start, static_cast<size_t>(member_end - start));
      return true;
    }
    return false;
  };
  auto on_object_member = [&](std::string_view key, const char*) -> bool {
    if (key != "metadata") return false;
    if (!s.object(2, on_metadata_member)) s.fail();
    return true;
  };
  auto on_event_member = [&](std::string_view key, const char*) -> bool {
    if (key == "type") return s.plain_string(&type) || true;
    if (key == "object") {
      s.skip_ws();
      const char* start = s.pos();
      if (!s.object(1, on_object_member)) return s.fail() || true;
      out.object_text = std::string_view(start, static_cast<size_t>(s.pos() - start));
      have_object = true;
      return true;
    }
    return false;
  };

  if (!s.object(0, on_event_member) || s.failed() || !s.at_end() || !have_object)
    return std::nullopt;
  if (type == "ADDED") {
    out.type = WatchEventType::kAdded;
  } else if (type == "MODIFIED") {
    out.type = WatchEventType::kModified;
  } else if (type == "DELETED") {
    out.type = WatchEventType::kDeleted;
  } else if (type == "BOOKMARK") {
    out.type = WatchEventType::kBookmark;
  } else {
    return std::nullopt;  // ERROR (a Status) and unknown types take the full decoder
  }
  if (out.type != WatchEventType::kBookmark && out.name.empty()) return std::nullopt;
  return out;
}

}  // namespace hb::kube
