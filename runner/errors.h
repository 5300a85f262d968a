// The model provider's failure, by kind (each maps to a stop reason).
#pragma once

#include <optional>
#include <string>

#include "runner/clock.h"

namespace hb::runner {

// Why the model provider gave no answer (after retries): a value, by kind.
class ProviderError {
 public:
  enum class Kind {
    kHttpStatus,   // non-retryable status, or retries used up
    kQuota,        // insufficient_quota, or a 429 asking for a longer wait than the run has
    kTimeout,      // every attempt timed out, or no time left before the deadline
    kTransport,    // connection refused, DNS, TLS
    kBadResponse,  // 2xx whose body is not the wire format
    kCancelled,    // SIGTERM aborted the call
  };
  ProviderError(Kind kind, int status, std::string message,
                std::optional<TimePoint> reset_at = std::nullopt)
      : kind_(kind), status_(status), message_(std::move(message)), reset_at_(reset_at) {}
  Kind kind() const { return kind_; }
  int status() const { return status_; }  // 0 when no HTTP answer
  const char* what() const { return message_.c_str(); }
  // kQuota: when the provider said to come back (its retry-after), if it did.
  std::optional<TimePoint> reset_at() const { return reset_at_; }

 private:
  Kind kind_;
  int status_;
  std::string message_;
  std::optional<TimePoint> reset_at_;
};

}  // namespace hb::runner
