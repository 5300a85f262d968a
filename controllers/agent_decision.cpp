#include "controllers/agent_decision.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "controllers/names.h"
#include "controllers/schedule/blocks.h"
#include "controllers/schedule/run_name.h"
#include "controllers/schedule/spend.h"
#include "controllers/schedule/utc_time.h"

namespace hb::controllers {

namespace {

using schedule::format_rfc3339;

std::optional<TimePoint> later(std::optional<TimePoint> a, std::optional<TimePoint> b) {
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}

void earliest(std::optional<TimePoint>& slot, std::optional<TimePoint> candidate, TimePoint now) {
  if (!candidate || *candidate <= now) return;
  if (!slot || *candidate < *slot) slot = candidate;
}

const std::string_view kTrue = "True";
const std::string_view kFalse = "False";

struct WantedCondition {
  const char* type;
  bool status;
  std::string_view reason;
  std::string_view message;
};

// `c` is what make_condition would return for `w` (it keeps its transition time).
bool condition_is(const Condition& c, const WantedCondition& w, int64_t generation) {
  return c.type == w.type && c.status == (w.status ? kTrue : kFalse) &&
         c.observed_generation == generation && c.reason == w.reason && c.message == w.message &&
         !c.last_transition_time.empty();
}

// The wanted conditions; the stored list itself (shared) when it already says them.
Conditions conditions_for(const Conditions& stored, const std::vector<WantedCondition>& wanted,
                          int64_t generation, TimePoint now) {
  if (stored != nullptr && stored->size() == wanted.size()) {
    bool same = true;
    for (size_t i = 0; same && i < wanted.size(); ++i) {
      same = condition_is((*stored)[i], wanted[i], generation);
    }
    if (same) return stored;
  }
  auto conditions = std::make_shared<std::vector<Condition>>();
  conditions->reserve(wanted.size());
  for (const WantedCondition& w : wanted) {
    conditions->push_back(
        make_condition(stored, w.type, w.status, w.reason, w.message, generation, now));
  }
  return conditions;
}

bool condition_status(const Conditions& conditions, std::string_view type, bool* out) {
  if (conditions == nullptr) return false;
  for (const Condition& c : *conditions) {
    if (c.type == type) {
      *out = c.status == kTrue;
      return true;
    }
  }
  return false;
}

// The spend as of now's UTC month: an earlier month's counts as nothing.
Spend spend_this_month(const std::optional<Spend>& stored, TimePoint now) {
  std::string period = schedule::spend_period(now);
  if (stored && stored->period == period) return *stored;
  return Spend{std::move(period), 0, 0, 0};
}

}  // namespace

Condition make_condition(const Conditions& existing, std::string_view type, bool status,
                         std::string_view reason, std::string_view message, int64_t generation,
                         TimePoint now) {
  const std::string_view status_text = status ? kTrue : kFalse;
  const std::string* kept = nullptr;  // the last matching condition's time wins
  if (existing != nullptr) {
    for (const Condition& c : *existing) {
      if (c.type == type && c.status == status_text && !c.last_transition_time.empty()) {
        kept = &c.last_transition_time;
      }
    }
  }
  return Condition{std::string(type),   std::string(status_text),
                   generation,          kept != nullptr ? *kept : format_rfc3339(now),
                   std::string(reason), std::string(message)};
}

std::string invoke_run_name(const AgentSpec& agent, std::string_view value) {
  // The value alone names the run: a pass repeated after a failed annotation
  // removal (a 409, a crash) finds the run it made instead of making another.
  return derived_name(agent.name, "invoke-" + long_hash(agent.uid + "/" + std::string(value)));
}

Json make_run_object(const AgentSpec& agent, std::string_view source, std::string_view name,
                     std::string_view generate_name, std::optional<TimePoint> slot,
                     std::string_view trigger_detail) {
  // Built member by member: brace-lists of pairs make and copy a temporary
  // array per pair.
  Json labels = Json::object();
  labels.emplace(kLabelAgent, label_safe_name(agent.name));
  labels.emplace(kLabelManagedBy, kManagedByValue);
  Json owner = Json::object();
  owner.emplace("apiVersion", kApiVersion);
  owner.emplace("kind", kAgentKind);
  owner.emplace("name", agent.name);
  owner.emplace("uid", agent.uid);
  owner.emplace("controller", true);
  Json metadata = Json::object();
  metadata.emplace("namespace", agent.ns);
  metadata.emplace("labels", std::move(labels));
  metadata.emplace("ownerReferences", Json::array()).first->push_back(std::move(owner));
  if (!name.empty()) {
    metadata.emplace("name", name);
  } else {
    metadata.emplace("generateName", generate_name);
  }
  Json spec = Json::object();
  spec.emplace("agentRef", Json::object()).first->emplace("name", agent.name);
  spec.emplace("invocationSource", source);
  if (slot) spec.emplace("scheduledTime", format_rfc3339(*slot));
  if (!trigger_detail.empty()) spec.emplace("triggerDetail", trigger_detail);
  Json run = Json::object();
  run.emplace("apiVersion", kApiVersion);
  run.emplace("kind", kRunKind);
  run.emplace("metadata", std::move(metadata));
  run.emplace("spec", std::move(spec));
  return run;
}

Json make_run_object(const AgentSpec& agent, const RunRequest& request) {
  return make_run_object(agent, request.source, request.name, "", request.slot,
                         request.trigger_detail);
}

bool monthly_budget_spent(const AgentView& agent, TimePoint now) {
  const Spend spend = spend_this_month(agent.status.spend, now);
  schedule::BlockInput in;
  in.monthly_budget_cents = agent.spec.spec.monthly_budget_cents;
  in.spent_cents_this_period = saturating_int64(std::floor(spend.cents));
  in.spend_period = spend.period;
  return schedule::evaluate_blocks(in, now).has(schedule::kReasonBudgetExceeded);
}

namespace {

// The kubelet's complaint when the newest run failed because its container
// could not be configured (a missing apiKeySecretRef key, say): the Agent's
// Ready condition carries it until a newer run gets further.
std::optional<std::string> newest_run_config_error(const std::vector<RunObservation>& runs) {
  const RunObservation* newest = nullptr;
  for (const RunObservation& run : runs) {
    if (newest == nullptr || run.view->created > newest->view->created) newest = &run;
  }
  if (newest == nullptr || newest->phase != RunPhase::kFailed) return std::nullopt;
  const bool fresh = newest->became_final;  // this pass decided it: read the new status
  const std::string reason = fresh ? string_at(newest->status, "reason") : newest->view->reason;
  if (reason != kReasonContainerConfigError) return std::nullopt;
  return "run " + newest->view->name + ": " +
         (fresh ? string_at(newest->status, "message") : newest->view->message);
}

}  // namespace

AgentDecision decide_agent(const AgentDecisionInput& in) {
  assert(in.view != nullptr || in.agent != nullptr);
  std::optional<AgentView> viewed_here;
  if (in.view == nullptr) viewed_here = view_agent(*in.agent);
  const AgentView& view = in.view != nullptr ? *in.view : *viewed_here;
  AgentDecision d;
  const TimePoint now = in.now;
  const AgentSpec& spec = view.spec.spec;
  if (!view.spec.errors.empty() || !in.env.object_in_the_way.empty()) {
    d.spec_errors = spec_errors(view.spec, in.env);
  }
  const bool spec_valid = d.spec_errors.empty();
  const AgentStatus& stored = view.status;

  // 1. Ledger: count final runs whose cost is not recorded yet.
  LedgerInput ledger_in;
  ledger_in.now = now;
  const RunObservation* running = nullptr;
  std::vector<const RunObservation*> queued;
  std::optional<TimePoint> last_scheduled = stored.last_schedule_time;
  for (const RunObservation& run : in.runs) {
    if (run.view->source == kSourceScheduler)
      last_scheduled = later(last_scheduled, run.view->scheduled_time);
    if (is_final(run.phase)) {
      if (!run.view->cost_recorded) {
        FinishedRun f;
        f.name = run.view->name;
        f.phase = run.phase;
        f.exit_code = int_at(run.status, "exitCode");
        f.usage = usage_from_status(run.status);
        f.finished_at = time_at(run.status, "finishedAt").value_or(now);
        f.pause_until = time_at(run.status, "pauseUntil");
        ledger_in.finished.push_back(std::move(f));
      }
    } else if (run.phase == RunPhase::kRunning) {
      running = &run;
    } else {
      queued.push_back(&run);
    }
  }
  // Nothing to count (the steady state): the stored ledger, rolled to this
  // month, and its recentRuns list shared rather than copied.
  LedgerResult ledger;
  RecentRuns recent = stored.recent_runs;
  if (ledger_in.finished.empty()) {
    ledger.spend = spend_this_month(stored.spend, now);
    ledger.last_heartbeat = stored.last_heartbeat_time;
    ledger.paused_until = stored.paused_until;
    if (recent == nullptr) recent = std::make_shared<const std::vector<LedgerEntry>>();
  } else {
    ledger_in.spend = stored.spend.value_or(Spend{});
    if (stored.recent_runs != nullptr) ledger_in.recent = *stored.recent_runs;
    ledger_in.last_heartbeat = stored.last_heartbeat_time;
    ledger_in.paused_until = stored.paused_until;
    ledger = apply_ledger(ledger_in);
    recent = std::make_shared<const std::vector<LedgerEntry>>(std::move(ledger.recent));
  }
  d.mark = ledger.mark;
  d.ledger_changed = !ledger.counted.empty();

  // 2. Blocks (board pause, pause_heartbeats, budget).
  schedule::BlockInput block_in;
  block_in.paused = spec.paused;
  block_in.paused_until = ledger.paused_until;
  block_in.monthly_budget_cents = spec.monthly_budget_cents;
  block_in.spent_cents_this_period = saturating_int64(std::floor(ledger.spend.cents));
  block_in.spend_period = ledger.spend.period;
  const schedule::BlockResult blocks = schedule::evaluate_blocks(block_in, now);
  const bool valid = spec_valid && !spec.deleting;

  // 3. The schedule: at most the most recent due slot, never a burst.
  std::optional<TimePoint> next_heartbeat;
  std::optional<TimePoint> record_slot;  // lastScheduleTime to write
  std::sort(queued.begin(), queued.end(), [](const RunObservation* a, const RunObservation* b) {
    return a->view->requested != b->view->requested ? a->view->requested < b->view->requested
                                                    : a->view->name < b->view->name;
  });
  // Later queued callbacks fold into the first: they never start.
  d.coalesce = coalesce_callbacks(queued);
  std::erase_if(queued, [&](const RunObservation* q) {
    return std::any_of(d.coalesce.begin(), d.coalesce.end(),
                       [&](const Coalescing& c) { return c.run == q->view->name; });
  });
  if (valid && spec.schedule) {
    const schedule::SlotDecision slot = schedule::decide_slot(
        *spec.schedule, spec.created, last_scheduled, spec.starting_deadline_seconds, now);
    if (slot.missed_too_late) {
      d.events.push_back({EventTarget::kAgent, spec.name, true, "MissedSchedule",
                          "the most recent due slot is older than startingDeadlineSeconds (" +
                              std::to_string(spec.starting_deadline_seconds.value_or(0)) +
                              "s); skipped " + std::to_string(slot.missed_count) + " slot(s)"});
    }
    if (slot.run_slot && !blocks.blocked()) {
      if (slot.missed_count > 0) {
        d.events.push_back({EventTarget::kAgent, spec.name, true, "MissedSchedule",
                            std::to_string(slot.missed_count) +
                                " slot(s) missed; running only the most recent, " +
                                format_rfc3339(*slot.run_slot)});
      }
      record_slot = slot.run_slot;
      d.scheduled_slot = slot.run_slot;
      const std::string name = schedule::scheduled_run_name(spec.name, *slot.run_slot);
      const bool exists = std::any_of(in.runs.begin(), in.runs.end(), [&](const RunObservation& r) {
        return r.view->name == name;
      });
      if (!exists && queued.empty()) {
        d.create_run = RunRequest{name, kSourceScheduler, slot.run_slot, ""};
        d.events.push_back(
            {EventTarget::kAgent, spec.name, false, "RunScheduled",
             "created HeartbeatRun " + name + " for " + format_rfc3339(*slot.run_slot),
             /*routine=*/true});
      } else if (!exists) {
        d.events.push_back({EventTarget::kAgent, spec.name, false, "ScheduleCoalesced",
                            "slot " + format_rfc3339(*slot.run_slot) +
                                " coalesced into the queued run " + queued.front()->view->name,
                            /*routine=*/true});
      }
    }
    if (!spec.paused) {
      if (!blocks.blocked()) {
        next_heartbeat = slot.next_slot;
      } else {
        // When the pause or the month lifts, the most recent slot runs then.
        const TimePoint lifts = std::max(blocks.paused_until_lifts_at.value_or(now),
                                         blocks.budget_resets_at.value_or(now));
        const schedule::SlotDecision at_lift =
            schedule::decide_slot(*spec.schedule, spec.created, later(last_scheduled, record_slot),
                                  spec.starting_deadline_seconds, lifts);
        next_heartbeat = at_lift.run_slot ? std::optional<TimePoint>(lifts) : at_lift.next_slot;
      }
    }
  }

  // 4. Start a queued run when the agent is free and unblocked.
  std::optional<std::string> active =
      running ? std::optional<std::string>(running->view->name) : std::nullopt;
  std::string wait_reason;
  if (!valid) {
    wait_reason = "waiting: the agent's spec is invalid (see condition SpecValid)";
  } else if (blocks.blocked()) {
    wait_reason = "waiting: " + blocks.blocks.front().message;
  } else if (running) {
    wait_reason = "waiting for run " + running->view->name + " to finish";
  }
  std::vector<std::string> startable;
  for (const RunObservation* q : queued) startable.push_back(q->view->name);
  if (d.create_run) startable.push_back(d.create_run->name);
  if (wait_reason.empty() && !startable.empty()) {
    d.start_run = startable.front();
    active = d.start_run;
    startable.erase(startable.begin());
    if (!startable.empty()) wait_reason = "waiting for run " + *d.start_run + " to finish";
  }
  for (const RunObservation* q : queued) {
    if (d.start_run && q->view->name == *d.start_run) continue;
    if (string_at(q->status, "message") != wait_reason ||
        string_at(q->status, "phase") != "Queued") {
      d.queued_messages[q->view->name] = wait_reason;
    }
  }

  // 5. Manual invocation by annotation.
  if (view.invoke && !spec.deleting) {
    const std::string& reason = *view.invoke;
    d.invoke_run = RunRequest{invoke_run_name(spec, reason), kSourceManual, std::nullopt,
                              reason.empty() ? "kubectl annotate heartbeat.dev/invoke" : reason};
  }

  // 6. History: keep historyLimits finished runs whose cost is recorded.
  std::vector<const RunObservation*> succeeded, failed;
  for (const RunObservation& run : in.runs) {
    if (!is_final(run.view->phase) || !run.view->cost_recorded) continue;
    (run.view->phase == RunPhase::kSucceeded ? succeeded : failed).push_back(&run);
  }
  auto trim = [&](std::vector<const RunObservation*>& runs, int keep) {
    std::sort(runs.begin(), runs.end(), [](const RunObservation* a, const RunObservation* b) {
      return a->view->finished_at.value_or(a->view->created) >
             b->view->finished_at.value_or(b->view->created);
    });
    for (size_t i = static_cast<size_t>(std::max(keep, 0)); i < runs.size(); ++i) {
      d.delete_runs.push_back(runs[i]->view->name);
    }
  };
  trim(succeeded, spec.history_succeeded);
  trim(failed, spec.history_failed);

  // 7. Status.
  const bool paused_block =
      blocks.has(schedule::kReasonPaused) || blocks.has(schedule::kReasonPausedByAgent);
  const bool budget_block = blocks.has(schedule::kReasonBudgetExceeded);
  std::string_view pause_reason = "NotPaused", pause_message = "heartbeats are not paused";
  for (const schedule::Block& b : blocks.blocks) {
    if (b.reason != schedule::kReasonBudgetExceeded) {
      pause_reason = b.reason;
      pause_message = b.message;
      break;
    }
  }
  std::string_view budget_message = "within the monthly budget";
  for (const schedule::Block& b : blocks.blocks) {
    if (b.reason == schedule::kReasonBudgetExceeded) budget_message = b.message;
  }
  const std::string spec_message = spec_valid ? std::string() : join_errors(d.spec_errors);
  const std::string_view invalid_reason =
      in.env.object_in_the_way.empty() ? "InvalidSpec" : "ObjectInTheWay";
  const std::optional<std::string> config_error = newest_run_config_error(in.runs);
  std::string_view ready_reason = "Ready", ready_message = "heartbeats are scheduled";
  if (!spec_valid) {
    ready_reason = invalid_reason;
    ready_message = spec_message;
  } else if (blocks.blocked()) {
    ready_reason = blocks.blocks.front().reason;
    ready_message = blocks.blocks.front().message;
  } else if (config_error) {
    ready_reason = kReasonContainerConfigError;
    ready_message = *config_error;
  } else if (!spec.schedule) {
    ready_message = "no interval or schedule: manual and callback runs only";
  }
  const int64_t gen = spec.generation;
  const std::vector<WantedCondition> wanted = {
      {kConditionReady, ready_reason == "Ready", ready_reason, ready_message},
      {kConditionPaused, paused_block, pause_reason, pause_message},
      {kConditionBudgetExceeded, budget_block, budget_block ? "BudgetExceeded" : "WithinBudget",
       budget_message},
      {kConditionSpecValid, spec_valid, spec_valid ? "Valid" : invalid_reason,
       spec_valid ? std::string_view("the spec is valid") : std::string_view(spec_message)}};
  // Events on transitions only.
  bool was = false;
  const bool had_spec_valid = condition_status(stored.conditions, kConditionSpecValid, &was);
  if (!spec_valid && (!had_spec_valid || was)) {
    d.events.push_back(
        {EventTarget::kAgent, spec.name, true, std::string(invalid_reason), spec_message});
  }
  if (paused_block && !(condition_status(stored.conditions, kConditionPaused, &was) && was)) {
    d.events.push_back({EventTarget::kAgent, spec.name, false, std::string(pause_reason),
                        std::string(pause_message)});
  }
  if (budget_block &&
      !(condition_status(stored.conditions, kConditionBudgetExceeded, &was) && was)) {
    d.events.push_back(
        {EventTarget::kAgent, spec.name, true, "BudgetExceeded", std::string(budget_message)});
  }
  if (ready_reason == "Ready" && condition_status(stored.conditions, kConditionReady, &was) &&
      !was) {
    d.events.push_back(
        {EventTarget::kAgent, spec.name, false, "Resumed", std::string(ready_message)});
  }
  AgentStatus& want = d.status;
  want.observed_generation = gen;
  want.conditions = conditions_for(stored.conditions, wanted, gen, now);
  want.last_heartbeat_time = ledger.last_heartbeat;
  want.paused_until = ledger.paused_until;
  want.spend = std::move(ledger.spend);
  want.capabilities = spec.type;
  want.recent_runs = std::move(recent);
  // Everything above must be written now; what follows also moves when a run
  // merely starts, and may wait for the coalescing window.
  const bool must_write = !view.status_canonical ||
                          want.observed_generation != stored.observed_generation ||
                          !same_conditions(want.conditions, stored.conditions) ||
                          want.last_heartbeat_time != stored.last_heartbeat_time ||
                          want.paused_until != stored.paused_until || want.spend != stored.spend ||
                          want.capabilities != stored.capabilities ||
                          !same_recent_runs(want.recent_runs, stored.recent_runs);
  const char* phase = kAgentPhaseIdle;
  if (!spec_valid) {
    phase = kAgentPhaseInvalid;
  } else if (active) {
    phase = kAgentPhaseRunning;
  } else if (budget_block) {
    phase = kAgentPhaseBudgetExceeded;
  } else if (paused_block) {
    phase = kAgentPhasePaused;
  }
  want.phase = phase;
  want.last_schedule_time = later(last_scheduled, record_slot);
  want.next_heartbeat_time = valid ? next_heartbeat : std::nullopt;
  if (active) want.active_run = *active;
  d.status_changed = must_write || want.phase != stored.phase ||
                     want.last_schedule_time != stored.last_schedule_time ||
                     want.next_heartbeat_time != stored.next_heartbeat_time ||
                     want.active_run != stored.active_run;

  // 8. When to look again: the next slot, a lifting block, a run's deadline,
  // the end of a coalescing window.
  std::optional<TimePoint> requeue;
  if (d.status_changed && !must_write && active && in.status_coalesce.count() > 0) {
    const std::optional<TimePoint> started =
        d.start_run ? std::optional<TimePoint>(now) : time_at(running->status, "startedAt");
    if (started && now < *started + in.status_coalesce) {
      d.status_changed = false;
      d.status_deferred = true;
      requeue = *started + in.status_coalesce;
    }
  }
  if (valid && !blocks.blocked()) earliest(requeue, next_heartbeat, now);
  earliest(requeue, blocks.paused_until_lifts_at, now);
  earliest(requeue, blocks.budget_resets_at, now);
  for (const RunObservation& run : in.runs) earliest(requeue, run.recheck_at, now);
  d.requeue_at = requeue;
  for (const RunObservation& run : in.runs) {
    d.events.insert(d.events.end(), run.events.begin(), run.events.end());
  }
  return d;
}

}  // namespace hb::controllers
