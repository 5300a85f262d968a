// The years a timestamp the operator or the runner reads may carry. Outside
// them a time is malformed: a Lease renewTime in 2262 would disable stall
// detection, and years past 2262 or before 1677 overflow the nanosecond clock.
#pragma once

namespace hb::api {

inline constexpr int kTimestampYearMin = 1970;
inline constexpr int kTimestampYearMax = 2200;

}  // namespace hb::api
