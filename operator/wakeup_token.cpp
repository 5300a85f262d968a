#include "operator/wakeup_token.h"

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
