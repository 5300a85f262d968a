// Monthly spend periods: spend resets each UTC calendar month.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "controllers/schedule/utc_time.h"

namespace hb::schedule {

// "YYYY-MM" of t in UTC, the value of status.spend.period.
std::string spend_period(TimePoint t);

// 00:00:00 UTC on the first day of the month after t: when spend resets.
TimePoint start_of_next_period(TimePoint t);

// Spend recorded for an older period counts as 0 once the month has turned,
// even before anyone rewrites status.spend.
int64_t spend_in_current_period(std::string_view recorded_period, int64_t recorded_cents,
                                TimePoint now);

}  // namespace hb::schedule
