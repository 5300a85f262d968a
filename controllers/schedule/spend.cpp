#include "controllers/schedule/spend.h"

#include <chrono>
#include <cstdio>

#include "api/hb_assert.h"

namespace hb::schedule {

std::string spend_period(TimePoint t) {
  // By hand, not snprintf: every decision asks for it.
  const std::chrono::year_month_day ymd{std::chrono::floor<std::chrono::days>(t)};
  const int year = static_cast<int>(ymd.year());
  const unsigned month = static_cast<unsigned>(ymd.month());
  if (year < 0 || year > 9999) return std::to_string(year) + "-" + std::to_string(month);
  const char text[] = {static_cast<char>('0' + year / 1000),
                       static_cast<char>('0' + year / 100 % 10),
                       static_cast<char>('0' + year / 10 % 10),
                       static_cast<char>('0' + year % 10),
                       '-',
                       static_cast<char>('0' + month / 10),
                       static_cast<char>('0' + month % 10)};
  return std::string(text, sizeof text);
}

TimePoint start_of_next_period(TimePoint t) {
  using namespace std::chrono;
  const year_month_day ymd{floor<days>(t)};
  const year_month next = year_month{ymd.year(), ymd.month()} + months{1};
  const TimePoint start = sys_days{next / day{1}};
  HB_ASSERT(start > t);
  return start;
}

int64_t spend_in_current_period(std::string_view recorded_period, int64_t recorded_cents,
                                TimePoint now) {
  const std::string period = spend_period(now);
  HB_ASSERT_MSG(!period.empty(), "every time has a period");
  return recorded_period == period ? recorded_cents : 0;
}

}  // namespace hb::schedule
