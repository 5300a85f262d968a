// POST /api/v1/namespaces/{ns}/agents/{name}/wakeup: a callback run with the
// caller's reason. The bearer token must be namespace ns's own (Secret
// `heartbeat-wakeup`, wakeup_token.h) or, when the operator is given one, the
// cluster-wide token; both are compared in constant time, always. A missing
// agent, a missing or wrong token and a namespace the operator may not read
// all answer the same 404, so a caller learns nothing of namespaces it has no
// token for. Token buckets per source address, per namespace and per agent
// bound wakeups (429 with Retry-After). Only the leader acts: a standby
// answers 503 with Retry-After. An Idempotency-Key header names the run, so a
// retried POST finds the run it made (200) instead of making another.
// Errors are JSON: 400 bad JSON or key, 404 as above, 409 key reuse.
// No lock is held across an API call: the run's create is the atomic step.
// Its API calls are of class kEdge (kube/request_priority.h): below every
// agent's own writes, and given up after kWakeupLimiterWaitMax (503).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "controllers/model/json_util.h"
#include "http/http.h"
#include "kube/errors.h"
#include "operator/rate_buckets.h"
#include "operator/wakeup_token.h"

namespace hb::operator_ {

inline constexpr std::size_t kWakeupBodyBytesMax = 64 * 1024;
inline constexpr std::size_t kWakeupReasonBytesMax = 1024;
inline constexpr std::size_t kIdempotencyKeyCharsMax = 128;
inline constexpr int kStandbyRetryAfterSeconds = 2;
// The buckets. Per agent: a run a second or two is more than a heartbeat
// can use (queued callback runs coalesce). Per source address: every request,
// before its token is read (it bounds the Secret reads a stranger can cause);
// behind one proxy every caller shares it, so it is the widest. Per namespace:
// what one token's holder may ask of all of its agents together.
inline constexpr BucketRate kWakeupPerAgentRate{/*per_second=*/0.5, /*burst=*/5};
inline constexpr BucketRate kWakeupPerSourceRate{/*per_second=*/20, /*burst=*/100};
inline constexpr BucketRate kWakeupPerNamespaceRate{/*per_second=*/5, /*burst=*/25};
inline constexpr std::size_t kWakeupBucketEntriesMax = 10000;  // per map
// How long a wakeup's API call may wait for the client's rate limiter
// behind the agents' own writes before it answers 503.
inline constexpr std::chrono::seconds kWakeupLimiterWaitMax{5};
inline constexpr int kLimiterRetryAfterSeconds = 5;

// "" when the Idempotency-Key header value is usable (1..128 printable ASCII),
// else what is wrong with it.
std::string idempotency_key_problem(const std::string& key);
// The run a key names: "<agent>-callback-<16 hex of agent uid/key>".
std::string idempotent_run_name(const std::string& agent_name, const std::string& agent_uid,
                                const std::string& key);

// What a wakeup's JSON body asks for: `reason` (cut to kWakeupReasonBytesMax)
// and `metadata` (api/run_metadata.h bounds, refused past them, never cut).
struct WakeupBody {
  std::string reason;
  nlohmann::json metadata;  // null when absent
};
// The body, or what is wrong with it (a 400's message, naming the field and the limit).
std::variant<WakeupBody, std::string> parse_wakeup_body(const std::string& body);

// Equal length and bytes, in time independent of where they differ.
bool constant_time_equal(const std::string& a, const std::string& b);

// The namespace and name of a wakeup path, both valid names; else nullopt.
struct WakeupPath {
  std::string ns, name;
};
std::optional<WakeupPath> parse_wakeup_path(const std::string& path);

// What the service needs of the operator (the reconciler in the binary).
struct WakeupBackend {
  std::function<std::optional<controllers::Json>(const std::string& ns, const std::string& name)>
      agent;
  std::function<kube::Result<controllers::Json>(const std::string& ns,
                                                const controllers::Json& run)>
      create_run;
  std::function<kube::Result<controllers::Json>(const std::string& ns, const std::string& name)>
      get_run;
  std::function<std::chrono::system_clock::time_point()> now;
};

// Who may wake what: namespace ns's token digest (nullopt: none), and the
// cluster-wide one (an empty function or nullopt: none, the default).
struct WakeupAuth {
  std::function<std::optional<TokenDigest>(const std::string& ns)> namespace_token;
  std::function<std::optional<TokenDigest>()> cluster_token;
};

struct WakeupLimits {
  BucketRate per_agent = kWakeupPerAgentRate;
  BucketRate per_source = kWakeupPerSourceRate;
  BucketRate per_namespace = kWakeupPerNamespaceRate;
  std::size_t entries_max = kWakeupBucketEntriesMax;
};

class WakeupService {
 public:
  using Enqueue = std::function<void(const std::string& agent_key)>;
  using IsLeader = std::function<bool()>;
  using SteadyNow = std::function<std::chrono::steady_clock::time_point()>;
  WakeupService(WakeupBackend backend, WakeupAuth auth, Enqueue enqueue, IsLeader is_leader,
                WakeupLimits limits = {}, SteadyNow steady_now = std::chrono::steady_clock::now);
  http::ServerResponse handle(const http::ServerRequest& request);

 private:
  WakeupBackend backend_;
  WakeupAuth auth_;
  Enqueue enqueue_;
  IsLeader is_leader_;
  SteadyNow steady_now_;
  KeyedBuckets per_agent_, per_source_, per_namespace_;

  bool authorized(const std::string& ns, const http::ServerRequest& request) const;
  http::ServerResponse admitted(const WakeupPath& path, const http::ServerRequest& request);

  http::ServerResponse create(const WakeupPath& path, const controllers::Json& agent,
                              const WakeupBody& body, const std::string& key);
  http::ServerResponse existing(const WakeupPath& path, const std::string& name,
                                const std::string& agent_uid, const std::string& key);
};

}  // namespace hb::operator_
