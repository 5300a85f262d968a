#include "controllers/shell/provider_holds.h"

#include <vector>

#include "controllers/provider_hold.h"

namespace hb::controllers {

namespace {

// What the credential and the message read of an Agent.
Json model_part(const Json& agent) {
  Json out = Json::object();
  out["metadata"]["namespace"] = string_at(agent, "metadata/namespace");
  if (const Json* model = find_path(agent, "spec/model")) out["spec"]["model"] = *model;
  return out;
}

}  // namespace

ProviderHolds::ProviderHolds(Enqueue enqueue) : enqueue_(std::move(enqueue)) {}

void ProviderHolds::agent_changed(const std::string& agent_key, const Json* agent) {
  std::lock_guard lock(mutex_);
  if (agent == nullptr) {
    agents_.erase(agent_key);
    return;
  }
  Json part = model_part(*agent);
  agents_[agent_key] = AgentEntry{provider_credential(part), std::move(part)};
}

void ProviderHolds::run_changed(const std::string& run_key, const Json* run) {
  if (run == nullptr || string_at(*run, "status/stopReason") != kStopReasonProviderQuota) return;
  const std::optional<TimePoint> until = time_at(*run, "status/providerResetAt");
  if (!until) return;
  const std::string ns = run_key.substr(0, run_key.find('/'));
  const std::string run_agent = object_key(ns, string_at(*run, "spec/agentRef/name"));
  std::vector<std::string> held;
  {
    std::lock_guard lock(mutex_);
    Hold& hold = holds_[run_agent];
    if (hold.until >= *until) return;
    const auto agent = agents_.find(run_agent);
    const TimePoint before = agent == agents_.end()
                                 ? TimePoint{}
                                 : longest_locked(agent->second.credential).value_or(TimePoint{});
    hold = Hold{*until, string_at(*run, "metadata/name")};
    // The agents held with it: now, so each says so (its agent may be
    // unknown yet after a restart; then each finds the hold at its next pass).
    if (agent == agents_.end() || *until <= before) return;
    for (const auto& [key, entry] : agents_) {
      if (entry.credential == agent->second.credential) held.push_back(key);
    }
  }
  for (const std::string& key : held) enqueue_(key);
}

std::optional<TimePoint> ProviderHolds::longest_locked(const std::string& credential) const {
  std::optional<TimePoint> longest;
  for (const auto& [held_agent, hold] : holds_) {
    const auto other = agents_.find(held_agent);
    if (other == agents_.end() || other->second.credential != credential) continue;
    if (!longest || hold.until > *longest) longest = hold.until;
  }
  return longest;
}

std::optional<schedule::ProviderHold> ProviderHolds::hold_for(const std::string& agent_key,
                                                              TimePoint now) const {
  std::lock_guard lock(mutex_);
  const auto agent = agents_.find(agent_key);
  if (agent == agents_.end()) return std::nullopt;
  // Holds are few (runs that hit a spent quota): a scan costs nothing.
  std::optional<schedule::ProviderHold> longest;
  for (const auto& [held_agent, hold] : holds_) {
    if (hold.until <= now || (longest && longest->until >= hold.until)) continue;
    const auto other = agents_.find(held_agent);
    if (other == agents_.end() || other->second.credential != agent->second.credential) continue;
    const std::string name = held_agent.substr(held_agent.find('/') + 1);
    longest = schedule::ProviderHold{
        hold.until, provider_hold_message(other->second.agent_for_message, hold.run, name)};
  }
  return longest;
}

}  // namespace hb::controllers
