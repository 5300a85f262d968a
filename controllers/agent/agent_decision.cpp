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
static_assert(kStatusCoalesceSecondsDefault <= kStatusCoalesceSecondsMax);

// The manual run the heartbeat.dev/invoke annotation asks for: none when
// status.lastInvoke says a run was made for this very value already.
std::optional<RunRequest> invoke_request(const AgentView& view) {
  if (!view.invoke || view.spec.spec.deleting) return std::nullopt;
  const std::string& value = *view.invoke;
  const std::optional<LastInvoke>& last = view.status.last_invoke;
  if (last && last->value_hash == long_hash(value)) return std::nullopt;
  RunRequest request{invoke_run_name(view.spec.spec, value, last ? last->run : std::string()),
                     kSourceManual, std::nullopt,
                     value.empty() ? std::string(kInvokeDetailDefault) : value};
  HB_ASSERT_MSG(!last || request.name != last->run,
                "a new invoke value makes a new run, never the last one again");
  return request;
}

// When the run that would start was asked for: a queued run's request
// time, the new run's slot (now for a slot-less one).
TimePoint start_order(const std::string& run, const std::vector<const RunObservation*>& waiting,
                      const std::optional<RunRequest>& created, TimePoint now) {
  for (const RunObservation* q : waiting) {
    if (q->view->name == run) return q->view->requested;
  }
  HB_ASSERT_MSG(!created || !created->slot || *created->slot <= now,
                "a new run's slot is at or before now");
  return created && created->name == run ? created->slot.value_or(now) : now;
}

// The concurrency cap holds the run back: it stays Queued, told why, and
// nothing is active (a start only happens with no run going on).
void hold_for_capacity(StartPlan& start, const std::vector<const RunObservation*>& waiting,
                       const std::string& message) {
  HB_ASSERT_MSG(start.start_run.has_value(), "only a run about to start is held for capacity");
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
  std::string name =
      derived_name(agent.name, "invoke-" + long_hash(agent.uid + "/" + std::string(previous_run) +
                                                     "/" + std::string(value)));
  HB_ASSERT_MSG(name.size() <= kObjectNameCharsMax, "a manual run's name is a valid object name");
  return name;
}

