#pragma once
// The wakeup endpoint's bearer token, read from a Secret and re-read every
// minute. A read is an API call that can hang for the client's timeout: it is
// made outside the lock by one caller while every other caller answers with
// the token read before, so a slow API server never queues wakeup requests.
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "controllers/json_util.h"
#include "kube/errors.h"

namespace hb::operator_ {

inline constexpr std::chrono::seconds kWakeupTokenRereadInterval{60};

// The token in a Secret's data/token (base64), trailing newlines dropped
// (`kubectl create secret --from-file` keeps them). nullopt when absent/empty.
std::optional<std::string> wakeup_token_from_secret(const controllers::Json& secret);

// The cache: one token (a bounded cache of one value), re-read once it is
// older than kWakeupTokenRereadInterval by the injected clock.
class WakeupToken {
 public:
  using Clock = std::chrono::steady_clock;
  // Reads the token (I/O); nullopt when the Secret is missing or unreadable.
  using Read = std::function<std::optional<std::string>()>;
  using Now = std::function<Clock::time_point()>;

  explicit WakeupToken(Read read, Now now = Clock::now);

  // The current token; re-read when the last read is older than the interval.
  std::optional<std::string> get();

 private:
  Read read_;
  Now now_;
  std::mutex mutex_;  // guards the members below, never held across read_()
  std::optional<std::string> token_;
  std::optional<Clock::time_point> read_at_;
  bool reading_ = false;
};

// A WakeupToken::Read of the Secret ns/name through `get_secret` (an API
// GET). A Secret that cannot be read is logged (never its data) and means no
// token; an empty name means none configured (nothing is read).
using GetSecret =
    std::function<kube::Result<controllers::Json>(const std::string& ns, const std::string& name)>;
WakeupToken::Read wakeup_token_reader(GetSecret get_secret, std::string ns, std::string name);

}  // namespace hb::operator_
