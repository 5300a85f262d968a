// The Agents as the cache stores them, read on demand by an index that keeps
// nothing of most Agents (shell/provider_holds.h, shell/policy_index.h): at
// 10,000 agents each per-agent entry an index kept cost 1.5-2.2 MiB.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "controllers/model/json_util.h"

namespace hb::controllers {

struct AgentSource {
  using Visit = std::function<void(const std::string& agent_key, const Json& agent)>;
  // The Agent by key "ns/name", parsed; nullopt: not stored.
  std::function<std::optional<Json>(const std::string& agent_key)> get;
  // Whether it is stored, without parsing it.
  std::function<bool(const std::string& agent_key)> contains;
  // Each Agent of the namespace, parsed one at a time, from a snapshot taken
  // at the call (the handlers may be telling later changes meanwhile).
  std::function<void(const std::string& ns, const Visit& visit)> for_each_in;
};

}  // namespace hb::controllers
