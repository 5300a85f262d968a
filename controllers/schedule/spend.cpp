#include "controllers/schedule/spend.h"

#include <chrono>
#include <cstdio>

namespace hb::schedule {

std::string spend_period(TimePoint t) {
  const std::chrono::year_month_day ymd{std::chrono::floor<std::chrono::days>(t)};
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d-%02u", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()));
  return buf;
}

TimePoint start_of_next_period(TimePoint t) {
  using namespace std::chrono;
  const year_month_day ymd{floor<days>(t)};
  const year_month next = year_month{ymd.year(), ymd.month()} + months{1};
  return sys_days{next / day{1}};
}

int64_t spend_in_current_period(std::string_view recorded_period, int64_t recorded_cents,
                                TimePoint now) {
  return recorded_period == spend_period(now) ? recorded_cents : 0;
}

}  // namespace hb::schedule
