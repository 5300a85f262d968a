// RFC 3339 timestamps as both sides read and write them: Kubernetes times
// ("2024-05-01T12:00:00Z", MicroTime "…T12:00:00.250000Z") and the times in the
// context document and the result ("…T12:00:00.25+02:00"). Pure.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace hb::api {

// Unix time (UTC without leap seconds), exactly what Kubernetes times are.
using TimePoint = std::chrono::system_clock::time_point;

// YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM), 'T' and 'Z' in either case; nullopt
// when malformed or outside kTimestampYearMin..kTimestampYearMax
// (api/time_bounds.h). Fractions past nanoseconds are ignored.
std::optional<TimePoint> parse_rfc3339(std::string_view text);
// UTC with a "Z"; milliseconds only when non-zero.
std::string format_rfc3339_millis(TimePoint time);
// MicroTime as a Lease wants it: "2024-05-01T12:00:00.000000Z".
std::string format_micro_time(TimePoint time);

}  // namespace hb::api
