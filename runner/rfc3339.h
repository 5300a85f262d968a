// RFC 3339 timestamps ("2024-05-01T12:00:00Z", "…T12:00:00.25+02:00").
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runner/clock.h"

namespace hb::runner {

std::optional<TimePoint> parse_rfc3339(std::string_view text);
// UTC with a "Z"; milliseconds only when non-zero.
std::string format_rfc3339(TimePoint time);

}  // namespace hb::runner
