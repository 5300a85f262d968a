// The model provider's failure, by kind (each maps to a stop reason).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "runner/clock.h"

namespace hb::runner {

// The model provider could not give an answer (after retries).
class ProviderError : public std::runtime_error {
 public:
  enum class Kind {
    kHttpStatus,   // non-retryable status, or retries used up
    kQuota,        // insufficient_quota, or a 429 asking for a longer wait than the run has
    kTimeout,      // every attempt timed out, or no time left before the deadline
    kTransport,    // connection refused, DNS, TLS
    kBadResponse,  // 2xx whose body is not the wire format
    kCancelled,    // SIGTERM aborted the call
  };
  ProviderError(Kind kind, int status, const std::string& message,
                std::optional<TimePoint> reset_at = std::nullopt)
      : std::runtime_error(message), kind_(kind), status_(status), reset_at_(reset_at) {}
  Kind kind() const { return kind_; }
  int status() const { return status_; }  // 0 when no HTTP answer
  // kQuota: when the provider said to come back (its retry-after), if it did.
  std::optional<TimePoint> reset_at() const { return reset_at_; }

 private:
  Kind kind_;
  int status_;
  std::optional<TimePoint> reset_at_;
};

}  // namespace hb::runner
