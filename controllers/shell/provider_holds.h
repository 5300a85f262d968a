// The provider quota holds in force (controllers/provider_hold.h), kept from
// the Agent and run informers: which credential (endpoint and API-key
// Secret) each Agent uses, and, per credential, the latest hold a run that
// ended with stopReason provider_quota set. Rebuilt from the runs the cache
// holds after a restart; a hold is forgotten once it ends.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "controllers/json_util.h"
#include "controllers/provider_hold.h"
#include "controllers/schedule/blocks.h"

namespace hb::controllers {

class ProviderHolds {
 public:
  using Enqueue = std::function<void(const std::string& agent_key)>;
  // `enqueue`: the agents a new hold (or a longer one) concerns, so each
  // says so at once rather than at its next slot.
  explicit ProviderHolds(Enqueue enqueue);

  void agent_changed(const std::string& agent_key, const Json* agent);
  // A run as stored (null: deleted; a deleted run's hold stays until it ends).
  void run_changed(const std::string& run_key, const Json* run);

  std::optional<schedule::ProviderHold> hold_for(const std::string& agent_key, TimePoint now) const;

 private:
  struct Hold {
    TimePoint until{};
    std::string run;  // the run that set it
  };
  Enqueue enqueue_;
  mutable std::mutex mutex_;
  // Each agent's credential by agent key: all a hold and its message need.
  // A copy of each Agent's spec.model as a JSON tree was at least 7 MiB of
  // heap at 10,000 agents (heaptrack).
  std::map<std::string, ProviderCredential> agents_;
  // By the agent whose run set it (its credential is looked up when asked,
  // so a hold found before its agent is known still counts).
  std::map<std::string, Hold> holds_;
  using HeldBy = std::map<std::string, Hold>::value_type;
  // The hold on a credential that ends last (ended or not); null: none.
  const HeldBy* longest_locked(const ProviderCredential& credential) const;
};

}  // namespace hb::controllers
