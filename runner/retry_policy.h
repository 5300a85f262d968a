// When and how long to wait before retrying a model call. Pure: the caller
// passes the response headers, the clock's time and a jitter draw.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "runner/clock.h"

namespace hb::runner {

// 408, 409, 429 and every 5xx; an explicit x-should-retry header wins.
bool is_retryable_status(int status, const std::map<std::string, std::string>& headers);

// The server's hint: retry-after-ms (milliseconds, may be fractional), else
// retry-after (seconds, or an HTTP date relative to now). None when absent,
// unparsable or negative.
std::optional<Millis> parse_retry_after(const std::map<std::string, std::string>& headers,
                                        TimePoint now);

// A 429 whose hint asks for a longer wait than kRetryAfterMax, or than is
// left before the run's deadline: the provider's quota is spent for this
// run (stopReason provider_quota), not worth a retry.
bool is_quota_wait(int status, std::optional<Millis> server_hint, TimePoint now,
                   TimePoint deadline);

// Delay before retry number `retry` (0 = first retry). A server hint within
// (0, kRetryAfterMax] is used as is, a larger one is capped at kRetryAfterMax;
// otherwise exponential backoff from kRetryDelayInitial, capped at
// kRetryBackoffMax, scaled by a jitter factor in [0.75, 1.0] from jitter_unit
// in [0, 1).
Millis retry_delay(int retry, std::optional<Millis> server_hint, double jitter_unit);

}  // namespace hb::runner
