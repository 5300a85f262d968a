// POST /api/v1/namespaces/{ns}/agents/{name}/wakeup: a callback run with the
// caller's reason, guarded by a bearer token compared in constant time. A
// wakeup while the agent already has a Queued run joins that run instead of
// stacking another. Errors are JSON: 400 bad JSON, 401 token, 404 agent.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "controllers/shell/agent_reconciler.h"
#include "kube/http.h"

namespace hb::operator_ {

inline constexpr std::size_t kWakeupBodyBytesMax = 64 * 1024;
inline constexpr std::size_t kWakeupReasonBytesMax = 1024;

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
  WakeupService(controllers::AgentReconciler& reconciler, TokenSource token, Enqueue enqueue);
  http::ServerResponse handle(const http::ServerRequest& request);

 private:
  controllers::AgentReconciler& reconciler_;
  TokenSource token_;
  Enqueue enqueue_;
  std::mutex mutex_;  // one wakeup at a time: coalescing needs a consistent view
};

}  // namespace hb::operator_
