// Time types and formatting shared by the schedule code. Everything is UTC.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace hb::schedule {

// Since C++20 system_clock is Unix time (UTC without leap seconds), which is
// exactly what Kubernetes timestamps are. Callers pass `now`; nothing here
// reads a clock.
using TimePoint = std::chrono::system_clock::time_point;

// Seconds since the Unix epoch, rounded towards the past.
int64_t unix_seconds(TimePoint t);

// RFC 3339 in UTC with second precision, as Kubernetes writes timestamps:
// "2024-02-29T12:00:00Z". Sub-second parts are dropped.
std::string format_rfc3339(TimePoint t);

// The same into `out` (kRfc3339Size bytes, not terminated) without allocating;
// returns the length, kRfc3339Size.
inline constexpr std::size_t kRfc3339Size = 20;
std::size_t format_rfc3339(TimePoint t, char* out);

}  // namespace hb::schedule
