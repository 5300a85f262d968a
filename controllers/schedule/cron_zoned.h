// Cron in an IANA time zone, with the daylight-saving rules users expect of
// CronJob's timeZone:
//  - a local time the clocks skip (spring forward) runs once, at the first
//    valid instant after the gap (the moment the clocks jump);
//  - a local time that happens twice (fall back) runs once, at its first
//    occurrence; the repeated hour does not fire again.
// Both search offset by offset: within a span where the zone's UTC offset
// is constant, local time is UTC shifted, so the UTC searches do the work.
#pragma once

#include <optional>

#include "controllers/schedule/cron.h"

namespace hb::schedule {

// How many spans of constant offset a search crosses before giving up: two
// a year for kCronSearchYearsMax years, with room for zones that changed
// their rules in between.
inline constexpr int kZoneSpansSearchedMax = 4 * kCronSearchYearsMax + 8;

// As next_after and latest_at_or_before, for cron.zone != nullptr.
std::optional<TimePoint> next_after_zoned(const CronSchedule& cron, TimePoint t);
std::optional<TimePoint> latest_at_or_before_zoned(const CronSchedule& cron, TimePoint t);

}  // namespace hb::schedule
