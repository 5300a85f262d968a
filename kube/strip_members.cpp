#include "kube/strip_members.h"

namespace hb::kube {

int strip_string_members(std::string& text, std::string_view key) {
  std::string pattern;
  pattern.reserve(key.size() + 4);
  pattern.append("\"").append(key).append("\":\"");
  int removed = 0;
  size_t from = 0;
  while (true) {
    const size_t at = text.find(pattern, from);
    if (at == std::string::npos) return removed;
    from = at + 1;
    // A member starts right after `{` or `,`; anything else is not one.
    if (at == 0 || (text[at - 1] != '{' && text[at - 1] != ',')) continue;
    size_t i = at + pattern.size();
    while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
    if (i >= text.size()) return removed;  // unterminated: not ours to judge
    size_t begin = at, end = i + 1;
    if (text[at - 1] == ',') {
      begin = at - 1;
    } else if (end < text.size() && text[end] == ',') {
      ++end;
    }
    text.erase(begin, end - begin);
    from = begin;
    ++removed;
  }
}

}  // namespace hb::kube
