#include "controllers/model/text_util.h"

#include "api/hb_assert.h"

namespace hb::controllers {

std::string camel_case(std::string_view snake) {
  std::string out;
  bool upper = true;
  for (char c : snake) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum) {
      upper = true;
      continue;
    }
    if (out.empty() && c >= '0' && c <= '9') out.push_back('R');
    out.push_back(upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c);
    upper = false;
  }
  if (out.empty()) return "Unknown";
  HB_ASSERT_MSG(out.front() >= 'A' && out.front() <= 'Z',
                "a reason starts with a capital letter (the CRD's pattern)");
  return out;
}

namespace {
constexpr std::string_view kBlankChars = " \t\r\n\f\v";
}  // namespace

bool is_blank(std::string_view text) {
  return text.find_first_not_of(kBlankChars) == std::string_view::npos;
}

std::string_view trim_blank(std::string_view text) {
  const std::size_t first = text.find_first_not_of(kBlankChars);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kBlankChars) - first + 1);
}

}  // namespace hb::controllers
