#include "kube/text_cut.h"

#include <cstring>
#include <optional>

namespace hb::kube {

TextCut::TextCut(std::initializer_list<Member> kept) : members(kept) {}

const TextCut* TextCut::find(std::string_view name) const {
  for (const Member& m : members) {
    if (m.name == name) return &m.cut;
  }
  return nullptr;
}

namespace {

// Walks text the scanner has read as JSON already: it only finds where
// members and values end, and gives up (nullopt) on anything unexpected.
class Cutter {
 public:
  Cutter(std::string_view text, std::string& out)
      : p_(text.data()), end_(text.data() + text.size()), out_(out) {}

  bool whole(const TextCut& cut) {
    ws();
    if (p_ >= end_ || *p_ != '{') return false;
    if (!object(cut)) return false;
    ws();
    return p_ == end_;
  }

 private:
  void ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }

  // Past the string at p_ (at its opening quote).
  bool skip_string() {
    ++p_;
    while (p_ < end_) {
      const void* at = std::memchr(p_, '"', static_cast<size_t>(end_ - p_));
      if (at == nullptr) return false;
      const char* quote = static_cast<const char*>(at);
      // The quote ends the string unless an odd run of backslashes escapes it.
      size_t backslashes = 0;
      for (const char* b = quote; b > p_ && b[-1] == '\\'; --b) ++backslashes;
      p_ = quote + 1;
      if (backslashes % 2 == 0) return true;
    }
    return false;
  }

  // Past the value at p_.
  bool skip_value() {
    ws();
    if (p_ >= end_) return false;
    if (*p_ == '"') return skip_string();
    if (*p_ != '{' && *p_ != '[') {
      while (p_ < end_ && *p_ != ',' && *p_ != '}' && *p_ != ']' && *p_ != ' ' && *p_ != '\t' &&
             *p_ != '\n' && *p_ != '\r')
        ++p_;
      return true;
    }
    int depth = 0;
    while (p_ < end_) {
      const char c = *p_;
      if (c == '"') {
        if (!skip_string()) return false;
        continue;
      }
      ++p_;
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return true;
      }
    }
    return false;
  }

  // The object at p_, its kept members copied out.
  bool object(const TextCut& cut) {
    ++p_;
    out_.push_back('{');
    bool first = true;
    ws();
    if (p_ < end_ && *p_ == '}') {
      ++p_;
      out_.push_back('}');
      return true;
    }
    for (;;) {
      ws();
      if (p_ >= end_ || *p_ != '"') return false;
      const char* key_start = p_;
      if (!skip_string()) return false;
      const std::string_view quoted(key_start, static_cast<size_t>(p_ - key_start));
      const std::string_view name = quoted.substr(1, quoted.size() - 2);
      ws();
      if (p_ >= end_ || *p_ != ':') return false;
      ++p_;
      ws();
      static const TextCut kWhole;
      const TextCut* kept = name.find('\\') != std::string_view::npos ? &kWhole : cut.find(name);
      if (kept == nullptr) {
        if (!skip_value()) return false;
      } else {
        if (!first) out_.push_back(',');
        first = false;
        out_.append(quoted);
        out_.push_back(':');
        if (!kept->members.empty() && p_ < end_ && *p_ == '{') {
          if (!object(*kept)) return false;
        } else {
          const char* value_start = p_;
          if (!skip_value()) return false;
          out_.append(value_start, p_);
        }
      }
      ws();
      if (p_ >= end_) return false;
      if (*p_ == ',') {
        ++p_;
        continue;
      }
      if (*p_ != '}') return false;
      ++p_;
      out_.push_back('}');
      return true;
    }
  }

  const char* p_;
  const char* end_;
  std::string& out_;
};

}  // namespace

std::string cut_text(std::string_view text, const TextCut& cut) {
  std::string out;
  out.reserve(text.size() / 4);
  if (!Cutter(text, out).whole(cut)) return std::string(text);
  return out;
}

}  // namespace hb::kube
