#include "runner/rfc3339.h"

#include <cctype>
#include <cstdio>

#include "api/time_bounds.h"

namespace hb::runner {
namespace {

bool digits(std::string_view s, std::size_t pos, std::size_t count, int& out) {
  if (pos + count > s.size()) return false;
  int value = 0;
  for (std::size_t i = pos; i < pos + count; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    value = value * 10 + (s[i] - '0');
  }
  out = value;
  return true;
}

}  // namespace

std::optional<TimePoint> parse_rfc3339(std::string_view s) {
  int year, month, day, hour, minute, second;
  if (!digits(s, 0, 4, year) || s.size() < 20 || s[4] != '-' || !digits(s, 5, 2, month) ||
      s[7] != '-' || !digits(s, 8, 2, day) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
      !digits(s, 11, 2, hour) || s[13] != ':' || !digits(s, 14, 2, minute) || s[16] != ':' ||
      !digits(s, 17, 2, second)) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  std::chrono::nanoseconds fraction{0};
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    long long scale = 100000000;
    std::size_t start = pos;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
      fraction += std::chrono::nanoseconds((s[pos] - '0') * scale);
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  if (pos >= s.size()) return std::nullopt;
  std::chrono::minutes offset{0};
  if (s[pos] == 'Z' || s[pos] == 'z') {
    ++pos;
  } else if (s[pos] == '+' || s[pos] == '-') {
    int oh, om;
    if (!digits(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !digits(s, pos + 4, 2, om)) {
      return std::nullopt;
    }
    offset = std::chrono::hours(oh) + std::chrono::minutes(om);
    if (s[pos] == '-') offset = -offset;
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  if (year < api::kTimestampYearMin || year > api::kTimestampYearMax) return std::nullopt;
  std::chrono::year_month_day ymd{std::chrono::year(year), std::chrono::month(month),
                                  std::chrono::day(day)};
  if (!ymd.ok()) return std::nullopt;
  auto time = std::chrono::sys_days(ymd) + std::chrono::hours(hour) + std::chrono::minutes(minute) +
              std::chrono::seconds(second) + fraction - offset;
  return std::chrono::time_point_cast<TimePoint::duration>(time);
}

std::string format_rfc3339(TimePoint time) {
  auto days = std::chrono::floor<std::chrono::days>(time);
  std::chrono::year_month_day ymd{days};
  std::chrono::hh_mm_ss hms{std::chrono::floor<std::chrono::milliseconds>(time - days)};
  char buffer[40];
  auto millis = hms.subseconds().count();
  if (millis != 0) {
    std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ",
                  static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                  static_cast<unsigned>(ymd.day()), static_cast<int>(hms.hours().count()),
                  static_cast<int>(hms.minutes().count()), static_cast<int>(hms.seconds().count()),
                  static_cast<int>(millis));
  } else {
    std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02dZ",
                  static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                  static_cast<unsigned>(ymd.day()), static_cast<int>(hms.hours().count()),
                  static_cast<int>(hms.minutes().count()), static_cast<int>(hms.seconds().count()));
  }
  return buffer;
}

}  // namespace hb::runner
