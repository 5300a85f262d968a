#include "controllers/agent/agent_conditions.h"

#include <algorithm>
#include <array>

#include "api/hb_assert.h"
#include "controllers/schedule/utc_time.h"
#include "controllers/spend/pricing.h"

namespace hb::controllers {

namespace {

constexpr std::string_view kTrue = "True";
constexpr std::string_view kFalse = "False";
constexpr std::string_view kReasonReady = "Ready";

bool is_policy_refusal(std::string_view reason) {
  return reason == kReasonPricingRequired || reason == kReasonSelfReportedUsage;
}

// `c` is what make_condition would return for `w` (it keeps its transition time).
bool condition_is(const Condition& c, const WantedCondition& w, int64_t generation) {
  return c.type == w.type && c.status == (w.status ? kTrue : kFalse) &&
         c.observed_generation == generation && c.reason == w.reason && c.message == w.message &&
         !c.last_transition_time.empty();
}

// The stored reason of condition `type`; empty when it is not stored.
std::string_view stored_reason(const Conditions& conditions, std::string_view type) {
  if (conditions == nullptr) return {};
  for (const Condition& c : *conditions) {
    if (c.type == type) return c.reason;
  }
  return {};
}

// The stored status of condition `type`; nullopt when it is not stored.
std::optional<bool> stored_status(const Conditions& conditions, std::string_view type) {
  if (conditions == nullptr) return std::nullopt;
  for (const Condition& c : *conditions) {
    if (c.type == type) return c.status == kTrue;
  }
  return std::nullopt;
}

// Stalled: the first problem only a person can fix.
WantedCondition stalled_condition(const SpecValidity& spec,
                                  const std::optional<RunProblem>& run_problem,
                                  const std::optional<SkippedHeartbeat>& skipped) {
  HB_ASSERT_MSG(spec.valid || !spec.invalid_reason.empty(), "an invalid spec says why");
  if (!spec.valid) return {kConditionStalled, true, spec.invalid_reason, spec.errors};
  if (skipped && skipped->reason == kReasonPromptNotFound) {
    return {kConditionStalled, true, skipped->reason, skipped->message};
  }
  if (run_problem) return {kConditionStalled, true, run_problem->reason, run_problem->message};
  return {kConditionStalled, false, "NotStalled", "nothing needs a person"};
}

// Ready unless stalled; a block the user chose keeps it True and says why
// scheduled heartbeats wait.
WantedCondition ready_condition(const WantedCondition& stalled, const schedule::BlockResult& blocks,
                                const std::optional<SkippedHeartbeat>& skipped, bool has_schedule) {
  HB_ASSERT_MSG(std::string_view(stalled.type) == kConditionStalled,
                "Ready follows the Stalled condition");
  if (stalled.status) return {kConditionReady, false, stalled.reason, stalled.message};
  // A policy refusal is not the user's choice: not Ready, naming the policy.
  if (blocks.blocked() && is_policy_refusal(blocks.blocks.front().reason)) {
    return {kConditionReady, false, blocks.blocks.front().reason, blocks.blocks.front().message};
  }
  if (blocks.blocked()) {
    return {kConditionReady, true, blocks.blocks.front().reason, blocks.blocks.front().message};
  }
  if (skipped) return {kConditionReady, true, skipped->reason, skipped->message};
  if (!has_schedule) {
    return {kConditionReady, true, kReasonReady,
            "no interval or schedule: manual and callback runs only"};
  }
  return {kConditionReady, true, kReasonReady, "heartbeats are scheduled"};
}

// Written with the generation it describes, so the operator's own status
// says it is done; the CRD's status default says Reconciling=True until then.
WantedCondition reconciling_condition() {
  return {kConditionReconciling, false, "Reconciled", "the operator has acted on this generation"};
}

// Paused by a policy, the board or the agent: the first block that is not
// the budget.
WantedCondition paused_condition(const schedule::BlockResult& blocks) {
  static constexpr std::array<std::string_view, 3> kPauses{
      schedule::kReasonPolicyPaused, schedule::kReasonPaused, schedule::kReasonPausedByAgent};
  static constexpr std::array<std::string_view, 4> kPassedOver{
      schedule::kReasonBudgetExceeded, schedule::kReasonProviderThrottled, kReasonPricingRequired,
      kReasonSelfReportedUsage};
  static_assert(std::ranges::find_first_of(kPauses, kPassedOver) == kPauses.end(),
                "no pause reason is one the loop below passes over");
  const bool paused = blocks.has(schedule::kReasonPolicyPaused) ||
                      blocks.has(schedule::kReasonPaused) ||
                      blocks.has(schedule::kReasonPausedByAgent);
  for (const schedule::Block& b : blocks.blocks) {
    if (b.reason != schedule::kReasonBudgetExceeded &&
        b.reason != schedule::kReasonProviderThrottled && !is_policy_refusal(b.reason)) {
      return {kConditionPaused, paused, b.reason, b.message};
    }
  }
  HB_ASSERT_MSG(!paused, "a pause is a block the loop above returns");
  return {kConditionPaused, paused, "NotPaused", "heartbeats are not paused"};
}

WantedCondition budget_condition(const schedule::BlockResult& blocks) {
  const bool exceeded = blocks.has(schedule::kReasonBudgetExceeded);
  std::string_view message = "within the monthly budget";
  std::string_view reason = exceeded ? schedule::kReasonBudgetExceeded : "WithinBudget";
  for (const schedule::Block& b : blocks.blocks) {
    if (b.reason != schedule::kReasonBudgetExceeded) continue;
    message = b.message;
    if (!b.condition_reason.empty()) reason = b.condition_reason;
  }
  return {kConditionBudgetExceeded, exceeded, reason, message};
}

// Shown while a hold applies; once stored, kept as False after it lifts
// (so it never flaps in and out of the list).
std::optional<WantedCondition> provider_throttled_condition(const schedule::BlockResult& blocks) {
  for (const schedule::Block& b : blocks.blocks) {
    if (b.reason == schedule::kReasonProviderThrottled) {
      return WantedCondition{kConditionProviderThrottled, true, b.reason, b.message};
    }
  }
  return std::nullopt;
}

WantedCondition spec_valid_condition(const SpecValidity& spec) {
  HB_ASSERT_MSG(spec.valid || !spec.invalid_reason.empty(), "an invalid spec says why");
  if (spec.valid) return {kConditionSpecValid, true, "Valid", "the spec is valid"};
  return {kConditionSpecValid, false, spec.invalid_reason, spec.errors};
}

}  // namespace

AgentConditions wanted_conditions(const SpecValidity& spec, const schedule::BlockResult& blocks,
                                  const std::optional<RunProblem>& run_problem,
                                  const std::optional<SkippedHeartbeat>& skipped,
                                  bool has_schedule) {
  const WantedCondition stalled = stalled_condition(spec, run_problem, skipped);
  AgentConditions wanted{ready_condition(stalled, blocks, skipped, has_schedule),
                         reconciling_condition(),
                         stalled,
                         paused_condition(blocks),
                         budget_condition(blocks),
                         spec_valid_condition(spec),
                         provider_throttled_condition(blocks)};
  HB_ASSERT_MSG(!(wanted.stalled.status && wanted.ready.status), "a stalled agent is never Ready");
  HB_ASSERT_MSG(wanted.spec_valid.status == spec.valid && (spec.valid || wanted.stalled.status),
                "an invalid spec is told as SpecValid=False and Stalled");
  return wanted;
}

Conditions conditions_for(const Conditions& stored, const AgentConditions& wanted,
                          int64_t generation, TimePoint now) {
  static const WantedCondition kNotThrottled{kConditionProviderThrottled, false, "NotThrottled",
                                             "the model provider's quota is not known spent"};
  std::vector<const WantedCondition*> list = {&wanted.ready,           &wanted.reconciling,
                                              &wanted.stalled,         &wanted.paused,
                                              &wanted.budget_exceeded, &wanted.spec_valid};
  if (wanted.provider_throttled) {
    list.push_back(&*wanted.provider_throttled);
  } else if (stored_status(stored, kConditionProviderThrottled).has_value()) {
    list.push_back(&kNotThrottled);
  }
  if (stored != nullptr && stored->size() == list.size()) {
    bool same = true;
    for (size_t i = 0; same && i < list.size(); ++i) {
      same = condition_is((*stored)[i], *list[i], generation);
    }
    if (same) return stored;
  }
  auto conditions = std::make_shared<std::vector<Condition>>();
  conditions->reserve(list.size());
  for (const WantedCondition* w : list) {
    conditions->push_back(
        make_condition(stored, w->type, w->status, w->reason, w->message, generation, now));
  }
  HB_ASSERT_MSG(conditions->size() == list.size() && conditions->front().type == kConditionReady,
                "an agent's conditions are listed in their fixed order, Ready first");
  return conditions;
}

std::vector<Event> condition_events(const Conditions& stored, const AgentConditions& wanted,
                                    const std::string& agent_name) {
  std::vector<Event> events;
  auto raise = [&](bool warning, std::string_view reason, std::string_view message) {
    events.push_back(
        {EventTarget::kAgent, agent_name, warning, std::string(reason), std::string(message)});
  };
  const WantedCondition& spec = wanted.spec_valid;
  if (!spec.status && stored_status(stored, kConditionSpecValid).value_or(true)) {
    raise(true, spec.reason, spec.message);
  }
  // A policy's pause is told when it begins, also over a pause the agent
  // already had (its Event names the policy).
  const bool paused_before = stored_status(stored, kConditionPaused).value_or(false);
  const bool policy_pause_begins = wanted.paused.reason == schedule::kReasonPolicyPaused &&
                                   stored_reason(stored, kConditionPaused) != wanted.paused.reason;
  if (wanted.paused.status && (!paused_before || policy_pause_begins)) {
    raise(false, wanted.paused.reason, wanted.paused.message);
  }
  if (wanted.provider_throttled &&
      !stored_status(stored, kConditionProviderThrottled).value_or(false)) {
    raise(true, wanted.provider_throttled->reason, wanted.provider_throttled->message);
  }
  const WantedCondition& budget = wanted.budget_exceeded;
  if (budget.status && !stored_status(stored, kConditionBudgetExceeded).value_or(false)) {
    raise(true, "BudgetExceeded", budget.message);
  }
  // Before kstatus conditions a pause also set Ready=False: any of the four
  // held the agent.
  const bool was_held = !stored_status(stored, kConditionReady).value_or(true) ||
                        stored_status(stored, kConditionStalled).value_or(false) ||
                        stored_status(stored, kConditionPaused).value_or(false) ||
                        stored_status(stored, kConditionBudgetExceeded).value_or(false);
  if (wanted.ready.reason == kReasonReady && was_held) {
    raise(false, "Resumed", wanted.ready.message);
  }
  HB_ASSERT_MSG(events.size() <= 5, "a pass tells each condition's change at most once");
  return events;
}

std::string_view budget_block_reason(const AgentStatus& status) {
  if (status.conditions == nullptr) return {};
  for (const Condition& c : *status.conditions) {
    if (c.type == kConditionBudgetExceeded && c.status == kTrue) return c.reason;
  }
  return {};
}

namespace {

// The run's problem reason, or empty. A run this pass just decided has its
// reason in the new status.
std::string_view problem_of(const RunObservation& run) {
  if (run.phase != RunPhase::kFailed) return {};
  const std::string_view reason =
      run.became_final ? string_view_at(run.status, "reason") : run.view->reason;
  for (std::string_view known :
       {kReasonContainerConfigError, kReasonPromptNotFound, kReasonContextTooLarge}) {
    if (reason == known) return known;
  }
  return {};
}

// Whether `run` got past the step where `problem` failed: it finished
// without it (a cancel proves nothing), or, still going, its Job was made
// (past a missing prompt) or its runner container started (past a missing
// Secret). A run stuck at the same step proves nothing either.
bool got_past(const RunObservation& run, std::string_view problem) {
  HB_ASSERT_MSG(!problem.empty(), "asked only about a known problem");
  if (is_final(run.phase)) return run.phase != RunPhase::kCancelled && problem_of(run).empty();
  if (problem != kReasonContainerConfigError) {
    return !run.view->job_name.empty() || run.runner_started;  // past the prompt and context
  }
  return run.runner_started;
}

}  // namespace

std::optional<RunProblem> newest_run_problem(const std::vector<RunObservation>& runs) {
  // The newest run with a problem; creation times have one-second
  // resolution, so a run made in the same second may still have got past it.
  const RunObservation* failed = nullptr;
  for (const RunObservation& run : runs) {
    if (!problem_of(run).empty() &&
        (failed == nullptr || run.view->created > failed->view->created))
      failed = &run;
  }
  if (failed == nullptr) return std::nullopt;
  const std::string_view reason = problem_of(*failed);
  HB_ASSERT_MSG(!reason.empty(), "a run problem is one of the known reasons");
  for (const RunObservation& run : runs) {
    if (&run != failed && run.view->created >= failed->view->created && got_past(run, reason))
      return std::nullopt;
  }
  const std::string message =
      failed->became_final ? string_at(failed->status, "message") : failed->view->message;
  return RunProblem{reason, "run " + failed->view->name + ": " + message};
}

}  // namespace hb::controllers
