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

void put_time(JsonEdit& status, const char* key, std::optional<TimePoint> t) {
  if (t) {
    char buf[schedule::kRfc3339Size];
    status.put_string(key, std::string_view(buf, format_rfc3339(*t, buf)));
  } else {
    status.erase(key);
  }
}

const Json kNull;

struct WantedCondition {
  const char* type;
  bool status;
  std::string_view reason;
  std::string_view message;
};

// `c` is what make_condition would return for `w` (it keeps its transition
// time). One ordered walk: std::map keeps the six keys sorted.
bool condition_is(const Json& c, const WantedCondition& w, int64_t generation) {
  if (!c.is_object() || c.size() != 6) return false;
  auto it = c.begin();
  auto next = [&](std::string_view key) -> const Json& {
    const Json& value = *it;
    return it++.key() == key ? value : kNull;
  };
  auto string_is = [](const Json& value, std::string_view want) {
    return value.is_string() && value.get_ref<const std::string&>() == want;
  };
  return next("lastTransitionTime").is_string() && string_is(next("message"), w.message) &&
         same_json(next("observedGeneration"), Json(generation)) &&
         string_is(next("reason"), w.reason) &&
         string_is(next("status"), w.status ? "True" : "False") && string_is(next("type"), w.type);
}

// The wanted conditions, reusing the stored array when it already says them.
void put_conditions(JsonEdit& status, const Json* stored,
                    const std::vector<WantedCondition>& wanted, int64_t generation, TimePoint now) {
  if (stored != nullptr && stored->is_array() && stored->size() == wanted.size()) {
    bool same = true;
    for (size_t i = 0; same && i < wanted.size(); ++i) {
      same = condition_is((*stored)[i], wanted[i], generation);
    }
    if (same) return;
  }
  Json conditions = Json::array();
  for (const WantedCondition& w : wanted) {
    conditions.push_back(
        make_condition(stored, w.type, w.status, w.reason, w.message, generation, now));
  }
  status.put("conditions", std::move(conditions));
}

bool condition_status(const Json* conditions, std::string_view type, bool* out) {
  if (conditions == nullptr || !conditions->is_array()) return false;
  for (const Json& c : *conditions) {
    if (string_view_at(c, "type") == type) {
      *out = string_view_at(c, "status") == "True";
      return true;
    }
  }
  return false;
}

}  // namespace

Json make_condition(const Json* existing, std::string_view type, bool status,
                    std::string_view reason, std::string_view message, int64_t generation,
                    TimePoint now) {
  const std::string_view status_text = status ? "True" : "False";
  const Json* kept = nullptr;  // the last matching condition's time wins
  if (existing != nullptr && existing->is_array()) {
    for (const Json& c : *existing) {
      if (string_view_at(c, "type") != type || string_view_at(c, "status") != status_text) continue;
      const Json* t = find_path(c, "lastTransitionTime");
      if (t != nullptr && t->is_string()) kept = t;
    }
  }
  Json out = Json::object();
  out.emplace("type", type);
  out.emplace("status", status_text);
  out.emplace("observedGeneration", generation);
  out.emplace("lastTransitionTime", kept != nullptr ? *kept : Json(format_rfc3339(now)));
  out.emplace("reason", reason);
  out.emplace("message", message);
  return out;
}

namespace {
Json build_capabilities_json(api::AgentType type) {
  return api::to_json(api::capabilities(type));
}

const Json& capabilities_ref(api::AgentType type) {
  static const Json kTable[] = {build_capabilities_json(api::AgentType::kMemgpt),
                                build_capabilities_json(api::AgentType::kLettaV1),
                                build_capabilities_json(api::AgentType::kReact)};
  return kTable[static_cast<size_t>(type)];
}
}  // namespace

Json capabilities_json(api::AgentType type) {
  return capabilities_ref(type);
}

