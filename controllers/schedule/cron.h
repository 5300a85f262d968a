// Five-field cron expressions (minute hour day-of-month month day-of-week),
// evaluated in UTC or in an IANA time zone (cron_zoned.h has the DST rules).
#pragma once

#include <bitset>
#include <optional>
#include <string>
#include <string_view>

#include "controllers/schedule/parse_result.h"
#include "controllers/schedule/utc_time.h"

namespace date {
class time_zone;
}

namespace hb::schedule {

// How far next_after / latest_at_or_before look before giving up. Eight, not
// the five of robfig/cron, because "0 0 29 2 *" fires on Feb 29 and leap days
// can be eight years apart (2096 -> 2104, as 2100 is no leap year).
inline constexpr int kCronSearchYearsMax = 8;

struct CronSchedule {
  std::bitset<60> minutes;        // 0-59
  std::bitset<24> hours;          // 0-23
  std::bitset<32> days_of_month;  // 1-31; bit 0 unused
  std::bitset<13> months;         // 1-12; bit 0 unused
  std::bitset<7> days_of_week;    // 0-6, Sunday = 0 (7 is folded onto 0)
  // Vixie cron: a day field that starts with '*' does not restrict the day.
  // Only when neither does, a day matches if EITHER field matches.
  bool dom_star = false;
  bool dow_star = false;
  std::string text;  // as written, for messages
  // The fields name local times of this zone (time_zone.h); null: UTC.
  const date::time_zone* zone = nullptr;
};

// Accepts `*`, numbers, ranges `a-b`, steps `*/n`, `a-b/n` and `a/n` (= a-max/n,
// as Kubernetes CronJob accepts), lists `a,b,c`, names JAN-DEC and SUN-SAT
// (any case), 0 or 7 for Sunday, and the macros @hourly, @daily, @midnight,
// @weekly, @monthly, @yearly, @annually. Errors start with `field` and the
// quoted input and name the cron field and value, e.g.
//   schedule "61 * * * *": minute 61 out of range 0-59
// A schedule that can never fire ("0 0 30 2 *") parses; see can_ever_match.
//
// Jenkins' H spreads a fleet: `H`, `H/n`, `H(a-b)` and `H(a-b)/n` stand for a
// value (or a start) that is a stable hash of `hash_key` (the Agent's
// "namespace/name"), different per field, so each agent keeps its minute
// forever and a fleet on "H * * * *" does not fire as one herd. A bare H in
// day-of-month picks 1-28 (a day every month has), in day-of-week 0-6.
ParseResult<CronSchedule> parse_cron(std::string_view text, std::string_view field = "schedule",
                                     std::string_view hash_key = {});

// Whether the minute containing t matches (in UTC; the zone is not applied).
bool cron_matches(const CronSchedule& cron, TimePoint t);

// The first matching minute strictly after t; nullopt when none lies within
// kCronSearchYearsMax years (an impossible date such as Feb 30).
std::optional<TimePoint> next_after(const CronSchedule& cron, TimePoint t);

// The last matching minute at or before t, searching at most
// kCronSearchYearsMax years back. Finds the most recent missed slot directly,
// so a long downtime never means iterating over every slot in between.
std::optional<TimePoint> latest_at_or_before(const CronSchedule& cron, TimePoint t);

// The same searches reading the fields as UTC whatever the zone; the zoned
// searches (cron_zoned.h) are built on them.
std::optional<TimePoint> next_after_in_utc(const CronSchedule& cron, TimePoint t);
std::optional<TimePoint> latest_at_or_before_in_utc(const CronSchedule& cron, TimePoint t);

// False for schedules that restrict only the day of month to days no chosen
// month has ("0 0 30 2 *", "0 0 31 4,6 *"). Exact, without searching.
bool can_ever_match(const CronSchedule& cron);

}  // namespace hb::schedule
