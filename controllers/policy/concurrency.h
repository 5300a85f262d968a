// Concurrency caps. The operator-wide one (--max-concurrent-runs): at most
// `cap` heartbeats run at once across every Agent the operator manages. A
// HeartbeatPolicy's maxConcurrentRuns caps the agents it selects the same
// way; each cap is a pool, and a run starts only when every pool its agent
// belongs to admits it. Runs that would start beyond a cap wait Queued
// (reason ConcurrencyLimited) and start in the order of the time they were
// asked for (a scheduler run's slot), not in the order their agents happen to
// be reconciled. Pure: the shell (shell/concurrency_gate.h) keeps the fleet's
// counts and asks these.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/model/json_util.h"

namespace hb::controllers {

inline constexpr const char* kReasonConcurrencyLimited = "ConcurrencyLimited";
// A run held by the cap is looked at again this often, besides the wakeup
// the gate sends when a place frees (kept in memory only).
inline constexpr std::chrono::seconds kConcurrencyRecheck{60};
// The flag's bound: far above what one operator's API budget can start.
inline constexpr int64_t kMaxConcurrentRunsMax = 100000;

// One agent's run that wants to start. Agents start one run at a time, so an
// agent has at most one.
struct StartCandidate {
  std::string agent;  // "ns/name"
  std::string run;    // "ns/name"
  TimePoint order{};  // when it was asked for: earlier starts first
};

// Earlier `order` first; the agent key breaks ties, so the order is total.
bool starts_before(const StartCandidate& a, const StartCandidate& b);

struct Admission {
  bool admitted = false;
  int64_t ahead = 0;    // waiting candidates that start before this one
  std::string message;  // why it waits ("" when admitted)

  static Admission yes(int64_t ahead = 0) { return {true, ahead, {}}; }
  static Admission no(int64_t ahead, std::string message) {
    return {false, ahead, std::move(message)};
  }
};

// The operator-wide pool's key, and how its refusals name the limit.
inline constexpr std::string_view kOperatorPool = "";
inline constexpr std::string_view kOperatorLimit = "--max-concurrent-runs";

// A cap that applies to an agent.
struct PoolCap {
  std::string pool;  // "" = the operator-wide cap; otherwise a policy key "ns/name"
  int64_t cap = 0;   // > 0
};

// How a refusal names a pool's limit: the flag for the operator-wide pool,
// the policy ("HeartbeatPolicy team-a, maxConcurrentRuns") for the others.
std::string limit_name(std::string_view pool);

// Whether `candidate` may start now: a place is free (`in_use` < `cap`) and
// fewer candidates that start before it wait than there are free places.
// `waiting_in_order` is sorted by starts_before and may hold the candidate
// itself (it is not counted). cap <= 0: no cap. A refusal names `limit`.
Admission admit_start(int64_t cap, int64_t in_use,
                      const std::vector<const StartCandidate*>& waiting_in_order,
                      const StartCandidate& candidate, std::string_view limit = kOperatorLimit);

// One pool as the shell counts it at one moment.
struct PoolState {
  std::string pool;
  int64_t cap = 0;                          // <= 0: no cap
  int64_t in_use = 0;                       // started and reserved runs of the pool's agents
  std::vector<const StartCandidate*> line;  // its agents' waiting candidates, by starts_before
};

// admit_start in every pool of `pools` (the ones the candidate's agent
// belongs to): admitted when all admit. A refusal is the one with the most
// runs ahead (the longest wait); on a tie, the first such pool's.
Admission admit_start_in_pools(const std::vector<PoolState>& pools,
                               const StartCandidate& candidate);

// What a decision needs of the gate to admit a start without calling it:
// each pool of the agent as counted at one moment, and which of the agent's
// runs hold a place already (asking again for one keeps its place). The
// shell commits the admission afterwards; the gate checks it again then.
struct PoolSnapshot {
  std::string pool;
  int64_t cap = 0;                   // <= 0: no cap
  int64_t in_use = 0;                // started and reserved runs of the pool's agents
  std::vector<StartCandidate> line;  // its agents' waiting candidates, by starts_before
};
struct GateSnapshot {
  std::vector<PoolSnapshot> pools;              // the pools that hold the agent
  std::vector<std::string> runs_holding_place;  // run keys "ns/name"
};

// admit_start_in_pools over a snapshot: what the gate would answer if
// nothing changed since it was taken.
Admission admit_from_snapshot(const GateSnapshot& gate, const StartCandidate& candidate);

// The waiting agents to wake when places free up: the first (cap - in_use)
// in order (each then asks admit_start again).
std::vector<std::string> agents_to_wake(int64_t cap, int64_t in_use,
                                        const std::vector<const StartCandidate*>& waiting_in_order);

// The waiting agents that admit_start_in_pools would admit now, in order:
// those among the first (cap - in_use) of every line they stand in.
// `pools` holds every pool with a waiting agent; a waiting candidate in no
// line (its agent left its pools) may start at once.
std::vector<std::string> agents_to_wake_in_pools(
    const std::vector<PoolState>& pools,
    const std::vector<const StartCandidate*>& waiting_in_order);

// The agent ("ns/name") of a run: the run key's namespace and the run's
// spec.agentRef.name; "" when the run names none.
std::string agent_of_run(std::string_view run_key, const Json& run);

// Whether a run as the informer stores it (null: not in the cache) holds a
// place: not final, and Running or with its Job (a started run's Running
// status is written a pass after its Job). The gate and the policies'
// runningRuns count by this one rule.
bool run_holds_place(const Json* run, bool has_job);

}  // namespace hb::controllers
