#include "controllers/shell/provider_holds.h"

#include <vector>

#include "controllers/policy/concurrency.h"
#include "controllers/policy/provider_hold.h"

namespace hb::controllers {

ProviderHolds::ProviderHolds(Enqueue enqueue) : enqueue_(std::move(enqueue)) {}

void ProviderHolds::read_agents_from(AgentSource agents) {
  agents_ = std::move(agents);
}

void ProviderHolds::agent_changed(const std::string& agent_key, const Json* agent) {
  std::lock_guard lock(mutex_);
  const auto held = holds_.find(agent_key);
  if (held == holds_.end()) return;
  // A deleted holder holds no one (its runs go with it).
  if (agent == nullptr) {
    holds_.erase(held);
    return;
  }
  held->second.credential = provider_credential(*agent);
}

std::optional<ProviderCredential> ProviderHolds::read_credential(
    const std::string& agent_key) const {
  if (!agents_.get) return std::nullopt;
  const std::optional<Json> agent = agents_.get(agent_key);
  if (!agent) return std::nullopt;
  return provider_credential(*agent);
}

std::vector<std::string> ProviderHolds::agents_on(const std::string& ns,
                                                  const ProviderCredential& credential) const {
  std::vector<std::string> out;
  if (!agents_.for_each_in) return out;
  agents_.for_each_in(ns, [&](const std::string& key, const Json& agent) {
    if (provider_credential(agent) == credential) out.push_back(key);
  });
  return out;
}

void ProviderHolds::run_changed(const std::string& run_key, const Json* run) {
  if (run == nullptr || string_at(*run, "status/stopReason") != kStopReasonProviderQuota) return;
  const std::optional<TimePoint> until = time_at(*run, "status/providerResetAt");
  if (!until) return;
  const std::string run_agent = agent_of_run(run_key, *run);
  if (run_agent.empty()) return;
  bool read = false;
  {
    // The entry first, so a change of its Agent told while the credential
    // is read below lands in it (and wins: it is the newer).
    std::lock_guard lock(mutex_);
    const Hold& hold = holds_[run_agent];
    if (hold.until >= *until) return;  // the same run again (a relist), or a shorter hold
    read = !hold.credential;
  }
  // Read without the lock: the Agent cache's handlers tell this index under theirs.
  const std::optional<ProviderCredential> credential =
      read ? read_credential(run_agent) : std::nullopt;
  std::optional<ProviderCredential> widened;
  {
    std::lock_guard lock(mutex_);
    Hold& hold = holds_[run_agent];
    if (!hold.credential) hold.credential = credential;
    widened = set_locked(hold, *until, string_at(*run, "metadata/name"));
  }
  if (!widened) return;
  for (const std::string& key : agents_on(namespace_of_key(run_agent), *widened)) enqueue_(key);
}

std::optional<ProviderCredential> ProviderHolds::set_locked(Hold& hold, TimePoint until,
                                                            std::string run) {
  if (hold.until >= until) return std::nullopt;
  const HeldBy* longest = hold.credential ? longest_locked(*hold.credential) : nullptr;
  const TimePoint before = longest != nullptr ? longest->second.until : TimePoint{};
  hold.until = until;
  hold.run = std::move(run);
  // Its agent unknown yet (after a restart): each finds the hold at its next pass.
  if (!hold.credential || until <= before) return std::nullopt;
  return hold.credential;
}

const ProviderHolds::HeldBy* ProviderHolds::longest_locked(
    const ProviderCredential& credential) const {
  // Holds are few (agents whose runs hit a spent quota): a scan costs nothing.
  const HeldBy* longest = nullptr;
  for (const HeldBy& held : holds_) {
    if (held.second.credential != credential) continue;
    if (longest == nullptr || held.second.until > longest->second.until) longest = &held;
  }
  return longest;
}

std::optional<schedule::ProviderHold> ProviderHolds::hold_for(const ProviderCredential& credential,
                                                              TimePoint now) const {
  std::lock_guard lock(mutex_);
  const HeldBy* longest = longest_locked(credential);
  if (longest == nullptr || longest->second.until <= now) return std::nullopt;
  const auto& [held_agent, hold] = *longest;
  const std::string name = held_agent.substr(held_agent.find('/') + 1);
  return schedule::ProviderHold{hold.until, provider_hold_message(credential, hold.run, name)};
}

std::size_t ProviderHolds::holders() const {
  std::lock_guard lock(mutex_);
  return holds_.size();
}

}  // namespace hb::controllers
