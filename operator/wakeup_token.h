#pragma once
// The wakeup endpoint's bearer token, read from a Secret and re-read every
// minute. A read is an API call that can hang for the client's timeout: it is
// made outside the lock by one caller while every other caller answers with
// the token read before, so a slow API server never queues wakeup requests.
#include <array>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "controllers/model/json_util.h"
#include "kube/errors.h"
#include "operator/lru_map.h"

namespace hb::operator_ {

inline constexpr std::chrono::seconds kWakeupTokenRereadInterval{60};

// The token in a Secret's data/token (base64), trailing newlines dropped
// (`kubectl create secret --from-file` keeps them). nullopt when absent/empty;
// a kMalformed Error when it is not base64.
kube::Result<std::optional<std::string>> wakeup_token_from_secret(const controllers::Json& secret);

// The cache: one token (a bounded cache of one value), re-read once it is
// older than kWakeupTokenRereadInterval by the injected clock.
class WakeupToken {
 public:
  using Clock = std::chrono::steady_clock;
  // Reads the token (I/O); nullopt when the Secret is missing or unreadable
  // (a failure is that value, never an exception).
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

// --- per namespace: the Secret `heartbeat-wakeup` (key `token`) in the
// Agent's own namespace opens that namespace's Agents only.

inline constexpr std::string_view kWakeupSecretName = "heartbeat-wakeup";
// A namespace's token is read again once its read is this old (a rotated or
// deleted Secret takes effect within it; a missing one is remembered as long).
inline constexpr std::chrono::seconds kNamespaceTokenTtl{30};
// Namespaces remembered at once; past it the oldest read is forgotten.
inline constexpr std::size_t kNamespaceTokensEntriesMax = 4096;
// A shorter token is refused as none (guessable); the Secret's owner is told
// by a log line naming the namespace, never the token.
inline constexpr std::size_t kWakeupTokenBytesMin = 16;

// SHA-256 of a token: what the cache keeps (32 bytes whatever the Secret
// holds) and what is compared in constant time.
using TokenDigest = std::array<unsigned char, 32>;
TokenDigest token_digest(std::string_view token);
// Equal digests, in time independent of where they differ.
bool digest_equal(const TokenDigest& a, const TokenDigest& b);

// The namespace's token digest, cached for kNamespaceTokenTtl. Reads are
// API calls made outside the lock; while one is in flight for a namespace
// other callers answer with the digest read before (or read it themselves
// when there is none yet), so a slow API server never queues requests.
class NamespaceTokens {
 public:
  using Clock = std::chrono::steady_clock;
  // Reads namespace ns's token (I/O); nullopt when missing or unreadable
  // (a failure is that value, never an exception).
  using Read = std::function<std::optional<std::string>(const std::string& ns)>;
  using Now = std::function<Clock::time_point()>;

  explicit NamespaceTokens(Read read, Now now = Clock::now);
  std::optional<TokenDigest> get(const std::string& ns);
  std::size_t size() const;

 private:
  struct Entry {
    std::optional<TokenDigest> digest;
    Clock::time_point read_at;
    bool reading = false;
  };
  void store(const std::string& ns, std::optional<TokenDigest> digest);

  Read read_;
  Now now_;
  mutable std::mutex mutex_;  // guards the members below, never held across read_()
  LruMap<std::string, Entry> entries_{kNamespaceTokensEntriesMax};
};

// A NamespaceTokens::Read of Secret `heartbeat-wakeup` in the namespace
// through `get_secret`. Not found and forbidden mean no token (logged at
// debug: any caller can name any namespace); other errors are warned about.
// A namespace the operator never manages (kube-system, ..., its own
// `own_namespace`: managed_namespaces.h) or one `allowed` refuses (not
// watched, say) is never read.
NamespaceTokens::Read namespace_token_reader(GetSecret get_secret, std::string own_namespace,
                                             std::function<bool(const std::string&)> allowed);

}  // namespace hb::operator_
