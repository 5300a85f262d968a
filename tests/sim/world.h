// One seeded run of the whole operator: the real AgentReconciler, decisions,
// WorkQueue, ClusterCache, concurrency gate and HeartbeatPolicy index over
// the simulated API server, node and runners, on a simulated clock, with
// faults (API errors, lost answers, watch lag and relists, operator crashes
// and restarts, two replicas with leader election and a leader frozen past
// its term, clock skew and jumps) and a user who pauses, invokes, changes
// budgets, moves Agents between teams and changes the team policy. The same
// seed replays the same run exactly: one thread, every choice drawn from
// the seed.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/sim/node.h"

namespace hb::sim {

// The operator's wall clock jumps by at most this, and strays at most
// kClockSkewMax from true time (the runner's own clock is 10 min behind to 2 min ahead).
inline constexpr std::chrono::seconds kClockJumpMax{90};
inline constexpr std::chrono::seconds kClockSkewMax{300};

struct SimOptions {
  uint64_t seed = 1;
  double hours = 6;  // simulated time before the drain
  int agents = 3;
  bool faults = true;  // API faults, watch relists, crashes, skew
  bool verbose = false;
  // Where simulated time begins: a seed starts within a day after the
  // default (mid-March, one spend period), within an hour after `start`
  // when set (e.g. just before a daylight-saving transition).
  std::string start;  // RFC 3339; empty: the default
  // The operator's --max-concurrent-runs (0: no cap). Below the fleet's
  // size by default, so runs wait for places and the cap is checked.
  int64_t max_concurrent_runs = 2;
  // The HeartbeatPolicy "team-a" (namespace team-a, selector team=a) caps
  // its agents' concurrent runs at this (0: no policy at all). Its team
  // budget is drawn from the seed (none half the time, else a few cents,
  // so the hour reaches it); the user changes both now and then.
  int64_t policy_max_concurrent_runs = 1;
};

struct SimReport {
  uint64_t seed = 0;
  std::vector<std::string> violations;
  uint64_t runs_created = 0, runs_counted = 0, reconciles = 0, reconcile_errors = 0;
  uint64_t crashes = 0, relists = 0, api_faults = 0, user_actions = 0, steps = 0;
  uint64_t clock_jumps = 0, leader_changes = 0, freezes = 0;
  // Windows in which every write of a run's status failed (503).
  uint64_t run_status_outages = 0;
  // Runs whose final status was their first after the start (the Pod ended
  // before the Running status could be written).
  uint64_t final_before_running = 0;
  // The dispatch path's two writes (the run, then its Job) apart: runs whose
  // Job an operator process made other than the one that made the run (it
  // crashed or lost its Lease between them), and runs a pass made and then
  // failed before their Job (an API fault between them; the retry makes it).
  uint64_t jobs_by_next_process = 0, runs_left_by_failed_pass = 0;
  // Crashes the world dealt right after an operator's run create.
  uint64_t crashes_after_run_create = 0;
  // A slot's run started Job first (run_after_job.h): Jobs made before
  // their run, crashes dealt right after one, and runs made from their Job
  // by another operator process than the one that made the Job.
  uint64_t jobs_before_run = 0, crashes_after_job_first = 0, runs_by_next_process = 0;
  // Runs the operator-wide cap held Queued (ConcurrencyLimited), and runs a
  // HeartbeatPolicy's cap held (its name in the message); a run held by
  // one and then the other counts in both.
  uint64_t concurrency_holds = 0, policy_holds = 0;
  uint64_t policy_budget_stops = 0;  // Agents that turned BudgetExceeded by a team budget
  uint64_t policy_pauses = 0;        // times the user paused the policy (spec.paused)
  uint64_t reapplies = 0;            // Agents deleted and applied again (the same name)
  uint64_t price_changes = 0;        // Agents whose author zeroed their prices or put them back
  uint64_t stamp_edits = 0;          // runs whose policies annotation the author rewrote
  // The most a team's counted spend went past its budget in a month, in
  // cents and in model calls of the runs that took it past.
  double team_overshoot_cents = 0, team_overshoot_calls = 0;
  int64_t team_overshoot_runs = 0;
  double run_overshoot_calls = 0, run_overshoot_calls_after_change = 0;
  NodeStats node;
  double wall_seconds = 0;
};

SimReport simulate(const SimOptions& options);

// The command that replays one seed.
std::string replay_command(const std::string& program, const SimOptions& options);

}  // namespace hb::sim
