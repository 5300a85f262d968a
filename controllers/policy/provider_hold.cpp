#include "controllers/policy/provider_hold.h"

#include <charconv>

#include "api/hb_assert.h"

namespace hb::controllers {

namespace {

std::string endpoint_of(const Json& agent) {
  const std::string base_url = string_at(agent, "spec/model/baseURL");
  if (!base_url.empty()) return base_url;
  return "the " + string_at(agent, "spec/model/provider", "openai") + " default endpoint";
}

std::string secret_of(const Json& agent) {
  const std::string name = string_at(agent, "spec/model/apiKeySecretRef/name");
  if (name.empty()) return "no API key";
  return "Secret " + name + " key " + string_at(agent, "spec/model/apiKeySecretRef/key");
}

}  // namespace

// A hold without a reset time is one the bound allows.
static_assert(kProviderHoldDefault > std::chrono::minutes{0} &&
              kProviderHoldDefault <= kProviderHoldMax);

TimePoint provider_hold_until(std::optional<TimePoint> reset_at, TimePoint finished) {
  if (!reset_at || *reset_at <= finished) return finished + kProviderHoldDefault;
  const TimePoint until = std::min<TimePoint>(*reset_at, finished + kProviderHoldMax);
  HB_ASSERT_MSG(until > finished && until <= finished + kProviderHoldMax,
                "a provider hold ends after the run and within its bound");
  return until;
}

ProviderCredential::ProviderCredential(std::string_view ns, std::string_view endpoint,
                                       std::string_view secret) {
  for (std::string_view part : {ns, endpoint, secret}) {
    bytes_ += std::to_string(part.size());
    bytes_ += ':';
    bytes_ += part;
  }
  HB_ASSERT_MSG(bytes_.size() >= ns.size() + endpoint.size() + secret.size() + 6,
                "each part is kept whole behind its length");
}

std::string_view ProviderCredential::part(int index) const {
  HB_ASSERT_MSG(index >= 0 && index < 3, "a credential is a namespace, an endpoint and a secret");
  std::string_view rest = bytes_;
  for (int i = 0;; ++i) {
    const size_t colon = rest.find(':');
    if (colon == std::string_view::npos) return {};  // default-constructed
    size_t length = 0;
    std::from_chars(rest.data(), rest.data() + colon, length);  // our own digits
    const std::string_view here = rest.substr(colon + 1, length);
    if (i == index) return here;
    rest.remove_prefix(colon + 1 + here.size());
  }
}

ProviderCredential provider_credential(const Json& agent) {
  const std::string endpoint = endpoint_of(agent);
  const std::string secret = secret_of(agent);
  ProviderCredential credential(string_at(agent, "metadata/namespace"), endpoint, secret);
  HB_ASSERT_MSG(credential.endpoint() == endpoint && credential.secret() == secret,
                "each part of a credential reads back whole");
  return credential;
}

std::string provider_hold_message(const ProviderCredential& credential, const std::string& run_name,
                                  const std::string& run_agent) {
  return "the model provider's quota for " + std::string(credential.endpoint()) + " with " +
         std::string(credential.secret()) + " is spent (HeartbeatRun " + run_name + " of Agent " +
         run_agent + " ended with stopReason provider_quota)";
}

}  // namespace hb::controllers
