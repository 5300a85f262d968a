#include "controllers/schedule/spend_day.h"

#include <date/tz.h>

#include <chrono>
#include <cstdio>

#include "api/hb_assert.h"

namespace hb::schedule {

namespace {

constexpr std::size_t kDateBytes = 10;  // "YYYY-MM-DD"

std::string format_date(std::chrono::year_month_day ymd) {
  HB_ASSERT_MSG(ymd.ok(), "a date from a time point is a real date");
  char text[32];
  std::snprintf(text, sizeof text, "%04d-%02u-%02u", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
  return text;
}

// The local day of t in `zone`, counted as days since 1970-01-01 local.
std::chrono::sys_days local_day(TimePoint t, const date::time_zone* zone) {
  using namespace std::chrono;
  HB_ASSERT_MSG(zone != nullptr, "UTC days are counted without a zone");
  const auto local = zone->to_local(time_point_cast<seconds>(t));
  return sys_days{floor<days>(local.time_since_epoch())};
}

}  // namespace

std::string day_key(std::string_view date, std::string_view zone) {
  std::string key(date);
  key += '@';
  key += zone;
  return key;
}

std::string spend_day(TimePoint t, const date::time_zone* zone) {
  using namespace std::chrono;
  std::string key = zone == nullptr
                        ? day_key(format_date(year_month_day{floor<days>(t)}), kUtcZoneName)
                        : day_key(format_date(year_month_day{local_day(t, zone)}), zone->name());
  HB_ASSERT_MSG(!zone_of_key(key).empty(), "a day key reads back as its day and its zone");
  return key;
}

TimePoint start_of_next_day(TimePoint t, const date::time_zone* zone) {
  using namespace std::chrono;
  if (zone == nullptr) return sys_days{floor<days>(t)} + days{1};
  const sys_days tomorrow = local_day(t, zone) + days{1};
  // A midnight the clocks skip starts the day when they jump (earliest).
  const date::local_seconds local{duration_cast<seconds>(tomorrow.time_since_epoch())};
  const TimePoint next = zone->to_sys(local, date::choose::earliest);
  HB_ASSERT(next > t);
  return next;
}

std::string_view day_of_key(std::string_view key) {
  const std::size_t at = key.find('@');
  if (at != kDateBytes || key.size() == at + 1) return {};
  HB_ASSERT(at < key.size());
  return key.substr(0, at);
}

std::string_view zone_of_key(std::string_view key) {
  if (day_of_key(key).empty()) return {};
  return key.substr(kDateBytes + 1);
}

bool day_expired(std::string_view key, TimePoint now) {
  using namespace std::chrono;
  const std::string_view day = day_of_key(key);
  if (day.empty()) return false;
  const std::string oldest = format_date(year_month_day{floor<days>(now - kSpendDaysKept)});
  HB_ASSERT_MSG(day.size() == oldest.size() || oldest.size() != kDateBytes,
                "days compare as text only at the same width");
  return day < std::string_view(oldest);
}

}  // namespace hb::schedule
