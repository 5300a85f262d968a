// When this process first saw each agent Lease's current version: client-go's
// observedTime. The stall watchdog then judges a beat by when the operator
// saw it, measured on the operator's steady clock, so a runner whose clock
// lags (or an operator whose wall clock jumped) does not fail a run that is
// beating. Kept only while the agent has a run that is not final (only such
// a run's clock reads it; at 10,000 idle agents a sighting each would be about
// 1.4 MiB), and forgotten with the Agent. A sighting made afresh is later,
// never earlier, than the one forgotten, and a run's own first sighting
// (below) bounds the stall clock anyway; a restarted operator sees every
// Lease anew, which delays a stall by at most one window (the deadline
// still holds).
//
// Likewise when it first saw each unfinished run with its Job: a run is not
// stalled before it has gone one window unseen to beat on the steady clock,
// so a wall clock that jumps ahead right after a start does not fail it.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "controllers/model/json_util.h"

namespace hb::controllers {

class LeaseSightings {
 public:
  using Steady = std::function<std::chrono::steady_clock::time_point()>;
  explicit LeaseSightings(Steady steady) : steady_(std::move(steady)) {}

  // When version `resource_version` of agent `key`'s Lease was first seen,
  // on the clock `now` comes from.
  TimePoint seen_at(const std::string& key, const std::string& resource_version, TimePoint now);
  // When each of agent `key`'s `runs` (unfinished, with a Job) was first
  // seen, in order, on the clock `now` comes from; runs not named are
  // forgotten, so this holds only the runs going on.
  std::vector<TimePoint> runs_seen_at(const std::string& key, const std::vector<std::string>& runs,
                                      TimePoint now);
  // Drops agent `key`'s Lease sighting (its runs are all final).
  void forget_lease(const std::string& key);
  void forget(const std::string& key);

  std::size_t agents() const;  // agents with a sighting kept

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  struct LeaseSighting {
    std::string resource_version;
    SteadyTime at;
  };
  struct RunSighting {
    std::string run;
    SteadyTime at;
  };
  // One entry an agent, its key held once: two maps by agent key and a map
  // of runs in each would take about 290 bytes an agent with a run going on
  // (heaptrack, 1,000 agents).
  struct AgentSightings {
    std::optional<LeaseSighting> lease;
    std::vector<RunSighting> runs;  // the runs going on, as last named (most agents: one)
  };
  using Agents = std::map<std::string, AgentSightings, std::less<>>;
  // Drops `it` once it holds nothing. Under mutex_.
  void erase_if_empty(Agents::iterator it);

  Steady steady_;
  mutable std::mutex mutex_;
  Agents agents_;  // bounded by the agents with a run not final
};

}  // namespace hb::controllers
