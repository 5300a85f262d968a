// Typed views of cached objects, built once per stored version: a reconcile
// reads its Agent and the Agent's runs as views (AgentView, RunView) and
// parses JSON only for objects whose resourceVersion changed since the last
// reconcile of that agent, the way kube-rs keeps typed objects in its
// reflector store. Views of settled runs (final, cost recorded: most of an
// agent's history) are not kept; at fleet size they were a third of the
// operator's memory. Entries are per agent and replaced on every reconcile, so
// views of deleted runs go with the next pass and a deleted agent's with
// forget(). Only agents with a run that may still change keep theirs: an
// agent's events come in a burst around its heartbeat, and once every run is
// settled its next pass comes with a write to it (a new resourceVersion,
// viewed afresh anyway) or at its next slot. Of those, only the ones
// reconciled most recently (a bound, not the fleet: at 10,000 agents views of
// all of them take 44 MiB, and 1,000 of them 3.9 MiB, by heaptrack); a pass for another agent views
// it afresh. Thread-safe; one reconcile per agent key runs at a time.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "controllers/agent/agent_view.h"
#include "controllers/model/run_view.h"

namespace hb::controllers {

struct AgentViews {
  std::shared_ptr<const AgentView> agent;
  std::vector<std::shared_ptr<const RunView>> runs;  // in the order of the runs given
};

// Agents whose views are kept, of those with a run in flight: at about
// 4 KB an agent, 1 MiB. A pass without a kept view parses the agent's status
// once more, next to the agent and its whole history it parses anyway.
inline constexpr std::size_t kViewCacheAgentsMax = 256;

class ViewCache {
 public:
  explicit ViewCache(std::size_t agents_max = kViewCacheAgentsMax);

  // Views of `agent` (key "ns/name") and of `runs`, reused where the
  // resourceVersion is the one seen last time. An object without a
  // resourceVersion is viewed afresh every time.
  AgentViews views(const std::string& key, const Json& agent, const std::vector<Json>& runs);
  void forget(const std::string& key);
  std::size_t size() const;  // agents with entries

 private:
  template <typename View>
  struct Versioned {
    std::string resource_version;
    std::shared_ptr<const View> view;
  };
  struct Entry {
    Versioned<AgentView> agent;
    std::unordered_map<std::string, Versioned<RunView>> runs;  // by run name
  };
  struct Slot {
    std::shared_ptr<const Entry> entry;
    std::list<std::string>::iterator recency;  // its place in recency_
  };
  // Keeps `entry` for `key` as the most recent; drops the least recent
  // beyond the bound. Under mutex_.
  void keep(const std::string& key, std::shared_ptr<const Entry> entry);
  void drop(const std::string& key);  // under mutex_

  const std::size_t agents_max_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Slot> entries_;
  std::list<std::string> recency_;  // most recent first
};

}  // namespace hb::controllers
