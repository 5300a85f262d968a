#include "controllers/schedule/utc_time.h"

#include <type_traits>

#include "api/hb_assert.h"

namespace hb::schedule {

int64_t unix_seconds(TimePoint t) {
  // The seconds count is returned as int64_t without narrowing.
  static_assert(sizeof(std::chrono::seconds::rep) <= sizeof(int64_t) &&
                std::is_signed_v<std::chrono::seconds::rep>);
  return std::chrono::floor<std::chrono::seconds>(t).time_since_epoch().count();
}

namespace {

// Writes `value` as exactly `width` digits, most significant first.
char* put_digits(char* out, unsigned value, int width) {
  HB_ASSERT(width > 0);
  for (int i = width - 1; i >= 0; --i) {
    out[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
  HB_ASSERT_MSG(value == 0, "the value fits in width digits");
  return out + width;
}

}  // namespace

std::size_t format_rfc3339(TimePoint t, char* out) {
  using namespace std::chrono;
  const auto secs = floor<seconds>(t);
  const auto day = floor<days>(secs);
  const year_month_day ymd{day};
  const hh_mm_ss hms{secs - day};
  // A nanosecond system_clock spans 1677..2262: always four year digits.
  static_assert(std::is_same_v<TimePoint::period, std::nano>);
  const int year = static_cast<int>(ymd.year());
  HB_ASSERT(year >= 0 && year <= 9999);
  char* p = put_digits(out, static_cast<unsigned>(year), 4);
  *p++ = '-';
  p = put_digits(p, static_cast<unsigned>(ymd.month()), 2);
  *p++ = '-';
  p = put_digits(p, static_cast<unsigned>(ymd.day()), 2);
  *p++ = 'T';
  p = put_digits(p, static_cast<unsigned>(hms.hours().count()), 2);
  *p++ = ':';
  p = put_digits(p, static_cast<unsigned>(hms.minutes().count()), 2);
  *p++ = ':';
  p = put_digits(p, static_cast<unsigned>(hms.seconds().count()), 2);
  *p++ = 'Z';
  HB_ASSERT_MSG(p - out == static_cast<std::ptrdiff_t>(kRfc3339Size),
                "the caller's buffer holds exactly one timestamp");
  return static_cast<std::size_t>(p - out);
}

std::string format_rfc3339(TimePoint t) {
  char buf[kRfc3339Size];
  const std::size_t n = format_rfc3339(t, buf);
  return std::string(buf, n);
}

}  // namespace hb::schedule
