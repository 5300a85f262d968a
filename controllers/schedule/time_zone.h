// IANA time zones for cron schedules (spec.heartbeat.timeZone) and daily
// budgets (a HeartbeatPolicy's spec.timeZone), from the
// OS tzdata through date-tz. The table is read once, on the first lookup,
// and is as constant as the code; the images carry tzdata.
#pragma once

#include <string_view>

#include "controllers/schedule/parse_result.h"

namespace date {
class time_zone;
}

namespace hb::schedule {

inline constexpr std::string_view kTimeZoneField = "spec.heartbeat.timeZone";
// The longest IANA name is 32 bytes (America/Argentina/ComodRivadavia).
inline constexpr std::size_t kTimeZoneNameBytesMax = 64;
static_assert(kTimeZoneNameBytesMax >= 32, "the longest IANA name passes the length check");

// nullptr for "" and "UTC" (evaluated in UTC as before); else the zone, or
// an error naming the field and the fix. Names are checked before the
// lookup: IANA characters only, no "..", no leading '/', so a manifest can
// never name a file outside the tzdata.
// `field` is what the error names (a policy's spec.timeZone).
ParseResult<const date::time_zone*> find_time_zone(std::string_view name,
                                                   std::string_view field = kTimeZoneField);

}  // namespace hb::schedule
