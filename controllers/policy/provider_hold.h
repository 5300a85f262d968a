// Quota-aware holds: a run that ended with stopReason provider_quota (the
// provider's quota is spent: insufficient_quota, or a 429 asking for a
// longer wait than a run has) holds every Agent that calls the same
// endpoint with the same API-key Secret until the provider's reset time, so
// no agent retries into the same wall. Pure.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "controllers/model/json_util.h"

namespace hb::controllers {

inline constexpr const char* kStopReasonProviderQuota = "provider_quota";
// The run's reason when it stopped on a spent quota (exit 69 otherwise says
// ProviderError, which provider backoff counts).
inline constexpr const char* kReasonProviderQuota = "ProviderQuota";
// A hold never lasts longer than this past the run's end, whatever the
// provider (or an endpoint the Agent's author runs) says.
inline constexpr std::chrono::hours kProviderHoldMax{24};
// The hold when the provider said its quota is spent but not when it resets.
inline constexpr std::chrono::minutes kProviderHoldDefault{60};

// Until when a provider_quota run ending at `finished` holds its
// credential: the provider's reset time, within (finished, finished +
// kProviderHoldMax]; without one (or one not after `finished`),
// finished + kProviderHoldDefault.
TimePoint provider_hold_until(std::optional<TimePoint> reset_at, TimePoint finished);

// What agents share a quota by: namespace, endpoint (spec.model.baseURL, or
// the provider's default) and the API-key Secret's name and key. Never the
// key itself: the operator does not read Secrets. Kept as one string (three
// cost about 1 MiB more at 10,000 agents), each part prefixed with its
// length, so no byte a URL or a key name holds makes two credentials equal.
class ProviderCredential {
 public:
  ProviderCredential() = default;
  ProviderCredential(std::string_view ns, std::string_view endpoint, std::string_view secret);
  std::string_view endpoint() const { return part(1); }
  // "Secret NAME key KEY", or "no API key".
  std::string_view secret() const { return part(2); }
  bool operator==(const ProviderCredential& other) const = default;

 private:
  std::string_view part(int index) const;
  std::string bytes_;
};

ProviderCredential provider_credential(const Json& agent);

// How a hold on `credential` is described to a person (Secret and key
// named, never read). From the credential alone, so a holder of every
// Agent's credential keeps no more of each Agent.
std::string provider_hold_message(const ProviderCredential& credential, const std::string& run_name,
                                  const std::string& run_agent);

}  // namespace hb::controllers
