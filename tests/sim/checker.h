// The invariants the operator promises, checked as the simulation runs:
// on every write the API server accepts (the observer) and on the whole
// state after every step. A violation names the object and what broke.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/sim/api_server.h"

namespace hb::sim {

// A user's change (spec.paused) may take this long to reach the operator's
// caches; a run started in that window started before the change was seen.
inline constexpr std::chrono::seconds kUserChangeSeenWithin{10};
// While no run or Agent changes, the whole state is checked again at least
// this often (only a deadline can pass meanwhile).
inline constexpr std::chrono::seconds kStateRecheckEvery{1};
// A Job the operator made stands without its HeartbeatRun at most this
// long (true time) once a leader is up. A crash, a lost Lease or an API
// fault can fall between the dispatch path's two writes (the run and its
// Job), and the next pass of a leader repairs it, adopting what is there and
// making what is not. A leader up this long has seen the Job (the operator
// gives its own cache kJobCacheGrace, 30 s, to show a Job just made) and
// retried a failing pass at least once at the work queue's longest backoff
// (kWorkqueueBackoffMax, 60 s).
inline constexpr std::chrono::seconds kJobFindsItsRunWithin{90};

struct CheckerConfig {
  std::chrono::seconds stall_window{60};
  // A run's overrun allowed past timeout + grace + the controller's slack +
  // the stall window (reconcile retries after faults).
  std::chrono::seconds overrun_allowance{120};
  // When the runner of a run ("ns/name") last beat, on true time (the
  // node's record); a run that beat this recently is not Stalled.
  std::function<std::optional<TimePoint>(const std::string&)> last_beat;
  // The operator's --max-concurrent-runs (0: none): no Job is made while
  // that many runs are started and not final.
  int64_t max_concurrent_runs = 0;
  // The operator's --run-retention: a run whose Agent is gone is deleted no
  // sooner than this after it finished (0: never).
  std::chrono::seconds run_retention{std::chrono::hours(24 * 30)};
};

// What the checker reads from a HeartbeatPolicy on the server (its own
// reading of the CRD, not the operator's parser).
}  // namespace hb::sim
namespace date {
class time_zone;
}
namespace hb::sim {

struct PolicyLimits {
  std::string ns, name;
  Json selector;                          // spec.selector (null: every Agent of ns)
  int64_t max_concurrent_runs = 0;        // <= 0: no cap
  int64_t monthly_cents = 0;              // <= 0: no team budget
  int64_t daily_cents = 0;                // spec.budget.dailyCents; <= 0: none
  const date::time_zone* zone = nullptr;  // spec.timeZone; nullptr: UTC
  bool paused = false;                    // spec.paused: none of its agents starts a run
};
PolicyLimits policy_limits(const Json& policy);
// Whether the policy selects the Agent: same namespace, and its labels
// satisfy matchLabels and matchExpressions.
bool policy_selects(const PolicyLimits& policy, const Json& agent);

class Checker {
 public:
  Checker(const ApiServer& server, CheckerConfig config) : server_(server), config_(config) {}

  // ApiServer's WriteObserver.
  void on_write(Actor actor, const std::string& resource, const std::optional<Json>& before,
                const std::optional<Json>& after, TimePoint now);
  // The state after a step. `operator_up_since`: deadlines are only held
  // against an operator that has been running long enough to act.
  void check_state(TimePoint now, TimePoint operator_up_since);
  // After the drain: every run final and counted once, spend equal to the sum.
  void check_settled();

  const std::vector<std::string>& violations() const { return violations_; }
  uint64_t runs_counted() const { return counted_.size(); }
  // How far a team's counted spend went past its budget in one month, at
  // worst: in cents, and in model calls of the runs that took it past.
  struct Overshoot {
    double cents = 0, calls = 0;
    int64_t runs = 0;  // the counted runs that took the team past its budget
  };
  Overshoot worst_team_overshoot() const { return worst_overshoot_; }
  // The most one run took its team past a budget, in calls of its size:
  // runs no person changed money limits under, and the others.
  double worst_run_overshoot_calls() const { return worst_run_overshoot_calls_; }
  double worst_run_overshoot_calls_after_change() const {
    return worst_run_overshoot_calls_after_change_;
  }

