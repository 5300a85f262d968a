// When this process first saw each agent Lease's current version: client-go's
// observedTime. The stall watchdog then judges a beat by when the operator
// saw it, measured on the operator's steady clock, so a runner whose clock
// lags (or an operator whose wall clock jumped) does not fail a run that is
// beating. Forgotten with the Agent; a restarted operator sees every Lease
// anew, which delays a stall by at most one window (the deadline still holds).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "controllers/json_util.h"

namespace hb::controllers {

class LeaseSightings {
 public:
  using Steady = std::function<std::chrono::steady_clock::time_point()>;
  explicit LeaseSightings(Steady steady) : steady_(std::move(steady)) {}

  // When version `resource_version` of agent `key`'s Lease was first seen,
  // on the clock `now` comes from.
  TimePoint seen_at(const std::string& key, const std::string& resource_version, TimePoint now);
  void forget(const std::string& key);

 private:
  struct Sighting {
    std::string resource_version;
    std::chrono::steady_clock::time_point at;
  };
  Steady steady_;
  std::mutex mutex_;
  std::map<std::string, Sighting> seen_;  // by agent key; bounded by the Agents that exist
};

}  // namespace hb::controllers
