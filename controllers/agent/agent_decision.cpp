#include "controllers/agent/agent_decision.h"

#include <cmath>
#include <iterator>

#include "api/hb_assert.h"
#include "controllers/agent/agent_desired_status.h"
#include "controllers/agent/agent_runs.h"
#include "controllers/agent/agent_schedule_plan.h"
#include "controllers/agent/mention_plan.h"
#include "controllers/agent/prompt_skip.h"
#include "controllers/model/names.h"
#include "controllers/run/run_record.h"
#include "controllers/schedule/spend.h"
#include "controllers/schedule/utc_time.h"
#include "controllers/spend/agent_ledger.h"
#include "controllers/spend/budget_hold.h"
#include "controllers/spend/pricing.h"

namespace hb::controllers {

namespace {

using schedule::format_rfc3339;

constexpr std::string_view kInvokeDetailDefault = "kubectl annotate heartbeat.dev/invoke";

// The manual run the heartbeat.dev/invoke annotation asks for: none when
// status.lastInvoke says a run was made for this very value already.
std::optional<RunRequest> invoke_request(const AgentView& view) {
  if (!view.invoke || view.spec.spec.deleting) return std::nullopt;
  const std::string& value = *view.invoke;
  const std::optional<LastInvoke>& last = view.status.last_invoke;
  if (last && last->value_hash == long_hash(value)) return std::nullopt;
  return RunRequest{invoke_run_name(view.spec.spec, value, last ? last->run : std::string()),
                    kSourceManual, std::nullopt,
                    value.empty() ? std::string(kInvokeDetailDefault) : value};
}

// When the run that would start was asked for: a queued run's request
// time, the new run's slot (now for a slot-less one).
TimePoint start_order(const std::string& run, const std::vector<const RunObservation*>& waiting,
                      const std::optional<RunRequest>& created, TimePoint now) {
  for (const RunObservation* q : waiting) {
    if (q->view->name == run) return q->view->requested;
  }
  return created && created->name == run ? created->slot.value_or(now) : now;
}

// The concurrency cap holds the run back: it stays Queued, told why, and
// nothing is active (a start only happens with no run going on).
void hold_for_capacity(StartPlan& start, const std::vector<const RunObservation*>& waiting,
                       const std::string& message) {
  const std::string run = *start.start_run;
  start.start_run.reset();
  start.active.reset();
  for (const RunObservation* q : waiting) {
    if (q->view->name != run) continue;
    if (string_at(q->status, "message") != message ||
        string_at(q->status, "reason") != kReasonConcurrencyLimited) {
      start.queued_messages[run] = message;
    }
  }
}

void append(std::vector<Event>& to, std::vector<Event> from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

}  // namespace

std::string invoke_run_name(const AgentSpec& agent, std::string_view value,
                            std::string_view previous_run) {
  // The value and the run before it name the run: a pass repeated after a
  // lost status write (a 409, a crash) finds the run it made instead of
  // making another, and a value set again later (A, B, A) is a new request.
  return derived_name(agent.name,
                      "invoke-" + long_hash(agent.uid + "/" + std::string(previous_run) + "/" +
                                            std::string(value)));
}

Json make_run_object(const AgentSpec& agent, std::string_view source, std::string_view name,
                     std::string_view generate_name, std::optional<TimePoint> slot,
                     std::string_view trigger_detail) {
  // Built member by member: brace-lists of pairs make and copy a temporary
  // array per pair.
  Json labels = Json::object();
  labels.emplace(kLabelAgent, label_safe_name(agent.name));
  labels.emplace(kLabelManagedBy, kManagedByValue);
  // No ownerReference: the run is the audit record and outlives its Agent
  // (run_record.h); the annotation names the Agent incarnation it is of.
  Json annotations = Json::object();
  annotations.emplace(kAnnotationAgentUid, agent.uid);
  Json metadata = Json::object();
  metadata.emplace("namespace", agent.ns);
  metadata.emplace("labels", std::move(labels));
  metadata.emplace("annotations", std::move(annotations));
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

bool monthly_budget_spent(const AgentView& agent, TimePoint now, const LedgerRecord* ledger) {
  const Spend spend = spend_this_month(
      ledger != nullptr ? std::optional(spend_in(*ledger, schedule::spend_period(now)))
                        : agent.status.spend,
      now);
  schedule::BlockInput in;
  in.monthly_budget_cents = agent.spec.spec.monthly_budget_cents;
  in.spent_cents_this_period = saturating_int64(std::floor(spend.cents));
  in.spend_period = spend.period;
  return schedule::evaluate_blocks(in, now).has(schedule::kReasonBudgetExceeded);
}

bool daily_budget_spent(const AgentSpec& spec, TimePoint now, const LedgerRecord* ledger) {
  return spec.daily_budget_cents > 0 &&
         spent_cents_today(spec, ledger, {}, now) >= spec.daily_budget_cents;
}

// The steps run in a fixed order; each is a pure function of what earlier
// ones returned (agent_ledger.h, agent_schedule_plan.h, agent_runs.h,
// agent_desired_status.h).
AgentDecision decide_agent(const AgentDecisionInput& in) {
  HB_ASSERT(in.view != nullptr || in.agent != nullptr);
  std::optional<AgentView> viewed_here;
  if (in.view == nullptr) viewed_here = view_agent(*in.agent);
  const AgentView& view = in.view != nullptr ? *in.view : *viewed_here;
  const AgentSpec& spec = view.spec.spec;
  AgentDecision d;
  if (!view.spec.errors.empty() || !in.env.object_in_the_way.empty()) {
    d.spec_errors = spec_errors(view.spec, in.env);
  }
  const bool valid = d.spec_errors.empty() && !spec.deleting;

  // 1. Mentions in finished runs' output wake other agents, before the
  // ledger counts (and a mark ends) those runs.
  MentionPlan mentions = plan_mentions(spec, in.runs, in.mention_accepted);
  d.mention_runs = std::move(mentions.runs);

  // 2. Ledger: count final runs whose cost is not recorded yet.
  RunsByState runs = sort_runs_by_state(in.runs, view.status.last_schedule_time, in.now);
  CountedLedger counted =
      count_finished_runs(view.status, std::move(runs.uncounted), in.now, in.ledger);
  d.ledger_changed = !counted.ledger.counted.empty();
  d.ledger_charges = std::move(counted.charges);
  d.mark = std::move(counted.ledger.mark);
  d.confirm_unmarked = std::move(counted.ledger.raised);

  // 2. Blocks (board pause, pause_heartbeats, budget), after the budget
  // stop that waits for a person is held or released.
  BudgetHoldPlan hold =
      plan_budget_hold({.spec = &spec,
                        .stored = view.status.budget_hold,
                        .resume = view.resume,
                        .spent_cents_this_period = spent_cents_this_month(counted.ledger, in.now),
                        .period = schedule::spend_period(in.now),
                        .now = in.now});
  std::optional<DaySpend> today =
      spend_today_if_needed(spec, view.status, in.ledger, d.ledger_charges, in.now);
  const schedule::BlockResult blocks = agent_blocks(
      spec, counted.ledger, limited_cents_today(spec, today), hold.hold, in.policy_budgets,
      in.provider_hold, policy_refusals(spec, in.policies, in.runner_image), in.now);
  BackoffState backoff = backoff_state(spec, view.status, counted.ledger);

  // 3. The schedule: at most the most recent due slot, never a burst. Later
  // queued callbacks fold into the first: they never start.
  RunQueue queue = order_queue(std::move(runs.queued));
  d.coalesce = std::move(queue.folded);
  SchedulePlan plan;
  if (valid && spec.schedule) {
    const RunObservation* first_waiting = queue.waiting.empty() ? nullptr : queue.waiting.front();
    plan = plan_schedule(spec, blocks, runs.last_scheduled, in.runs, first_waiting, in.now,
                         backoff.intervals);
  }
  d.create_run = std::move(plan.create_run);
  d.events = std::move(hold.events);
  append(d.events, std::move(mentions.events));
  append(d.events, std::move(plan.events));
  // An empty or missing prompt skips the slot: no run, no Job.
  SkipPlan skip = plan_skip(spec, view.status.last_skipped, in.prompt, d.create_run);
  if (skip.skip_slot) d.create_run.reset();
  append(d.events, std::move(skip.events));

  // 4. Start a queued run (else the slot's) when the agent is free and unblocked.
  StartPlan start = plan_start(wait_reasons(valid, blocks, runs.running), runs.running,
                               queue.waiting, d.create_run ? &d.create_run->name : nullptr);
  if (start.start_run && in.gate) {
    d.admission_request =
        StartCandidate{object_key(spec.ns, spec.name), object_key(spec.ns, *start.start_run),
                       start_order(*start.start_run, queue.waiting, d.create_run, in.now)};
    d.admission_assumed = admit_from_snapshot(*in.gate, *d.admission_request);
    if (!d.admission_assumed.admitted) {
      d.concurrency_limited = start.start_run;
      hold_for_capacity(start, queue.waiting, d.admission_assumed.message);
    }
  }
  d.start_run = start.start_run;
  d.queued_messages = std::move(start.queued_messages);

  // 5. Manual invocation by annotation.
  d.invoke_run = invoke_request(view);

  // 6. History: keep historyLimits finished runs whose cost is recorded.
  d.delete_runs = runs_beyond_history(in.runs, spec.history_succeeded, spec.history_failed);

  // 7. Status, and Events for the conditions that change.
  StatusPlan status = plan_status({.view = view,
                                   .spec_errors = d.spec_errors,
                                   .object_in_the_way = !in.env.object_in_the_way.empty(),
                                   .agent_valid = valid,
                                   .blocks = blocks,
                                   .runs = in.runs,
                                   .counted = std::move(counted),
                                   .spend_today = shown_spend_today(std::move(today)),
                                   .active_run = start.active,
                                   .starting_now = d.start_run.has_value(),
                                   .running = runs.running,
                                   .coalesce_window = in.status_coalesce,
                                   .last_schedule = later_time(runs.last_scheduled, plan.run_slot),
                                   .next_heartbeat = plan.next_heartbeat,
                                   .invoked = d.invoke_run ? &*d.invoke_run : nullptr,
                                   .skipped = skip.skipped,
                                   .budget_hold = std::move(hold.hold),
                                   .backoff = std::move(backoff),
                                   .now = in.now});
  d.status = std::move(status.status);
  d.status_changed = status.write_now;
  d.status_deferred = status.deferred_until.has_value();
  append(d.events, std::move(status.events));

  // 8. When to look again: the next slot, a lifting block, a run's deadline,
  // the end of a coalescing window.
  const bool may_run = valid && !blocks.blocked();
  if (may_run) d.next_heartbeat = plan.next_heartbeat;
  d.requeue_at = requeue_time(status.deferred_until, may_run ? plan.next_heartbeat : std::nullopt,
                              blocks, in.runs, in.now);
  std::optional<TimePoint> recheck = prompt_recheck_at(spec, skip.skipped, in.now);
  if (d.concurrency_limited)
    recheck =
        std::min(recheck.value_or(in.now + kConcurrencyRecheck), in.now + kConcurrencyRecheck);
  if (recheck) d.requeue_at = std::min(d.requeue_at.value_or(*recheck), *recheck);
  for (const RunObservation& run : in.runs) append(d.events, run.events);
  return d;
}

ReadsNeeded reads_needed(const AgentView& view, const std::vector<RunObservation>& runs,
                         const LedgerRecord* ledger, TimePoint now) {
  const AgentSpec& spec = view.spec.spec;
  ReadsNeeded reads;
  const RunsByState sorted = sort_runs_by_state(runs, view.status.last_schedule_time, now);
  const bool slot_due = due_slot_without_run(spec, sorted.last_scheduled, runs, now).has_value();
  // As plan_schedule: a queued run takes the slot, and an invalid or paused
  // agent makes none; nor does one whose budget is spent before this pass
  // counts anything (counting only adds spend, so the block stands).
  const bool slot_run_may_be_made =
      slot_due && sorted.queued.empty() && view.spec.valid() && !spec.deleting && !spec.paused &&
      !monthly_budget_spent(view, now, ledger) && !daily_budget_spent(spec, now, ledger);
  reads.prompt = needs_prompt_read(spec, view.status, slot_run_may_be_made);
  // A start only happens with no run going on (wait_reasons).
  reads.gate = sorted.running == nullptr && (slot_due || !sorted.queued.empty());
  reads.mention_targets = mention_targets(spec, runs);
  HB_ASSERT(reads.mention_targets.size() <= kMentionTargetsPerPassMax);
  return reads;
}

}  // namespace hb::controllers
