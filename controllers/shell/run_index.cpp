#include "controllers/shell/run_index.h"

#include <algorithm>

namespace hb::controllers {

RunIndex::Runs::const_iterator RunIndex::find(const Runs& runs, std::string_view name) {
  return std::lower_bound(runs.begin(), runs.end(), name,
                          [](const Run& run, std::string_view n) { return run.name < n; });
}

bool RunIndex::set(const std::string& agent_key, std::string_view run_name, bool settled) {
  Runs& runs = by_agent_[agent_key];
  auto at = find(runs, run_name);
  if (at != runs.end() && at->name == run_name) {
    Run& run = runs[static_cast<std::size_t>(at - runs.begin())];
    const bool became_settled = settled && !run.settled;
    run.settled = settled;
    return became_settled;
  }
  runs.insert(at, Run{std::string(run_name), settled});
  return settled;
}

void RunIndex::erase(const std::string& agent_key, std::string_view run_name) {
  auto it = by_agent_.find(agent_key);
  if (it == by_agent_.end()) return;
  Runs& runs = it->second;
  auto at = find(runs, run_name);
  if (at != runs.end() && at->name == run_name) runs.erase(at);
  if (runs.empty()) by_agent_.erase(it);
}

bool RunIndex::settled(const std::string& agent_key, std::string_view run_name) const {
  auto it = by_agent_.find(agent_key);
  if (it == by_agent_.end()) return false;
  auto at = find(it->second, run_name);
  return at != it->second.end() && at->name == run_name && at->settled;
}

std::vector<std::string> RunIndex::names(const std::string& agent_key) const {
  std::vector<std::string> out;
  if (auto it = by_agent_.find(agent_key); it != by_agent_.end()) {
    out.reserve(it->second.size());
    for (const Run& run : it->second) out.push_back(run.name);
  }
  return out;
}

}  // namespace hb::controllers
