#include "controllers/schedule/duration.h"

#include <cctype>
#include <iterator>
#include <limits>

#include "api/hb_assert.h"

namespace hb::schedule {
namespace {

constexpr std::string_view kDurationHint = "; use a duration like 30s, 5m, 1h or 2h30m";

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_letter(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0;
}

ParseResult<int64_t> fail(std::string_view field, std::string_view text, std::string_view problem) {
  HB_ASSERT_MSG(!problem.empty(), "every failure names its problem");
  std::string message;
  message.append(field).append(" \"").append(text).append("\": ").append(problem);
  message.append(kDurationHint);
  return ParseResult<int64_t>::failure(std::move(message));
}

constexpr int64_t kSecondsPerUnit[] = {3600, 60, 1};

// Position in the h, m, s order, or -1 for a unit we do not accept.
int unit_rank(std::string_view unit) {
  // A rank indexes kSecondsPerUnit: h, m, s, each 60 of the next.
  static_assert(std::size(kSecondsPerUnit) == 3 && kSecondsPerUnit[2] == 1 &&
                kSecondsPerUnit[1] == 60 * kSecondsPerUnit[2] &&
                kSecondsPerUnit[0] == 60 * kSecondsPerUnit[1]);
  if (unit == "h") return 0;
  if (unit == "m") return 1;
  if (unit == "s") return 2;
  return -1;
}

// A number passes no further than kDurationSecondsMax before its unit
// multiplies it, nor the total before a number adds to it: neither overflows.
static_assert(kDurationSecondsMax <=
              (std::numeric_limits<int64_t>::max() - kDurationSecondsMax) / kSecondsPerUnit[0]);
static_assert(0 < kIntervalSecondsMin && kIntervalSecondsMin <= kDurationSecondsMax);

}  // namespace

ParseResult<int64_t> parse_duration_seconds(std::string_view text, std::string_view field) {
  if (text.empty()) return fail(field, text, "is empty");
  if (text == "0") return ParseResult<int64_t>::success(0);

  const std::string too_long = "longer than the maximum " + format_duration(kDurationSecondsMax);
  int64_t total = 0;
  int last_rank = -1;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == '-' || c == '+') return fail(field, text, "a sign is not allowed");
    if (!is_digit(c)) {
      return fail(field, text, std::string("expected a number at '") + c + "'");
    }
    int64_t number = 0;
    while (pos < text.size() && is_digit(text[pos])) {
      number = number * 10 + (text[pos] - '0');
      // Checked per digit, so the accumulator itself can never overflow.
      if (number > kDurationSecondsMax) return fail(field, text, too_long);
      ++pos;
    }
    if (pos < text.size() && text[pos] == '.') {
      return fail(field, text, "fractions are not supported (write 90m, not 1.5h)");
    }
    const std::size_t unit_start = pos;
    while (pos < text.size() && is_letter(text[pos])) ++pos;
    const std::string_view unit = text.substr(unit_start, pos - unit_start);
    if (unit.empty()) {
      if (pos == text.size()) {
        return fail(field, text, "missing unit after " + std::to_string(number));
      }
      return fail(field, text, std::string("unexpected character '") + text[pos] + "'");
    }
    const int rank = unit_rank(unit);
    if (rank < 0) {
      if (unit == "ms" || unit == "us" || unit == "ns") {
        return fail(field, text,
                    "unit '" + std::string(unit) + "' is not supported; the smallest unit is s");
      }
      return fail(field, text, "unknown unit '" + std::string(unit) + "'");
    }
    if (rank <= last_rank) {
      return fail(field, text, "units must appear at most once each, in the order h, m, s");
    }
    last_rank = rank;
    total += number * kSecondsPerUnit[rank];
    if (total > kDurationSecondsMax) return fail(field, text, too_long);
  }
  HB_ASSERT_MSG(total >= 0 && total <= kDurationSecondsMax && last_rank >= 0,
                "a parsed duration has a unit and lies within its bounds");
  return ParseResult<int64_t>::success(total);
}

std::optional<std::string> check_duration_min(std::string_view field, int64_t seconds,
                                              int64_t min_seconds) {
  HB_ASSERT_MSG(min_seconds > 0, "a minimum is a positive duration");
  if (seconds >= min_seconds) return std::nullopt;
  std::string message;
  message.append(field).append(" ").append(format_duration(seconds));
  message.append(" is shorter than the minimum ").append(format_duration(min_seconds));
  return message;
}

std::string format_duration(int64_t seconds) {
  if (seconds == 0) return "0s";
  if (seconds < 0) return "-" + format_duration(-seconds);
  const int64_t h = seconds / 3600;
  const int64_t m = seconds % 3600 / 60;
  const int64_t s = seconds % 60;
  std::string out;
  if (h > 0) out += std::to_string(h) + "h";
  if (m > 0) out += std::to_string(m) + "m";
  if (s > 0) out += std::to_string(s) + "s";
  HB_ASSERT_MSG(!out.empty() && h * 3600 + m * 60 + s == seconds,
                "the text adds up to the duration");
  return out;
}

}  // namespace hb::schedule
