// Daily spend periods (spec.budget.dailyCents): a calendar day in an IANA
// time zone, UTC when none is set. A day's key names its zone too
// ("2026-12-06@Europe/Berlin"), so spend counted by the days of different
// zones (an agent's and each of its policies') never mixes.
#pragma once

#include <string>
#include <string_view>

#include "controllers/schedule/utc_time.h"

namespace date {
class time_zone;
}

namespace hb::schedule {

inline constexpr std::string_view kUtcZoneName = "UTC";
// How long a day's spend is kept after it began in UTC: the longest day
// any zone still has open (UTC-12 ... UTC+14) plus one more.
inline constexpr std::chrono::hours kSpendDaysKept{72};

// "YYYY-MM-DD@<zone>" of t in `zone` (nullptr: UTC).
std::string spend_day(TimePoint t, const date::time_zone* zone);
// The key of the day `date` ("YYYY-MM-DD") in the zone named `zone`: the
// one place the key's form is written.
std::string day_key(std::string_view date, std::string_view zone);
// The first instant of the next local day in `zone` (nullptr: UTC): when
// that day's spend stops counting.
TimePoint start_of_next_day(TimePoint t, const date::time_zone* zone);
// A day key's date ("YYYY-MM-DD") and zone name; empty when `key` is not one.
std::string_view day_of_key(std::string_view key);
std::string_view zone_of_key(std::string_view key);
// Whether a key of that form names a day older than what kSpendDaysKept
// keeps at `now` (months and malformed keys: false).
bool day_expired(std::string_view key, TimePoint now);

}  // namespace hb::schedule
