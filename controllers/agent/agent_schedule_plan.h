// The schedule part of the Agent decision: the slot this pass runs (at most
// the most recent due one, never a burst), the next heartbeat, and when to
// look at the agent again. Pure steps of decide_agent.
#pragma once

#include <optional>
#include <vector>

#include "controllers/agent/agent_decision.h"
#include "controllers/schedule/blocks.h"

namespace hb::controllers {

// The later of two times; a missing one is ignored.
std::optional<TimePoint> later_time(std::optional<TimePoint> a, std::optional<TimePoint> b);

struct SchedulePlan {
  std::optional<TimePoint> run_slot;     // the slot this pass runs: the new lastScheduleTime
  std::optional<RunRequest> create_run;  // its run, unless it exists or a queued run takes it
  std::optional<TimePoint> next_heartbeat;
  std::vector<Event> events;  // missed slots, the run scheduled or coalesced
};

// For a valid agent with an interval or schedule. `first_waiting`: the
// Queued run that starts next, if any (a due slot folds into it).
// `intervals_after_last`: idle backoff's gap (backoff_intervals).
SchedulePlan plan_schedule(const AgentSpec& spec, const schedule::BlockResult& blocks,
                           std::optional<TimePoint> last_scheduled,
                           const std::vector<RunObservation>& runs,
                           const RunObservation* first_waiting, TimePoint now,
                           int64_t intervals_after_last = 1);

// The slot plan_schedule would run now if nothing blocked the agent and
// idle backoff added no gap, when its run does not exist yet: a superset of
// the passes that make a scheduler run, known before deciding.
// `last_scheduled`: as sort_runs_by_state finds it.
std::optional<TimePoint> due_slot_without_run(const AgentSpec& spec,
                                              std::optional<TimePoint> last_scheduled,
                                              const std::vector<RunObservation>& runs,
                                              TimePoint now);

// When to look again: the earliest future one of a deferred status write,
// the next heartbeat, a lifting block and the runs' own rechecks (a deadline,
// a stall); nullopt: only a change wakes the agent.
std::optional<TimePoint> requeue_time(std::optional<TimePoint> deferred_write,
                                      std::optional<TimePoint> next_heartbeat,
                                      const schedule::BlockResult& blocks,
                                      const std::vector<RunObservation>& runs, TimePoint now);

}  // namespace hb::controllers
