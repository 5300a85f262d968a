#include "controllers/agent/agent_desired_status.h"

#include "api/hb_assert.h"
#include "api/utf8.h"
#include "controllers/agent/agent_conditions.h"
#include "controllers/agent/agent_decision.h"
#include "controllers/model/names.h"

namespace hb::controllers {

namespace {

const char* agent_phase(bool spec_valid, bool active, const AgentConditions& conditions) {
  HB_ASSERT_MSG(conditions.spec_valid.status == spec_valid,
                "the phase and the SpecValid condition judge the same spec");
  if (!spec_valid) return kAgentPhaseInvalid;
  if (active) return kAgentPhaseRunning;
  if (conditions.budget_exceeded.status) return kAgentPhaseBudgetExceeded;
  if (conditions.paused.status) return kAgentPhasePaused;
  return kAgentPhaseIdle;
}

// Fields that move with the ledger, the spec or the conditions: a change
// there is written at once.
bool differs_beyond_run_start(const AgentStatus& want, const AgentView& view) {
  const AgentStatus& stored = view.status;
  return !view.status_canonical || want.observed_generation != stored.observed_generation ||
         !same_conditions(want.conditions, stored.conditions) ||
         want.last_heartbeat_time != stored.last_heartbeat_time ||
         want.paused_until != stored.paused_until || want.spend != stored.spend ||
         want.spend_today != stored.spend_today || want.capabilities != stored.capabilities ||
         !same_recent_runs(want.recent_runs, stored.recent_runs) ||
         want.last_invoke != stored.last_invoke || want.last_skipped != stored.last_skipped ||
         want.budget_hold != stored.budget_hold || want.idle_streak != stored.idle_streak ||
         want.provider_error_streak != stored.provider_error_streak ||
         want.effective_interval != stored.effective_interval;
}

// Fields that also move when a run merely starts.
bool differs_in_run_start(const AgentStatus& want, const AgentStatus& stored) {
  return want.phase != stored.phase || want.last_schedule_time != stored.last_schedule_time ||
         want.next_heartbeat_time != stored.next_heartbeat_time ||
         want.active_run != stored.active_run;
}

// The end of the coalescing window from the active run's start; nullopt
// when there is no window or it has passed.
std::optional<TimePoint> run_start_write_due(const StatusInput& in) {
  if (!in.active_run || in.coalesce_window.count() <= 0) return std::nullopt;
  HB_ASSERT_MSG(in.starting_now || in.running != nullptr,
                "an active run is the one starting or the one running");
  const std::optional<TimePoint> started =
      in.starting_now ? std::optional<TimePoint>(in.now) : time_at(in.running->status, "startedAt");
  if (!started || in.now >= *started + in.coalesce_window) return std::nullopt;
  return *started + in.coalesce_window;
}

std::optional<LastInvoke> last_invoke(const StatusInput& in) {
  if (in.invoked == nullptr || !in.view.invoke) return in.view.status.last_invoke;
  const std::string& value = *in.view.invoke;
  LastInvoke last{api::utf8_prefix_string(value, kLastInvokeValueBytesMax), long_hash(value),
                  in.invoked->name};
  HB_ASSERT_MSG(last.value.size() <= kLastInvokeValueBytesMax && !last.run.empty(),
                "the stored invoke value stays within its cap and names its run");
  return last;
}

}  // namespace

StatusPlan plan_status(StatusInput in) {
  const AgentStatus& stored = in.view.status;
  const AgentSpec& spec = in.view.spec.spec;
  const bool spec_valid = in.spec_errors.empty();
  const std::string errors = spec_valid ? std::string() : join_errors(in.spec_errors);
  const SpecValidity validity{spec_valid, in.object_in_the_way ? "ObjectInTheWay" : "InvalidSpec",
                              errors};
  const std::optional<RunProblem> run_problem = newest_run_problem(in.runs);
  const AgentConditions conditions =
      wanted_conditions(validity, in.blocks, run_problem, in.skipped, spec.schedule.has_value());
  StatusPlan plan;
  plan.events = condition_events(stored.conditions, conditions, spec.name);
  LedgerResult& ledger = in.counted.ledger;
  plan.status = AgentStatus{
      .observed_generation = spec.generation,
      .conditions = conditions_for(stored.conditions, conditions, spec.generation, in.now),
      .phase = agent_phase(spec_valid, in.active_run.has_value(), conditions),
      .last_schedule_time = in.last_schedule,
      .last_heartbeat_time = ledger.last_heartbeat,
      .next_heartbeat_time = in.agent_valid ? in.next_heartbeat : std::nullopt,
      .paused_until = ledger.paused_until,
      .active_run = in.active_run.value_or(std::string()),
      .spend = std::move(ledger.spend),
      .spend_today = std::move(in.spend_today),
      .capabilities = spec.type,
      .recent_runs = std::move(in.counted.recent_runs),
      .last_invoke = last_invoke(in),
      .last_skipped = in.skipped,
      .budget_hold = std::move(in.budget_hold),
      .idle_streak = in.backoff.idle_streak,
      .provider_error_streak = in.backoff.provider_streak,
      .effective_interval = std::move(in.backoff.effective_interval)};
  const bool must_write = differs_beyond_run_start(plan.status, in.view);
  const bool run_start_only = !must_write && differs_in_run_start(plan.status, stored);
  if (run_start_only) plan.deferred_until = run_start_write_due(in);
  plan.write_now = must_write || (run_start_only && !plan.deferred_until);
  HB_ASSERT_MSG(!plan.deferred_until || (*plan.deferred_until > in.now && !plan.write_now),
                "a deferred write waits for a window still open");
  HB_ASSERT_MSG(plan.status.phase != kAgentPhaseRunning || !plan.status.active_run.empty(),
                "a Running agent names its run");
  return plan;
}

}  // namespace hb::controllers
