// The shell half of --max-concurrent-runs (controllers/concurrency.h): the
// fleet's places in use and the runs waiting for one, shared by every
// reconcile worker. A place is taken by a run that is not final and that the
// informers show Running or with its Job (a started run's Running status is
// written a pass later), or reserved by an admission until the informers
// show one of those (or kReservationTtl passes: the pass that reserved it
// failed and never came back). A Job whose run the cache does not hold
// counts as a reservation. Rebuilt from the informers after a restart or
// a change of leader, so the cap holds across both.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "controllers/concurrency.h"

namespace hb::controllers {

// An admission's place is kept this long without the run being seen Running.
inline constexpr std::chrono::seconds kReservationTtl{120};
// A waiting agent's place in line lapses after this long without it asking
// again (it asks every kConcurrencyRecheck).
inline constexpr std::chrono::seconds kWaitingTtl{180};

class ConcurrencyGate {
 public:
  // Measures how long reservations and places in line last (not wall time:
  // a wall clock that jumps must not free a place).
  using SteadyClock = std::function<std::chrono::steady_clock::time_point()>;
  using Wake = std::function<void(const std::string& agent_key)>;
  // `wake` queues an agent whose run may start now that a place freed.
  ConcurrencyGate(int64_t cap, SteadyClock steady, Wake wake);

  // Admits the candidate (reserving a place) or records it as waiting.
  // Asking again for a run already admitted admits it again.
  Admission admit(const StartCandidate& candidate);
  // A reservation the pass did not use (the run did not start): the place
  // is free again, unless the informer shows the run Running.
  void release(const std::string& run_key);
  // The agent asks for no start in this pass: it leaves the line.
  void withdraw(const std::string& agent);
  // A run as the informer stores it (null: not in the cache), and whether
  // its Job exists.
  void observe_run(const std::string& run_key, const Json* run, bool has_job);

  int64_t in_use() const;
  std::size_t waiting() const;

 private:
  struct Waiting {
    StartCandidate candidate;
    std::chrono::steady_clock::time_point expires{};
  };
  struct Before {
    bool operator()(const StartCandidate* a, const StartCandidate* b) const {
      return starts_before(*a, *b);
    }
  };
  int64_t in_use_locked() const;
  void expire_locked(std::chrono::steady_clock::time_point now);
  void erase_waiting_locked(const std::string& agent);
  std::vector<const StartCandidate*> line_locked() const;
  // Wakes the agents first in line for the places free beyond `before`.
  void wake_if_freed(std::unique_lock<std::mutex>& lock, int64_t before);

  const int64_t cap_;
  SteadyClock steady_;
  Wake wake_;
  mutable std::mutex mutex_;
  std::set<std::string> started_;  // run keys shown started, not final
  std::map<std::string, std::chrono::steady_clock::time_point> reserved_;  // run key -> its end
  std::map<std::string, Waiting> waiting_;        // agent key -> its candidate
  std::set<const StartCandidate*, Before> line_;  // waiting_'s candidates, in order
};

}  // namespace hb::controllers