 private:
  void violation(const std::string& what) {
    if (violations_.size() < 20) violations_.push_back(what);
  }
  // status.idleStreak and .providerErrorStreak move once per newly counted
  // run, or reset.
  void check_streaks(const Json& before, const Json& after);
  void on_run_write(Actor actor, const std::optional<Json>& before,
                    const std::optional<Json>& after);
  // The operator deleted `run`: the audit record goes only once final and
  // counted (history limits), and a run whose Agent is gone only past
  // retention, or by the history limits of an Agent deleted so recently that
  // the operator may not have seen it go.
  void on_run_delete(const Json& run, TimePoint now);
  bool agent_deleted_unseen(const Json& run) const;
  void on_start(const Json& job, TimePoint now);
  void check_start_stamp(const Json& run, TimePoint job_made);
  void on_run_start(const Json& run, TimePoint now);
  void on_ledger_write(const std::optional<Json>& before, const std::optional<Json>& after);
  void check_concurrency(const Json& run);
  // Every HeartbeatPolicy over the started run's agent: its cap and its team budget.
  void check_policies(const Json& run);
  void check_policy_cap(const PolicyLimits& policy, const Json& started);
  void check_team_budget(const PolicyLimits& policy, const Json& started);
  void check_policy_pause(const PolicyLimits& policy, const Json& started);
  // A policy's spec or an Agent's labels changed in `ns`; re-times the team budgets there.
  void on_policy_input_write(const std::string& resource, const std::optional<Json>& before,
                             const std::optional<Json>& after);
  // Notes since when each policy of `ns` has stood spent (or forgets it).
  void retime_team_budgets(const std::string& ns);
  // The current UTC month ("YYYY-MM", true time); the selected agents'
  // spend in it, and whether it reached the team budget.
  std::string current_period() const;
  double team_spend(const PolicyLimits& policy) const;
  bool team_budget_spent(const PolicyLimits& policy) const;
  void on_stall_verdict(const Json& run);
  // The operator created `job`: the slot of its run (now, or once its run
  // is made) gets one Job more.
  void on_job_create(const Json& job);
  void count_slot_job(const std::string& slot, int jobs);
  // Every Job the operator made has exactly one run within
  // kJobFindsItsRunWithin, unless the garbage collector is due to delete it.
  void check_jobs_have_runs(TimePoint operator_up_since);
  double spend_of(const Json& agent) const;
  static bool held_for_a_person(const Json& agent);
  double counted_sum(const std::string& agent_key, const std::string& period) const;

  const ApiServer& server_;
  CheckerConfig config_;
  std::vector<std::string> violations_;
  std::set<std::string> slots_;  // "ns/agent|slot" of every scheduler run ever made
  // "ns/agent|value" of every run made for a heartbeat.dev/invoke value.
  std::set<std::string> invokes_;
  struct Counted {
    std::string agent_key, period;
    double cents = 0;
  };
  std::map<std::string, Counted> counted_;      // by run uid
  std::map<std::string, double> counted_sums_;  // "ns/agent|period" -> cents
  // "ns/policy|period" -> cents of the counted runs whose Job was stamped
  // with the policy at start.
  std::map<std::string, double> team_counted_;
  // The same, with a run charged its bound for an out-of-bounds usage report
  // counted at what was held for it: what it took past its hold is the
  // runner's breach, not room the operator gave away to others.
  std::map<std::string, double> team_measured_;
  // A counted run's share of its teams' overshoot (worst_team_overshoot).
  void measure_overshoot(const std::string& policy_key, const std::string& period, double cents,
                         double llm_calls, bool limits_moved);
  std::map<std::string, Overshoot> overshoot_;  // "ns/policy|period"
  Overshoot worst_overshoot_;
  double worst_run_overshoot_calls_ = 0;
  double worst_run_overshoot_calls_after_change_ = 0;
  // A run's start as the checker saw it: the policies on its Job template
  // (what the operator admitted it under, which its author cannot rewrite)
  // and the Job's creation (true time).
  struct StartSeen {
    std::vector<std::string> admitted_by;
    TimePoint at{};
  };
  std::map<std::string, StartSeen> started_;  // by run uid
  // By "ns/name": the runs whose Job was made first, until they are made.
  std::map<std::string, StartSeen> started_before_made_;
  // "ns/name" -> uid -> when that Agent was deleted (true time), for
  // kUserChangeSeenWithin.
  std::map<std::string, std::map<std::string, TimePoint>> agents_deleted_at_;
  // Namespace -> when a person last changed a budget, price or label there.
  std::map<std::string, TimePoint> limits_changed_at_;
  // When the policies or Agent labels of a namespace last changed (true
  // time): the operator may start by the old ones until it sees the change.
  std::map<std::string, TimePoint> selection_changed_at_;
  // Since when a policy's ("ns/name") team budget has stood spent, and the
  // month it was spent in.
  struct Spent {
    TimePoint since{};
    std::string period;
  };
  std::map<std::string, Spent> team_budget_spent_;  // period: the month or a day key
  double team_spend_today(const PolicyLimits& policy) const;
  std::string team_budget_spent_in(const PolicyLimits& policy) const;
  // Since when a policy ("ns/name") has stood paused (true time).
  std::map<std::string, TimePoint> policy_paused_since_;
  // The uids of the Jobs the operator created; of those, since when each
  // has stood without its run (true time), and those already reported.
  std::set<std::string> jobs_made_;
  std::map<std::string, TimePoint> job_without_run_since_;
  std::set<std::string> jobs_reported_;
  // "ns/agent|slot" -> the Jobs ever created for that scheduler slot.
  std::map<std::string, int> slot_jobs_;
  // "ns/run" -> Jobs created while no run of that name stood: their slot is
  // known once the run is made.
  std::map<std::string, int> jobs_before_run_;
  uint64_t checked_runs_version_ = 0, checked_agents_version_ = 0, checked_jobs_version_ = 0;
  TimePoint checked_at_{};
};

}  // namespace hb::sim
