// The Agent status the decision wants, its conditions' Events, and whether
// it must be written now or may wait for the status coalescing window.
// Pure steps of decide_agent.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "controllers/agent/agent_view.h"
#include "controllers/model/event.h"
#include "controllers/run/run_status.h"
#include "controllers/schedule/blocks.h"
#include "controllers/spend/agent_ledger.h"

namespace hb::controllers {

struct RunRequest;

struct StatusInput {
  const AgentView& view;
  const std::vector<std::string>& spec_errors;  // empty: the spec is valid
  bool object_in_the_way = false;               // the spec errors say an object is in the way
  bool agent_valid = false;  // the spec is valid and the agent is not being deleted
  const schedule::BlockResult& blocks;
  const std::vector<RunObservation>& runs;
  CountedLedger counted;                // moved into the status
  std::optional<DaySpend> spend_today;  // status.spendToday (agent_ledger.h spend_today)
  std::optional<std::string> active_run;
  bool starting_now = false;                // active_run starts in this pass
  const RunObservation* running = nullptr;  // else active_run is this run
  std::chrono::seconds coalesce_window{0};  // AgentDecisionInput::status_coalesce
  std::optional<TimePoint> last_schedule;
  std::optional<TimePoint> next_heartbeat;
  // The run this pass makes for the invoke annotation's value, if any: it
  // becomes status.lastInvoke (written after the run in the same pass).
  const RunRequest* invoked = nullptr;
  std::optional<SkippedHeartbeat> skipped;  // status.lastSkippedHeartbeat (prompt_skip.h)
  std::optional<BudgetHold> budget_hold;    // status.budgetHold (budget_hold.h)
  BackoffState backoff;  // status.idleStreak, .providerErrorStreak, .effectiveInterval
  TimePoint now{};
};

struct StatusPlan {
  AgentStatus status;
  std::vector<Event> events;  // condition transitions
  bool write_now = false;     // differs from the stored status and may not wait
  // Differs only by a run's start (phase Running, activeRun,
  // lastScheduleTime, nextHeartbeatTime): written at the end of the
  // coalescing window from that start, so a heartbeat that ends sooner
  // writes its start and its end in one update.
  std::optional<TimePoint> deferred_until;
};

StatusPlan plan_status(StatusInput in);

}  // namespace hb::controllers
