// The last state of deleted heartbeat Pods, kept until their run's cost is
// recorded. When the operator deletes a Job (cancel, budget stop, stall,
// deadline), the Pod's DELETED event can arrive before the reconcile that
// reads its result; without its last state the run would be recorded with
// no exit code and no usage. Bounded by count and age. Not thread-safe: the
// cluster cache guards it.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "controllers/model/json_util.h"

namespace hb::controllers {

using namespace std::chrono_literals;

// Long enough for any reconcile backlog; a run settled sooner drops its entry at once.
inline constexpr std::chrono::seconds kPodTombstoneTtl = 3600s;
inline constexpr std::size_t kPodTombstonesMax = 4096;

class PodTombstones {
 public:
  using Clock = std::chrono::steady_clock;

  // Keeps `pod` (its last state) under `run_key` when it tells an outcome: a
  // container terminated, or the kubelet could not configure one (a missing
  // Secret key); other Pods that never ran tell nothing worth keeping.
  void remember(const std::string& run_key, const Json& pod, Clock::time_point now);
  // The kept Pods of a run, minus those named in `live` (still in the cache).
  std::vector<Json> of(const std::string& run_key, const std::vector<Json>& live) const;
  void forget(const std::string& run_key);
  std::size_t size() const { return order_.size(); }

 private:
  struct Entry {
    std::string run_key, pod_name;
    Clock::time_point at;
  };
  void expire(Clock::time_point now);
  void drop_oldest();

  std::map<std::string, std::map<std::string, Json>> by_run_;  // run -> pod name -> pod
  std::deque<Entry> order_;                                    // oldest first
};

// A container of the Pod terminated, or waits on CreateContainerConfigError.
bool tells_an_outcome(const Json& pod);

}  // namespace hb::controllers
