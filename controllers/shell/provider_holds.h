// The provider quota holds in force (controllers/policy/provider_hold.h), kept from
// the run informer: per agent whose run ended with stopReason
// provider_quota, the latest such hold and the credential (endpoint and
// API-key Secret) it holds. Rebuilt from the runs the cache holds after a
// restart; a hold is forgotten once it ends.
//
// Nothing is kept of an agent without a hold: an asking agent brings its
// own credential (its reconcile has the Agent), and the agents a new hold
// concerns are found by reading the Agents then (a rare event). A map of
// every Agent's credential cost about 2.2 MiB at 10,000 agents.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "controllers/model/json_util.h"
#include "controllers/policy/provider_hold.h"
#include "controllers/schedule/blocks.h"
#include "controllers/shell/agent_source.h"

namespace hb::controllers {

class ProviderHolds {
 public:
  using Enqueue = std::function<void(const std::string& agent_key)>;
  // `enqueue`: the agents a new hold (or a longer one) concerns, so each
  // says so at once rather than at its next slot.
  explicit ProviderHolds(Enqueue enqueue);
  // Where the holders' credentials are read; set before the informers start
  // (the cache that feeds this index is also what it reads).
  void read_agents_from(AgentSource agents);

  // Keeps a holder's credential current (an Agent without a hold: nothing).
  void agent_changed(const std::string& agent_key, const Json* agent);
  // A run as stored (null: deleted; a deleted run's hold stays until it ends).
  void run_changed(const std::string& run_key, const Json* run);

  // The hold on `credential` (the asking Agent's) that ends last, if in force.
  std::optional<schedule::ProviderHold> hold_for(const ProviderCredential& credential,
                                                 TimePoint now) const;
  std::size_t holders() const;

 private:
  struct Hold {
    TimePoint until{};
    std::string run;  // the run that set it
    // The holding agent's; nullopt while it is not known (after a restart
    // the runs may be listed before their Agent) or once it is deleted.
    std::optional<ProviderCredential> credential;
  };
  // The holder's credential as the Agent cache has it now (outside the lock).
  std::optional<ProviderCredential> read_credential(const std::string& agent_key) const;
  // The agents of `credential`'s namespace on that credential.
  std::vector<std::string> agents_on(const std::string& ns,
                                     const ProviderCredential& credential) const;
  // Sets a longer hold; the credential whose agents it newly holds, if any.
  std::optional<ProviderCredential> set_locked(Hold& hold, TimePoint until, std::string run);
  using HeldBy = std::map<std::string, Hold>::value_type;
  // The hold on a credential that ends last (ended or not); null: none.
  const HeldBy* longest_locked(const ProviderCredential& credential) const;

  Enqueue enqueue_;
  AgentSource agents_;
  mutable std::mutex mutex_;
  std::map<std::string, Hold> holds_;  // by the agent whose run set it
};

}  // namespace hb::controllers
