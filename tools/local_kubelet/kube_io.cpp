#include "tools/local_kubelet/kube_io.h"

#include <chrono>
#include <ctime>
#include <stdexcept>

#include "kube/kubeconfig.h"

namespace hb::local_kubelet {

constexpr const char* kTokenSecretType = "kubernetes.io/service-account-token";

std::optional<nlohmann::json> get_if_exists(kube::Client& client, const kube::Resource& resource,
                                            const std::string& ns, const std::string& name) {
  try {
    return client.get(resource, ns, name).or_throw();
  } catch (const kube::ApiError& error) {
    if (error.kind() == kube::ErrorKind::kNotFound) return std::nullopt;
    throw;
  }
}

std::optional<std::string> service_account_token(kube::Client& client, const std::string& ns,
                                                 const std::string& account) {
  auto sa = get_if_exists(client, kube::resources::kServiceAccounts, ns, account);
  if (!sa) return std::nullopt;
  auto secrets = sa->find("secrets");
  if (secrets == sa->end() || !secrets->is_array()) return std::nullopt;
  for (const auto& ref : *secrets) {
    const std::string name = ref.value("name", "");
    if (name.empty()) continue;
    auto secret = get_if_exists(client, kube::resources::kSecrets, ns, name);
    if (!secret || secret->value("type", "") != kTokenSecretType) continue;
    const std::string token = secret->value(nlohmann::json::json_pointer("/data/token"), "");
    if (token.empty()) continue;
    kube::Result<std::string> decoded = kube::base64_decode(token);
    if (!decoded.ok()) {
      throw std::runtime_error("Secret " + ns + "/" + name +
                               " data/token: " + decoded.error().describe());
    }
    return std::move(decoded).value();
  }
  return std::nullopt;
}

std::string now_rfc3339() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

}  // namespace hb::local_kubelet
