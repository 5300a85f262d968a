#include "controllers/shell/run_index.h"

#include <algorithm>

namespace hb::controllers {

RunIndex::Runs::const_iterator RunIndex::find(const Runs& runs, std::string_view name) {
  return std::lower_bound(runs.begin(), runs.end(), name,
                          [](const Run& run, std::string_view n) { return run.name < n; });
}

RunIndex::Run* RunIndex::find_mutable(Runs& runs, std::string_view name) {
  auto at = find(runs, name);
  if (at == runs.end() || at->name != name) return nullptr;
  return &runs[static_cast<std::size_t>(at - runs.begin())];
}

bool RunIndex::set(const std::string& agent_key, std::string_view run_name,
                   const IndexedRun& facts) {
  Runs& runs = by_agent_[agent_key].runs;
  if (Run* run = find_mutable(runs, run_name)) {
    const bool became_settled = facts.settled && !run->facts.settled;
    run->facts = facts;
    return became_settled;
  }
  runs.insert(find(runs, run_name), Run{std::string(run_name), facts});
  return facts.settled;
}

void RunIndex::forget_if_empty(std::map<std::string, Agent, std::less<>>::iterator it) {
  if (it->second.runs.empty() && !it->second.context_runs) by_agent_.erase(it);
}

void RunIndex::erase(const std::string& agent_key, std::string_view run_name) {
  auto it = by_agent_.find(agent_key);
  if (it == by_agent_.end()) return;
  Runs& runs = it->second.runs;
  auto at = find(runs, run_name);
  if (at != runs.end() && at->name == run_name) runs.erase(at);
  forget_if_empty(it);
}

bool RunIndex::settled(const std::string& agent_key, std::string_view run_name) const {
  auto it = by_agent_.find(agent_key);
  if (it == by_agent_.end()) return false;
  auto at = find(it->second.runs, run_name);
  return at != it->second.runs.end() && at->name == run_name && at->facts.settled;
}

std::vector<std::string> RunIndex::names(const std::string& agent_key) const {
  std::vector<std::string> out;
  if (auto it = by_agent_.find(agent_key); it != by_agent_.end()) {
    out.reserve(it->second.runs.size());
    for (const Run& run : it->second.runs) out.push_back(run.name);
  }
  return out;
}

bool RunIndex::set_context_runs(const std::string& agent_key, std::optional<int> context_runs) {
  if (!context_runs) {
    auto it = by_agent_.find(agent_key);
    if (it == by_agent_.end()) return false;
    it->second.context_runs.reset();
    forget_if_empty(it);
    return false;
  }
  Agent& agent = by_agent_[agent_key];
  const bool lowered = !agent.context_runs || *context_runs < *agent.context_runs;
  agent.context_runs = std::max(0, *context_runs);
  return lowered;
}

int RunIndex::settled_later(const Runs& runs, std::string_view name, TimePoint finished_at) {
  int later = 0;
  for (const Run& other : runs) {
    if (!other.facts.settled || other.name == name) continue;
    const TimePoint at = other.facts.finished_at;
    if (at > finished_at || (at == finished_at && other.name > name)) ++later;
  }
  return later;
}

bool RunIndex::in_output_window(const std::string& agent_key, std::string_view run_name,
                                TimePoint finished_at) const {
  auto it = by_agent_.find(agent_key);
  if (it == by_agent_.end() || !it->second.context_runs) return true;
  return settled_later(it->second.runs, run_name, finished_at) < *it->second.context_runs;
}

void RunIndex::set_output_kept(const std::string& agent_key, std::string_view run_name, bool kept) {
  auto it = by_agent_.find(agent_key);
  if (it == by_agent_.end()) return;
  if (Run* run = find_mutable(it->second.runs, run_name)) run->facts.output_kept = kept;
}

std::vector<std::string> RunIndex::outputs_past_window(const std::string& agent_key) const {
  std::vector<std::string> out;
  auto it = by_agent_.find(agent_key);
  if (it == by_agent_.end() || !it->second.context_runs) return out;
  const Runs& runs = it->second.runs;
  for (const Run& run : runs) {
    if (!run.facts.settled || !run.facts.output_kept) continue;
    if (settled_later(runs, run.name, run.facts.finished_at) >= *it->second.context_runs) {
      out.push_back(run.name);
    }
  }
  return out;
}

}  // namespace hb::controllers