Json make_run_object(const AgentSpec& agent, std::string_view source, std::string_view name,
                     std::string_view generate_name, std::optional<TimePoint> slot,
                     std::string_view trigger_detail) {
  HB_ASSERT_MSG(name.empty() != generate_name.empty(),
                "a run is made with a name or a prefix to make one, never both");
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
  HB_ASSERT_MSG(!request.name.empty(), "a requested run is named before it is made");
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
namespace {

// What the steps of decide_agent hand on to each other.
struct Deciding {
  const AgentDecisionInput& in;
  const AgentView& view;
  const AgentSpec& spec;
  bool valid = false;
  std::vector<Event> mention_events = {};
  RunsByState runs = {};
  CountedLedger counted = {};
  BudgetHoldPlan hold = {};
  std::optional<DaySpend> today = {};
  schedule::BlockResult blocks = {};
  BackoffState backoff = {};
  RunQueue queue = {};
  SchedulePlan plan = {};
  SkipPlan skip = {};
  StartPlan start = {};
};

// The ledger: count final runs whose cost is not recorded yet.
void count_runs(Deciding& s, AgentDecision& d) {
  s.runs = sort_runs_by_state(s.in.runs, s.view.status.last_schedule_time, s.in.now);
  s.counted =
      count_finished_runs(s.view.status, std::move(s.runs.uncounted), s.in.now, s.in.ledger);
  d.ledger_changed = !s.counted.ledger.counted.empty();
  d.ledger_charges = std::move(s.counted.charges);
  d.mark = std::move(s.counted.ledger.mark);
  d.confirm_unmarked = std::move(s.counted.ledger.raised);
  HB_ASSERT_MSG(d.ledger_changed || d.ledger_charges.empty(),
                "the durable ledger is charged only for runs counted in this pass");
}

// Blocks (board pause, pause_heartbeats, budget), after the budget stop
// that waits for a person is held or released.
void find_blocks(Deciding& s, const AgentDecision& d) {
  const AgentDecisionInput& in = s.in;
  s.hold =
      plan_budget_hold({.spec = &s.spec,
                        .stored = s.view.status.budget_hold,
                        .resume = s.view.resume,
                        .spent_cents_this_period = spent_cents_this_month(s.counted.ledger, in.now),
                        .period = schedule::spend_period(in.now),
                        .now = in.now});
  s.today = spend_today_if_needed(s.spec, s.view.status, in.ledger, d.ledger_charges, in.now);
  s.blocks = agent_blocks(s.spec, s.counted.ledger, limited_cents_today(s.spec, s.today),
                          s.hold.hold, in.policy_budgets, in.provider_hold,
                          policy_refusals(s.spec, in.policies, in.runner_image), in.now);
  s.backoff = backoff_state(s.spec, s.view.status, s.counted.ledger);
  HB_ASSERT_MSG(
      (s.spec.daily_budget_cents <= 0 && d.ledger_charges.empty()) || s.today,
      "the day's spend is looked at when a daily budget limits it or a charge adds to it");
}

// The schedule: at most the most recent due slot, never a burst. Later
// queued callbacks fold into the first: they never start. An empty or
// missing prompt skips the slot: no run, no Job.
void plan_slot(Deciding& s, AgentDecision& d) {
  s.queue = order_queue(std::move(s.runs.queued));
  d.coalesce = std::move(s.queue.folded);
  if (s.valid && s.spec.schedule) {
    const RunObservation* first_waiting =
        s.queue.waiting.empty() ? nullptr : s.queue.waiting.front();
    s.plan = plan_schedule(s.spec, s.blocks, s.runs.last_scheduled, s.in.runs, first_waiting,
                           s.in.now, s.backoff.intervals);
  }
  d.create_run = std::move(s.plan.create_run);
  d.events = std::move(s.hold.events);
  append(d.events, std::move(s.mention_events));
  append(d.events, std::move(s.plan.events));
  s.skip = plan_skip(s.spec, s.view.status.last_skipped, s.in.prompt, d.create_run);
  if (s.skip.skip_slot) d.create_run.reset();
  append(d.events, std::move(s.skip.events));
  HB_ASSERT_MSG(!s.plan.run_slot || *s.plan.run_slot <= s.in.now, "a slot runs at or before now");
}

// Start a queued run (else the slot's) when the agent is free and
// unblocked, asking the gate's snapshot for a place.
void plan_next_start(Deciding& s, AgentDecision& d) {
  s.start = plan_start(wait_reasons(s.valid, s.blocks, s.runs.running), s.runs.running,
                       s.queue.waiting, d.create_run ? &d.create_run->name : nullptr);
  if (s.start.start_run && s.in.gate) {
    d.admission_request = StartCandidate{
        object_key(s.spec.ns, s.spec.name), object_key(s.spec.ns, *s.start.start_run),
        start_order(*s.start.start_run, s.queue.waiting, d.create_run, s.in.now)};
    d.admission_assumed = admit_from_snapshot(*s.in.gate, *d.admission_request);
    if (!d.admission_assumed.admitted) {
      d.concurrency_limited = s.start.start_run;
      hold_for_capacity(s.start, s.queue.waiting, d.admission_assumed.message);
    }
  }
  d.start_run = s.start.start_run;
  d.queued_messages = std::move(s.start.queued_messages);
  HB_ASSERT_MSG(!d.start_run || s.runs.running == nullptr, "a run starts only when none is going");
  HB_ASSERT_MSG(!d.start_run || !d.queued_messages.contains(*d.start_run),
                "the run that starts is not told to wait");
}

// The status, and Events for the conditions that change.
std::optional<TimePoint> plan_agent_status(Deciding& s, AgentDecision& d) {
  StatusPlan status =
      plan_status({.view = s.view,
                   .spec_errors = d.spec_errors,
                   .object_in_the_way = !s.in.env.object_in_the_way.empty(),
                   .agent_valid = s.valid,
                   .blocks = s.blocks,
                   .runs = s.in.runs,
                   .counted = std::move(s.counted),
                   .spend_today = shown_spend_today(std::move(s.today)),
                   .active_run = s.start.active,
                   .starting_now = d.start_run.has_value(),
                   .running = s.runs.running,
                   .coalesce_window = s.in.status_coalesce,
                   .last_schedule = later_time(s.runs.last_scheduled, s.plan.run_slot),
                   .next_heartbeat = s.plan.next_heartbeat,
                   .invoked = d.invoke_run ? &*d.invoke_run : nullptr,
                   .skipped = s.skip.skipped,
                   .budget_hold = std::move(s.hold.hold),
                   .backoff = std::move(s.backoff),
                   .now = s.in.now});
  d.status = std::move(status.status);
  d.status_changed = status.write_now;
  d.status_deferred = status.deferred_until.has_value();
  HB_ASSERT_MSG(!d.start_run || d.status.active_run == *d.start_run,
                "the status names the run that starts as the active one");
  append(d.events, std::move(status.events));
  return status.deferred_until;
}

// When to look again: the next slot, a lifting block, a run's deadline,
// the end of a coalescing window.
void plan_requeue(const Deciding& s, std::optional<TimePoint> deferred_until, AgentDecision& d) {
  const TimePoint now = s.in.now;
  const bool may_run = s.valid && !s.blocks.blocked();
  if (may_run) d.next_heartbeat = s.plan.next_heartbeat;
  d.requeue_at = requeue_time(deferred_until, may_run ? s.plan.next_heartbeat : std::nullopt,
                              s.blocks, s.in.runs, now);
  std::optional<TimePoint> recheck = prompt_recheck_at(s.spec, s.skip.skipped, now);
  if (d.concurrency_limited)
    recheck = std::min(recheck.value_or(now + kConcurrencyRecheck), now + kConcurrencyRecheck);
  if (recheck) d.requeue_at = std::min(d.requeue_at.value_or(*recheck), *recheck);
  HB_ASSERT_MSG(!d.requeue_at || !d.next_heartbeat || *d.requeue_at <= *d.next_heartbeat ||
                    *d.next_heartbeat <= now,
                "the key is looked at again by the next heartbeat");
}

}  // namespace

AgentDecision decide_agent(const AgentDecisionInput& in) {
  HB_ASSERT(in.view != nullptr || in.agent != nullptr);
  std::optional<AgentView> viewed_here;
  if (in.view == nullptr) viewed_here = view_agent(*in.agent);
  const AgentView& view = in.view != nullptr ? *in.view : *viewed_here;
  Deciding s{.in = in, .view = view, .spec = view.spec.spec};
  AgentDecision d;
  if (!view.spec.errors.empty() || !in.env.object_in_the_way.empty()) {
    d.spec_errors = spec_errors(view.spec, in.env);
  }
  s.valid = d.spec_errors.empty() && !s.spec.deleting;
  // Mentions in finished runs' output wake other agents, before the ledger
  // counts (and a mark ends) those runs.
  MentionPlan mentions = plan_mentions(s.spec, in.runs, in.mention_accepted);
  d.mention_runs = std::move(mentions.runs);
  s.mention_events = std::move(mentions.events);
  count_runs(s, d);
  find_blocks(s, d);
  plan_slot(s, d);
  plan_next_start(s, d);
  d.invoke_run = invoke_request(view);  // manual invocation by annotation
  // History: keep historyLimits finished runs whose cost is recorded.
  d.delete_runs = runs_beyond_history(in.runs, s.spec.history_succeeded, s.spec.history_failed);
  const std::optional<TimePoint> deferred_until = plan_agent_status(s, d);
  plan_requeue(s, deferred_until, d);
  for (const RunObservation& run : in.runs) append(d.events, run.events);
  HB_ASSERT_MSG(!d.start_run || s.valid, "an invalid agent starts nothing");
  HB_ASSERT_MSG(!d.create_run || s.valid, "an invalid agent schedules nothing");
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
