#include "api/rfc3339.h"

#include <cstdio>

#include "api/time_bounds.h"

namespace hb::api {
namespace {

bool digits(std::string_view s, std::size_t pos, std::size_t count, int& out) {
  if (pos + count > s.size()) return false;
  int value = 0;
  for (std::size_t i = pos; i < pos + count; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    value = value * 10 + (s[i] - '0');
  }
  out = value;
  return true;
}

// ".123456789…" at s[pos]: the fraction, pos moved past it; nullopt without digits.
std::optional<std::chrono::nanoseconds> fraction_at(std::string_view s, std::size_t& pos) {
  ++pos;  // the '.'
  long long nanos = 0;
  int count = 0;
  const std::size_t start = pos;
  for (; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos) {
    if (count < 9) {
      nanos = nanos * 10 + (s[pos] - '0');
      ++count;
    }
  }
  if (pos == start) return std::nullopt;
  for (int i = count; i < 9; ++i) nanos *= 10;
  return std::chrono::nanoseconds(nanos);
}

// "Z" or "±HH:MM" at s[pos], ending the text: the offset east of UTC.
std::optional<std::chrono::minutes> offset_at(std::string_view s, std::size_t pos) {
  if (pos >= s.size()) return std::nullopt;
  if (s[pos] == 'Z' || s[pos] == 'z') {
    if (pos + 1 != s.size()) return std::nullopt;
    return std::chrono::minutes(0);
  }
  if (s[pos] != '+' && s[pos] != '-') return std::nullopt;
  int hours, minutes;
  if (!digits(s, pos + 1, 2, hours) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
      !digits(s, pos + 4, 2, minutes) || pos + 6 != s.size()) {
    return std::nullopt;
  }
  std::chrono::minutes offset = std::chrono::hours(hours) + std::chrono::minutes(minutes);
  return s[pos] == '-' ? -offset : offset;
}

}  // namespace

std::optional<TimePoint> parse_rfc3339(std::string_view s) {
  int year, month, day, hour, minute, second;
  if (s.size() < 20 || !digits(s, 0, 4, year) || s[4] != '-' || !digits(s, 5, 2, month) ||
      s[7] != '-' || !digits(s, 8, 2, day) || (s[10] != 'T' && s[10] != 't') ||
      !digits(s, 11, 2, hour) || s[13] != ':' || !digits(s, 14, 2, minute) || s[16] != ':' ||
      !digits(s, 17, 2, second)) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  std::chrono::nanoseconds fraction{0};
  if (s[pos] == '.') {
    auto parsed = fraction_at(s, pos);
    if (!parsed) return std::nullopt;
    fraction = *parsed;
  }
  auto offset = offset_at(s, pos);
  if (!offset) return std::nullopt;
  // Years outside the bounds are no time either side meets (a Lease renewTime
  // in 2262 would silence the stall watchdog); they also keep every later
  // duration sum far from the clock's 2262 overflow.
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  if (year < kTimestampYearMin || year > kTimestampYearMax) return std::nullopt;
  const std::chrono::year_month_day ymd{std::chrono::year(year),
                                        std::chrono::month(static_cast<unsigned>(month)),
                                        std::chrono::day(static_cast<unsigned>(day))};
  if (!ymd.ok()) return std::nullopt;
  auto time = std::chrono::sys_days(ymd) + std::chrono::hours(hour) + std::chrono::minutes(minute) +
              std::chrono::seconds(second) + fraction - *offset;
  return std::chrono::time_point_cast<TimePoint::duration>(time);
}

std::string format_rfc3339_millis(TimePoint time) {
  auto days = std::chrono::floor<std::chrono::days>(time);
  std::chrono::year_month_day ymd{days};
  std::chrono::hh_mm_ss hms{std::chrono::floor<std::chrono::milliseconds>(time - days)};
  char buffer[40];
  int length = std::snprintf(
      buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02d", static_cast<int>(ymd.year()),
      static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
      static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
      static_cast<int>(hms.seconds().count()));
  std::string out(buffer, static_cast<std::size_t>(length));
  if (auto millis = hms.subseconds().count(); millis != 0) {
    std::snprintf(buffer, sizeof buffer, ".%03d", static_cast<int>(millis));
    out += buffer;
  }
  return out + "Z";
}

std::string format_micro_time(TimePoint time) {
  auto seconds = std::chrono::floor<std::chrono::seconds>(time);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(time - seconds).count();
  auto days = std::chrono::floor<std::chrono::days>(seconds);
  std::chrono::year_month_day ymd{days};
  std::chrono::hh_mm_ss hms{seconds - days};
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02d.%06lldZ",
                static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), static_cast<int>(hms.hours().count()),
                static_cast<int>(hms.minutes().count()), static_cast<int>(hms.seconds().count()),
                static_cast<long long>(micros));
  return buffer;
}

}  // namespace hb::api