std::string invoke_run_name(const AgentSpec& agent, std::string_view reason,
                            std::string_view resource_version) {
  const std::string hash =
      short_hash(agent.uid + "/" + std::string(reason) + "/" + std::string(resource_version));
  return derived_name(agent.name, "invoke-" + hash);
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

bool monthly_budget_spent(const Json& agent, TimePoint now) {
  const Json* status = find_path(agent, "status");
  if (status == nullptr || !status->is_object()) return false;
  const Spend spend = spend_from_status(*status);
  schedule::BlockInput in;
  in.monthly_budget_cents = int_at(agent, "spec/budget/monthlyCents").value_or(0);
  in.spent_cents_this_period = static_cast<int64_t>(std::floor(spend.cents));
  in.spend_period = spend.period;
  return schedule::evaluate_blocks(in, now).has(schedule::kReasonBudgetExceeded);
}

AgentDecision decide_agent(const AgentDecisionInput& in) {
  assert(in.agent != nullptr);
  AgentDecision d;
  const Json& agent = *in.agent;
  const TimePoint now = in.now;
  d.check = check_agent_spec(agent, in.env);
  const AgentSpec& spec = d.check.spec;
  static const Json kEmpty = Json::object();
  const Json* stored_ptr = find_path(agent, "status");
  const Json& stored = stored_ptr != nullptr && stored_ptr->is_object() ? *stored_ptr : kEmpty;
  const Json* stored_conditions = find_path(stored, "conditions");

  // 1. Ledger: count final runs whose cost is not recorded yet.
  LedgerInput ledger_in;
  ledger_in.spend = spend_from_status(stored);
  ledger_in.recent = recent_from_status(stored);
  ledger_in.last_heartbeat = time_at(stored, "lastHeartbeatTime");
  ledger_in.paused_until = time_at(stored, "pausedUntil");
  ledger_in.now = now;
  const RunObservation* running = nullptr;
  std::vector<const RunObservation*> queued;
  std::optional<TimePoint> last_scheduled = time_at(stored, "lastScheduleTime");
  for (const RunObservation& run : in.runs) {
    if (run.view.source == kSourceScheduler)
      last_scheduled = later(last_scheduled, run.view.scheduled_time);
    if (is_final(run.phase)) {
      if (!run.view.cost_recorded) {
        FinishedRun f;
        f.name = run.view.name;
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
  LedgerResult ledger = apply_ledger(ledger_in);
  d.mark = ledger.mark;
  d.ledger_changed = !ledger.counted.empty();

  // 2. Blocks (board pause, pause_heartbeats, budget).
  schedule::BlockInput block_in;
  block_in.paused = spec.paused;
  block_in.paused_until = ledger.paused_until;
  block_in.monthly_budget_cents = spec.monthly_budget_cents;
  block_in.spent_cents_this_period = static_cast<int64_t>(std::floor(ledger.spend.cents));
  block_in.spend_period = ledger.spend.period;
  const schedule::BlockResult blocks = schedule::evaluate_blocks(block_in, now);
  const bool valid = d.check.valid() && !spec.deleting;

  // 3. The schedule: at most the most recent due slot, never a burst.
  std::optional<TimePoint> next_heartbeat;
  std::optional<TimePoint> record_slot;  // lastScheduleTime to write
  std::sort(queued.begin(), queued.end(), [](const RunObservation* a, const RunObservation* b) {
    return a->view.created != b->view.created ? a->view.created < b->view.created
                                              : a->view.name < b->view.name;
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
      const bool exists = std::any_of(in.runs.begin(), in.runs.end(),
                                      [&](const RunObservation& r) { return r.view.name == name; });
      if (!exists && queued.empty()) {
        d.create_run = make_run_object(spec, kSourceScheduler, name, "", slot.run_slot, "");
        d.events.push_back(
            {EventTarget::kAgent, spec.name, false, "RunScheduled",
             "created HeartbeatRun " + name + " for " + format_rfc3339(*slot.run_slot),
             /*routine=*/true});
      } else if (!exists) {
        d.events.push_back({EventTarget::kAgent, spec.name, false, "ScheduleCoalesced",
                            "slot " + format_rfc3339(*slot.run_slot) +
                                " coalesced into the queued run " + queued.front()->view.name,
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
      running ? std::optional<std::string>(running->view.name) : std::nullopt;
  std::string wait_reason;
  if (!valid) {
    wait_reason = "waiting: the agent's spec is invalid (see condition SpecValid)";
  } else if (blocks.blocked()) {
    wait_reason = "waiting: " + blocks.blocks.front().message;
  } else if (running) {
    wait_reason = "waiting for run " + running->view.name + " to finish";
  }
  std::vector<std::string> startable;
  for (const RunObservation* q : queued) startable.push_back(q->view.name);
  if (d.create_run) startable.push_back(string_at(*d.create_run, "metadata/name"));
  if (wait_reason.empty() && !startable.empty()) {
    d.start_run = startable.front();
    active = d.start_run;
    startable.erase(startable.begin());
    if (!startable.empty()) wait_reason = "waiting for run " + *d.start_run + " to finish";
  }
  for (const RunObservation* q : queued) {
    if (d.start_run && q->view.name == *d.start_run) continue;
    if (string_at(q->status, "message") != wait_reason ||
        string_at(q->status, "phase") != "Queued") {
      d.queued_messages[q->view.name] = wait_reason;
    }
  }

  // 5. Manual invocation by annotation.
  const Json* annotations = find_path(agent, "metadata/annotations");
  const Json* invoke = nullptr;
  if (annotations != nullptr && annotations->is_object()) {
    auto it = annotations->find(kAnnotationInvoke);
    if (it != annotations->end() && it->is_string()) invoke = &*it;
  }
  if (invoke != nullptr && !spec.deleting) {
    const std::string reason = invoke->get<std::string>();
    d.invoke_run = make_run_object(
        spec, kSourceManual,
        invoke_run_name(spec, reason, string_at(agent, "metadata/resourceVersion")), "",
        std::nullopt, reason.empty() ? "kubectl annotate heartbeat.dev/invoke" : reason);
  }

  // 6. History: keep historyLimits finished runs whose cost is recorded.
  std::vector<const RunObservation*> succeeded, failed;
  for (const RunObservation& run : in.runs) {
    if (!is_final(run.view.phase) || !run.view.cost_recorded) continue;
    (run.view.phase == RunPhase::kSucceeded ? succeeded : failed).push_back(&run);
  }
  auto trim = [&](std::vector<const RunObservation*>& runs, int keep) {
    std::sort(runs.begin(), runs.end(), [](const RunObservation* a, const RunObservation* b) {
      return a->view.finished_at.value_or(a->view.created) >
             b->view.finished_at.value_or(b->view.created);
    });
    for (size_t i = static_cast<size_t>(std::max(keep, 0)); i < runs.size(); ++i) {
      d.delete_runs.push_back(runs[i]->view.name);
    }
  };
  trim(succeeded, spec.history_succeeded);
  trim(failed, spec.history_failed);

  // 7. Status.
  // Edits a copy of the stored status: steady fields are neither rebuilt nor
  // compared as whole trees.
  JsonEdit status(stored);
  status.put("observedGeneration", spec.generation);
  const bool paused_block =
      blocks.has(schedule::kReasonPaused) || blocks.has(schedule::kReasonPausedByAgent);
  const bool budget_block = blocks.has(schedule::kReasonBudgetExceeded);
  std::string pause_reason = "NotPaused", pause_message = "heartbeats are not paused";
  for (const schedule::Block& b : blocks.blocks) {
    if (b.reason != schedule::kReasonBudgetExceeded) {
      pause_reason = b.reason;
      pause_message = b.message;
      break;
    }
  }
  std::string budget_message = "within the monthly budget";
  for (const schedule::Block& b : blocks.blocks) {
    if (b.reason == schedule::kReasonBudgetExceeded) budget_message = b.message;
  }
  std::string ready_reason = "Ready", ready_message = "heartbeats are scheduled";
  if (!d.check.valid()) {
    ready_reason = "InvalidSpec";
    ready_message = d.check.message();
  } else if (blocks.blocked()) {
    ready_reason = blocks.blocks.front().reason;
    ready_message = blocks.blocks.front().message;
  } else if (!spec.schedule) {
    ready_message = "no interval or schedule: manual and callback runs only";
  }
  const int64_t gen = spec.generation;
  const std::string spec_message = d.check.valid() ? "the spec is valid" : d.check.message();
  const std::vector<WantedCondition> wanted = {
      {kConditionReady, ready_reason == "Ready", ready_reason, ready_message},
      {kConditionPaused, paused_block, pause_reason, pause_message},
      {kConditionBudgetExceeded, budget_block, budget_block ? "BudgetExceeded" : "WithinBudget",
       budget_message},
      {kConditionSpecValid, d.check.valid(), d.check.valid() ? "Valid" : "InvalidSpec",
       spec_message}};
  // Events on transitions only.
  bool was = false;
  const bool had_spec_valid = condition_status(stored_conditions, kConditionSpecValid, &was);
  if (!d.check.valid() && (!had_spec_valid || was)) {
    d.events.push_back({EventTarget::kAgent, spec.name, true, "InvalidSpec", d.check.message()});
  }
  if (paused_block && !(condition_status(stored_conditions, kConditionPaused, &was) && was)) {
    d.events.push_back({EventTarget::kAgent, spec.name, false, pause_reason, pause_message});
  }
  if (budget_block &&
      !(condition_status(stored_conditions, kConditionBudgetExceeded, &was) && was)) {
    d.events.push_back({EventTarget::kAgent, spec.name, true, "BudgetExceeded", budget_message});
  }
  if (ready_reason == "Ready" && condition_status(stored_conditions, kConditionReady, &was) &&
      !was) {
    d.events.push_back({EventTarget::kAgent, spec.name, false, "Resumed", ready_message});
  }
  put_conditions(status, stored_conditions, wanted, gen, now);
  put_time(status, "lastHeartbeatTime", ledger.last_heartbeat);
  put_time(status, "pausedUntil", ledger.paused_until);
  const Json* stored_spend = find_path(stored, "spend");
  if (stored_spend == nullptr || !matches_json(*stored_spend, ledger.spend)) {
    status.put("spend", to_json(ledger.spend));
  }
  const Json& capabilities = capabilities_ref(spec.type);
  const Json* stored_capabilities = find_path(stored, "capabilities");
  if (stored_capabilities == nullptr || !same_json(*stored_capabilities, capabilities)) {
    status.put("capabilities", capabilities);
  }
  const Json* stored_recent = find_path(stored, "recentRuns");
  if (stored_recent == nullptr || !matches_json(*stored_recent, ledger.recent)) {
    status.put("recentRuns", to_json(ledger.recent));
  }
  // Everything above must be written now; what follows also moves when a run
  // merely starts, and may wait for the coalescing window.
  const bool must_write = status.changed();
  const char* phase = kAgentPhaseIdle;
  if (!d.check.valid()) {
    phase = kAgentPhaseInvalid;
  } else if (active) {
    phase = kAgentPhaseRunning;
  } else if (budget_block) {
    phase = kAgentPhaseBudgetExceeded;
  } else if (paused_block) {
    phase = kAgentPhasePaused;
  }
  status.put_string("phase", phase);
  put_time(status, "lastScheduleTime", later(last_scheduled, record_slot));
  put_time(status, "nextHeartbeatTime", valid ? next_heartbeat : std::nullopt);
  if (active) {
    status.put_string("activeRun", *active);
  } else {
    status.erase("activeRun");
  }
  d.status_changed = status.changed();
  d.status = status.take();

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
