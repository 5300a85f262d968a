// POST /api/v1/namespaces/{ns}/agents/{name}/wakeup: a callback run with the
// caller's reason, guarded by a bearer token compared in constant time.
// Only the leader acts: a standby answers 503 with Retry-After (the Service
// may route to any replica). An Idempotency-Key header names the run, so a
// retried POST finds the run it made (200) instead of making another. Several
// callback runs queued at once are coalesced by the leader's reconcile.
// Errors are JSON: 400 bad JSON or key, 401 token, 404 agent, 409 key reuse.
// No lock is held across an API call: the run's create is the atomic step.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <variant>

#include "controllers/shell/agent_reconciler.h"
#include "kube/http.h"

namespace hb::operator_ {

inline constexpr std::size_t kWakeupBodyBytesMax = 64 * 1024;
inline constexpr std::size_t kWakeupReasonBytesMax = 1024;
inline constexpr std::size_t kIdempotencyKeyCharsMax = 128;
inline constexpr int kStandbyRetryAfterSeconds = 2;

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

struct WakeupPath {
  std::string ns, name;
};
std::optional<WakeupPath> parse_wakeup_path(const std::string& path);

class WakeupService {
 public:
  using TokenSource = std::function<std::optional<std::string>()>;  // nullopt: none configured
  using Enqueue = std::function<void(const std::string& agent_key)>;
  using IsLeader = std::function<bool()>;
  WakeupService(controllers::AgentReconciler& reconciler, TokenSource token, Enqueue enqueue,
                IsLeader is_leader);
  http::ServerResponse handle(const http::ServerRequest& request);

 private:
  controllers::AgentReconciler& reconciler_;
  TokenSource token_;
  Enqueue enqueue_;
  IsLeader is_leader_;

  http::ServerResponse create(const WakeupPath& path, const controllers::Json& agent,
                              const WakeupBody& body, const std::string& key);
  http::ServerResponse existing(const WakeupPath& path, const std::string& name,
                                const std::string& agent_uid, const std::string& key);
};

}  // namespace hb::operator_
