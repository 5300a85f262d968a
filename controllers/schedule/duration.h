// Go-style duration strings ("30s", "5m", "1h", "2h30m") limited to h, m, s.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "controllers/schedule/parse_result.h"

namespace hb::schedule {

// The shortest heartbeat interval: below this a heartbeat costs more in API
// writes and LLM calls than it can be worth.
inline constexpr int64_t kIntervalSecondsMin = 30;

// Ten years (87600h). Far above any sensible interval, and far enough from the
// limits of a nanosecond time_point that slot arithmetic can never overflow.
inline constexpr int64_t kDurationSecondsMax = int64_t{87600} * 3600;

// Parses "<n>h<n>m<n>s" with each part optional but at least one present,
// units in that order and each at most once (so "1h0m30s" but not "30s1h"),
// non-negative integers only. "0" alone is accepted, as in Go. Errors start
// with `field` and the quoted input, e.g.
//   heartbeat.interval "5x": unknown unit 'x'; use a duration like 30s, 5m, 1h or 2h30m
ParseResult<int64_t> parse_duration_seconds(std::string_view text, std::string_view field);

// The minimum is a separate check so that callers parsing other durations can
// reuse the parser. Returns an error naming `field`, or nullopt when fine.
std::optional<std::string> check_duration_min(std::string_view field, int64_t seconds,
                                              int64_t min_seconds = kIntervalSecondsMin);

// Canonical form for messages and status: 9000 -> "2h30m", 45 -> "45s", 0 -> "0s".
std::string format_duration(int64_t seconds);

}  // namespace hb::schedule
