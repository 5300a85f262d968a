#include "controllers/shell/provider_holds.h"

#include <vector>

#include "controllers/concurrency.h"
#include "controllers/provider_hold.h"

namespace hb::controllers {

ProviderHolds::ProviderHolds(Enqueue enqueue) : enqueue_(std::move(enqueue)) {}

void ProviderHolds::agent_changed(const std::string& agent_key, const Json* agent) {
  std::lock_guard lock(mutex_);
  if (agent == nullptr) {
    agents_.erase(agent_key);
    return;
  }
  agents_[agent_key] = provider_credential(*agent);
}

void ProviderHolds::run_changed(const std::string& run_key, const Json* run) {
  if (run == nullptr || string_at(*run, "status/stopReason") != kStopReasonProviderQuota) return;
  const std::optional<TimePoint> until = time_at(*run, "status/providerResetAt");
  if (!until) return;
  const std::string run_agent = agent_of_run(run_key, *run);
  if (run_agent.empty()) return;
  std::vector<std::string> held;
  {
    std::lock_guard lock(mutex_);
    Hold& hold = holds_[run_agent];
    if (hold.until >= *until) return;
    const auto agent = agents_.find(run_agent);
    const HeldBy* longest = agent == agents_.end() ? nullptr : longest_locked(agent->second);
    const TimePoint before = longest != nullptr ? longest->second.until : TimePoint{};
    hold = Hold{*until, string_at(*run, "metadata/name")};
    // The agents held with it: now, so each says so (its agent may be
    // unknown yet after a restart; then each finds the hold at its next pass).
    if (agent == agents_.end() || *until <= before) return;
    for (const auto& [key, entry] : agents_) {
      if (entry == agent->second) held.push_back(key);
    }
  }
  for (const std::string& key : held) enqueue_(key);
}

const ProviderHolds::HeldBy* ProviderHolds::longest_locked(
    const ProviderCredential& credential) const {
  // Holds are few (runs that hit a spent quota): a scan costs nothing.
  const HeldBy* longest = nullptr;
  for (const HeldBy& held : holds_) {
    const auto other = agents_.find(held.first);
    if (other == agents_.end() || other->second != credential) continue;
    if (longest == nullptr || held.second.until > longest->second.until) longest = &held;
  }
  return longest;
}

std::optional<schedule::ProviderHold> ProviderHolds::hold_for(const std::string& agent_key,
                                                              TimePoint now) const {
  std::lock_guard lock(mutex_);
  const auto agent = agents_.find(agent_key);
  if (agent == agents_.end()) return std::nullopt;
  const HeldBy* longest = longest_locked(agent->second);
  if (longest == nullptr || longest->second.until <= now) return std::nullopt;
  const auto& [held_agent, hold] = *longest;
  const std::string name = held_agent.substr(held_agent.find('/') + 1);
  return schedule::ProviderHold{hold.until,
                                provider_hold_message(agents_.at(held_agent), hold.run, name)};
}

}  // namespace hb::controllers
