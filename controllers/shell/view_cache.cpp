#include "controllers/shell/view_cache.h"

#include "api/hb_assert.h"

namespace hb::controllers {

ViewCache::ViewCache(std::size_t agents_max) : agents_max_(agents_max) {
  HB_ASSERT(agents_max_ > 0);
}

AgentViews ViewCache::views(const std::string& key, const Json& agent,
                            const std::vector<Json>& runs) {
  std::shared_ptr<const Entry> last;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it != entries_.end()) last = it->second.entry;
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
  if (next->runs.empty()) {
    drop(key);  // idle: its next pass comes with a write or at its next slot
  } else {
    keep(key, std::move(next));
  }
  return out;
}

void ViewCache::keep(const std::string& key, std::shared_ptr<const Entry> entry) {
  if (auto it = entries_.find(key); it != entries_.end()) {
    recency_.splice(recency_.begin(), recency_, it->second.recency);
    it->second.entry = std::move(entry);
    return;
  }
  recency_.push_front(key);
  entries_.emplace(key, Slot{std::move(entry), recency_.begin()});
  while (entries_.size() > agents_max_) {
    entries_.erase(recency_.back());
    recency_.pop_back();
  }
}

void ViewCache::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  drop(key);
}

void ViewCache::drop(const std::string& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  recency_.erase(it->second.recency);
  entries_.erase(it);
}

std::size_t ViewCache::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace hb::controllers
