#include "operator/wakeup_token.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>

#include "controllers/model/managed_namespaces.h"
#include "kube/kubeconfig.h"

namespace hb::operator_ {

kube::Result<std::optional<std::string>> wakeup_token_from_secret(const controllers::Json& secret) {
  const std::string encoded = controllers::string_at(secret, "data/token");
  if (encoded.empty()) return std::optional<std::string>();
  HB_TRY_ASSIGN(std::string token, kube::base64_decode(encoded));
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  if (token.empty()) return std::optional<std::string>();
  return std::optional<std::string>(std::move(token));
}

namespace {

// The token of a Secret read; nullopt (logged, never the data) when its
// data/token is not base64.
std::optional<std::string> token_of(const controllers::Json& secret, const std::string& ns,
                                    const std::string& name) {
  kube::Result<std::optional<std::string>> token = wakeup_token_from_secret(secret);
  if (!token.ok()) {
    spdlog::warn("event=wakeup_token_unreadable secret={}/{} error=\"data/token: {}\"", ns, name,
                 token.error().describe());
    return std::nullopt;
  }
  return std::move(token).value();
}

}  // namespace

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
    return token_of(secret.value(), ns, name);
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
  std::optional<std::string> token = read_();
  std::lock_guard lock(mutex_);
  token_ = std::move(token);
  read_at_ = now_();
  reading_ = false;
  return token_;
}

TokenDigest token_digest(std::string_view token) {
  TokenDigest out{};
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), out.data());
  return out;
}

bool digest_equal(const TokenDigest& a, const TokenDigest& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

NamespaceTokens::NamespaceTokens(Read read, Now now)
    : read_(std::move(read)), now_(std::move(now)) {}

std::optional<TokenDigest> NamespaceTokens::get(const std::string& ns) {
  {
    std::lock_guard lock(mutex_);
    if (Entry* known = entries_.find(ns)) {
      const bool fresh = now_() - known->read_at < kNamespaceTokenTtl;
      if (fresh || known->reading) return known->digest;
      known->reading = true;
    }
  }
  const std::optional<std::string> token = read_(ns);
  std::optional<TokenDigest> digest;
  if (token) digest = token_digest(*token);
  store(ns, digest);
  return digest;
}

void NamespaceTokens::store(const std::string& ns, std::optional<TokenDigest> digest) {
  std::lock_guard lock(mutex_);
  entries_.touch(ns) = Entry{digest, now_(), false};
}

std::size_t NamespaceTokens::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

NamespaceTokens::Read namespace_token_reader(GetSecret get_secret, std::string own_namespace,
                                             std::function<bool(const std::string&)> allowed) {
  return [get_secret = std::move(get_secret), own_namespace = std::move(own_namespace),
          allowed = std::move(allowed)](const std::string& ns) -> std::optional<std::string> {
    if (!controllers::namespace_refusal(ns, own_namespace).empty() || !allowed(ns)) {
      return std::nullopt;
    }
    const std::string name(kWakeupSecretName);
    const kube::Result<controllers::Json> secret = get_secret(ns, name);
    if (!secret.ok()) {
      const bool quiet =
          secret.is(kube::ErrorKind::kNotFound) || secret.is(kube::ErrorKind::kForbidden);
      if (quiet) {
        spdlog::debug("event=wakeup_token_absent secret={}/{}", ns, name);
      } else {
        spdlog::warn("event=wakeup_token_unreadable secret={}/{} error=\"{}\"", ns, name,
                     secret.error().describe());
      }
      return std::nullopt;
    }
    std::optional<std::string> token = token_of(secret.value(), ns, name);
    if (token && token->size() < kWakeupTokenBytesMin) {
      spdlog::warn("event=wakeup_token_too_short secret={}/{} bytes_min={}", ns, name,
                   kWakeupTokenBytesMin);
      return std::nullopt;
    }
    return token;
  };
}

}  // namespace hb::operator_
