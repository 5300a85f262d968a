#include "controllers/shell/view_cache.h"

namespace hb::controllers {

AgentViews ViewCache::views(const std::string& key, const Json& agent,
                            const std::vector<Json>& runs) {
  std::shared_ptr<const Entry> last;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it != entries_.end()) last = it->second;
  }
  // Built outside the lock: only this agent's reconcile touches its entry.
  auto next = std::make_shared<Entry>();
  AgentViews out;
  const std::string_view agent_rv = string_view_at(agent, "metadata/resourceVersion");
  if (last != nullptr && !agent_rv.empty() && last->agent.resource_version == agent_rv) {
    next->agent = last->agent;
  } else {
    next->agent = {std::string(agent_rv), std::make_shared<const AgentView>(view_agent(agent))};
  }
  out.agent = next->agent.view;
  out.runs.reserve(runs.size());
  for (const Json& run : runs) {
    const std::string_view name = string_view_at(run, "metadata/name");
    const std::string_view rv = string_view_at(run, "metadata/resourceVersion");
    Versioned<RunView> versioned;
    if (last != nullptr && !rv.empty()) {
      auto it = last->runs.find(std::string(name));
      if (it != last->runs.end() && it->second.resource_version == rv) versioned = it->second;
    }
    if (versioned.view == nullptr) {
      versioned = {std::string(rv), std::make_shared<const RunView>(view_run(run))};
    }
    out.runs.push_back(versioned.view);
    // A settled run is viewed afresh each pass: cheap next to its parse, and
    // kept it would cost about 1 KB for each run of the fleet's history.
    if (!is_settled(*versioned.view)) {
      next->runs.insert_or_assign(std::string(name), std::move(versioned));
    }
  }
  std::lock_guard lock(mutex_);
  entries_[key] = std::move(next);
  return out;
}

void ViewCache::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  entries_.erase(key);
}

std::size_t ViewCache::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace hb::controllers
