#include "operator/wakeup_token.h"

#include <spdlog/spdlog.h>

#include "kube/kubeconfig.h"

namespace hb::operator_ {

std::optional<std::string> wakeup_token_from_secret(const controllers::Json& secret) {
  const std::string encoded = controllers::string_at(secret, "data/token");
  if (encoded.empty()) return std::nullopt;
  std::string token = kube::base64_decode(encoded);
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  if (token.empty()) return std::nullopt;
  return token;
}

WakeupToken::Read wakeup_token_reader(GetSecret get_secret, std::string ns, std::string name) {
  return [get_secret = std::move(get_secret), ns = std::move(ns),
          name = std::move(name)]() -> std::optional<std::string> {
    if (name.empty()) return std::nullopt;
    const kube::Result<controllers::Json> secret = get_secret(ns, name);
    if (!secret.ok()) {
      spdlog::warn("event=wakeup_token_unreadable secret={}/{} error=\"{}\"", ns, name,
                   secret.error().describe());
      return std::nullopt;
    }
    return wakeup_token_from_secret(secret.value());
  };
}

WakeupToken::WakeupToken(Read read, Now now) : read_(std::move(read)), now_(std::move(now)) {}

std::optional<std::string> WakeupToken::get() {
  {
    std::lock_guard lock(mutex_);
    const bool fresh = read_at_ && now_() - *read_at_ < kWakeupTokenRereadInterval;
    if (fresh || reading_) return token_;
    reading_ = true;
  }
  std::optional<std::string> token;
  try {
    token = read_();
  } catch (const std::exception&) {
    token.reset();  // a reader's error is its own to log; unreadable means no token
  }
  std::lock_guard lock(mutex_);
  token_ = std::move(token);
  read_at_ = now_();
  reading_ = false;
  return token_;
}

}  // namespace hb::operator_
