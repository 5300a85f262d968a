// The shell half of the concurrency caps (controllers/policy/concurrency.h): the
// fleet's places in use and the runs waiting for one, shared by every
// reconcile worker. A place is taken by a run that is not final and that the
// informers show Running or with its Job (a started run's Running status is
// written a pass later), or once showed so (the informers may show a
// stalled run's Job deleted before its stored Running status), or reserved
// by an admission until the informers show one of those (or
// kReservationTtl passes: the pass that reserved it failed and never came
// back). A Job whose run the cache does not hold counts as a reservation.
// Rebuilt from the informers after a restart or a change of leader, so the
// caps hold across both.
//
// Pools: the operator-wide cap (when > 0) holds every run; a policy's pool
// holds the runs of the agents `pools_of` places in it. Membership is asked
// at count time, not remembered, so an agent whose labels or policies change
// moves its runs' places with it.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "controllers/policy/concurrency.h"

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
  // The policy pools an agent ("ns/name") belongs to now, with their caps
  // (entries with pool "" or cap <= 0 are ignored). Called with the gate's
  // mutex held, so it must be quick and must not call back into the gate.
  using PoolsOf = std::function<std::vector<PoolCap>(const std::string& agent_key)>;
  // `cap` is the operator-wide cap (0: none). `wake` queues an agent whose
  // run may start now that a place freed. Without `pools_of` and with cap 0
  // the gate admits everything and tracks nothing.
  ConcurrencyGate(int64_t cap, SteadyClock steady, Wake wake, PoolsOf pools_of = nullptr);

  // The agent's pools as counted now, and the runs that hold a place on its
  // behalf: those of `run_keys` (its runs in the cache) that do, and those
  // the cache does not show yet (a reservation for a run being made; a Job
  // seen before its run, attributed to no agent, in its namespace). What
  // decide_agent admits a start from (admit_from_snapshot), so it answers
  // as admit would for any run the agent may start.
  GateSnapshot snapshot(const std::string& agent, const std::vector<std::string>& run_keys);
  // Commits an admission decided from a snapshot, checking it again under
  // the mutex: admits the candidate (reserving a place) or, when the
  // snapshot went stale (another worker took the place), records it as
  // waiting and refuses. Asking again for a run already admitted admits it again.
  Admission admit(const StartCandidate& candidate);
  // A start the decision refused from its snapshot: the candidate stands in
  // line (no place is reserved). True when a place freed since the
  // snapshot: the caller decides again (not woken here, so a pass that
  // then fails keeps its backoff).
  bool stand_in_line(const StartCandidate& candidate);
  // A reservation the pass did not use (the run did not start): the place
  // is free again, unless the informer shows the run Running.
  void release(const std::string& run_key);
  // The agent asks for no start in this pass: it leaves the line.
  void withdraw(const std::string& agent);
  // A run as the informer stores it (null: not in the cache), and whether
  // its Job exists.
  void observe_run(const std::string& run_key, const Json* run, bool has_job);
  // A policy's cap or selection changed (pools_of answers differently):
  // wakes whoever may start now.
  void pools_changed();

  // Places in use across the fleet (the operator-wide pool).
  int64_t in_use() const;
  // Places in use by the runs of `pool`'s agents ("": the operator-wide pool).
  int64_t in_use(const std::string& pool) const;
  std::size_t waiting() const;
  // Runs shown started and not final, by agent key (a HeartbeatPolicy's
  // runningRuns sums its agents'); empty when the gate tracks nothing.
  std::map<std::string, int64_t> started_by_agent() const;

 private:
  struct Waiting {
    StartCandidate candidate;
    std::chrono::steady_clock::time_point expires{};
  };
  struct Reservation {
    std::chrono::steady_clock::time_point expires{};
    std::string agent;  // "" when unknown (a Job seen without its run)
  };
  struct Before {
    bool operator()(const StartCandidate* a, const StartCandidate* b) const {
      return starts_before(*a, *b);
    }
  };
  // Each agent's policy pools, asked once per agent within one operation.
  using Membership = std::map<std::string, std::vector<PoolCap>>;

  // Whether runs are counted at all: some cap may hold them.
  bool tracking() const { return cap_ > 0 || static_cast<bool>(pools_of_); }
  int64_t in_use_locked() const;
  const std::vector<PoolCap>& policy_pools_locked(const std::string& agent, Membership& memo) const;
  bool in_pool_locked(const std::string& agent, const std::string& pool, Membership& memo) const;
  // The pools that hold `agent`: the operator-wide one first when capped.
  std::vector<PoolCap> pools_locked(const std::string& agent, Membership& memo) const;
  int64_t in_use_locked(const std::string& pool, Membership& memo) const;
  std::vector<PoolState> states_locked(const std::vector<PoolCap>& pools, Membership& memo) const;
  std::string known_agent_locked(const std::string& run_key) const;
  // Keeps held_by_ in step with started_ and reserved_ for `run_key`.
  void reindex_locked(const std::string& run_key);
  // Whether the candidate's run holds a place already (started or reserved).
  bool holds_place_locked(const StartCandidate& candidate);
  // `may_reserve` false: only stands in line, whatever the pools say.
  Admission admit_locked(const StartCandidate& candidate, std::chrono::steady_clock::time_point now,
                         bool may_reserve = true);
  // Whether anything lapsed (places or places in line freed).
  bool expire_locked(std::chrono::steady_clock::time_point now);
  // Whether the agent stood in line.
  bool erase_waiting_locked(const std::string& agent);
  std::vector<const StartCandidate*> line_locked() const;
  // Wakes every waiting agent (but `except`, which is being answered) that
  // may start now; unlocks first.
  void wake_admissible(std::unique_lock<std::mutex>& lock, const std::string& except = {});

  const int64_t cap_;
  SteadyClock steady_;
  Wake wake_;
  PoolsOf pools_of_;
  mutable std::mutex mutex_;
  std::map<std::string, std::string> started_;   // run keys shown started, not final -> agent
  std::map<std::string, Reservation> reserved_;  // run key -> its end and agent
  // Every reservation made, in the order of its end (ends only grow: now +
  // kReservationTtl on a steady clock), so lapsed ones are found without a
  // walk of every reservation at each admission (at 100,000 agents that
  // walk was most of the operator's CPU). A record whose reservation was
  // given back or made again since is skipped.
  std::deque<std::pair<std::chrono::steady_clock::time_point, std::string>> reservation_ends_;
  // The run keys in started_ or reserved_, by the agent they count for
  // (held_by_key), so a snapshot finds an agent's places without a walk.
  std::map<std::string, std::set<std::string>> held_by_;
  std::map<std::string, std::string> held_as_;    // run key -> its key in held_by_
  std::map<std::string, Waiting> waiting_;        // agent key -> its candidate
  std::set<const StartCandidate*, Before> line_;  // waiting_'s candidates, in order
};

}  // namespace hb::controllers
