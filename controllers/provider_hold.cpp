#include "controllers/provider_hold.h"

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

TimePoint provider_hold_until(std::optional<TimePoint> reset_at, TimePoint finished) {
  if (!reset_at || *reset_at <= finished) return finished + kProviderHoldDefault;
  return std::min<TimePoint>(*reset_at, finished + kProviderHoldMax);
}

std::string provider_credential(const Json& agent) {
  // Fields joined by a byte no URL, name or key holds.
  return string_at(agent, "metadata/namespace") + '\n' + endpoint_of(agent) + '\n' +
         secret_of(agent);
}

std::string provider_hold_message(const std::string& credential, const std::string& run_name,
                                  const std::string& run_agent) {
  // namespace '\n' endpoint '\n' secret: a namespace never holds the byte
  // and the Secret's part comes last, so a baseURL holding it stays whole.
  const size_t first = credential.find('\n');
  const size_t last = credential.rfind('\n');
  const bool whole = first != std::string::npos && last > first;
  const std::string endpoint = whole ? credential.substr(first + 1, last - first - 1) : credential;
  const std::string secret = whole ? credential.substr(last + 1) : "an unknown key";
  return "the model provider's quota for " + endpoint + " with " + secret +
         " is spent (HeartbeatRun " + run_name + " of Agent " + run_agent +
         " ended with stopReason provider_quota)";
}

}  // namespace hb::controllers
