#include "controllers/agent_conditions.h"

#include <array>

#include "controllers/schedule/utc_time.h"

namespace hb::controllers {

namespace {

constexpr std::string_view kTrue = "True";
constexpr std::string_view kFalse = "False";
constexpr std::string_view kReasonReady = "Ready";

// `c` is what make_condition would return for `w` (it keeps its transition time).
bool condition_is(const Condition& c, const WantedCondition& w, int64_t generation) {
  return c.type == w.type && c.status == (w.status ? kTrue : kFalse) &&
         c.observed_generation == generation && c.reason == w.reason && c.message == w.message &&
         !c.last_transition_time.empty();
}

// The stored status of condition `type`; nullopt when it is not stored.
std::optional<bool> stored_status(const Conditions& conditions, std::string_view type) {
  if (conditions == nullptr) return std::nullopt;
  for (const Condition& c : *conditions) {
    if (c.type == type) return c.status == kTrue;
  }
  return std::nullopt;
}

// Ready gives the first reason the agent does not run by itself.
WantedCondition ready_condition(const SpecValidity& spec, const schedule::BlockResult& blocks,
                                const std::optional<std::string>& config_error, bool has_schedule) {
  std::string_view reason = kReasonReady, message = "heartbeats are scheduled";
  if (!spec.valid) {
    reason = spec.invalid_reason;
    message = spec.errors;
  } else if (blocks.blocked()) {
    reason = blocks.blocks.front().reason;
    message = blocks.blocks.front().message;
  } else if (config_error) {
    reason = kReasonContainerConfigError;
    message = *config_error;
  } else if (!has_schedule) {
    message = "no interval or schedule: manual and callback runs only";
  }
  return {kConditionReady, reason == kReasonReady, reason, message};
}

// Paused by the board or by the agent: the first block that is not the budget.
WantedCondition paused_condition(const schedule::BlockResult& blocks) {
  const bool paused =
      blocks.has(schedule::kReasonPaused) || blocks.has(schedule::kReasonPausedByAgent);
  for (const schedule::Block& b : blocks.blocks) {
    if (b.reason != schedule::kReasonBudgetExceeded) {
      return {kConditionPaused, paused, b.reason, b.message};
    }
  }
  return {kConditionPaused, paused, "NotPaused", "heartbeats are not paused"};
}

WantedCondition budget_condition(const schedule::BlockResult& blocks) {
  const bool exceeded = blocks.has(schedule::kReasonBudgetExceeded);
  std::string_view message = "within the monthly budget";
  for (const schedule::Block& b : blocks.blocks) {
    if (b.reason == schedule::kReasonBudgetExceeded) message = b.message;
  }
  return {kConditionBudgetExceeded, exceeded, exceeded ? "BudgetExceeded" : "WithinBudget",
          message};
}

WantedCondition spec_valid_condition(const SpecValidity& spec) {
  if (spec.valid) return {kConditionSpecValid, true, "Valid", "the spec is valid"};
  return {kConditionSpecValid, false, spec.invalid_reason, spec.errors};
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
                   generation,          kept != nullptr ? *kept : schedule::format_rfc3339(now),
                   std::string(reason), std::string(message)};
}

AgentConditions wanted_conditions(const SpecValidity& spec, const schedule::BlockResult& blocks,
                                  const std::optional<std::string>& config_error,
                                  bool has_schedule) {
  return {ready_condition(spec, blocks, config_error, has_schedule), paused_condition(blocks),
          budget_condition(blocks), spec_valid_condition(spec)};
}

Conditions conditions_for(const Conditions& stored, const AgentConditions& wanted,
                          int64_t generation, TimePoint now) {
  const std::array<const WantedCondition*, 4> list = {&wanted.ready, &wanted.paused,
                                                      &wanted.budget_exceeded, &wanted.spec_valid};
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
  if (wanted.paused.status && !stored_status(stored, kConditionPaused).value_or(false)) {
    raise(false, wanted.paused.reason, wanted.paused.message);
  }
  const WantedCondition& budget = wanted.budget_exceeded;
  if (budget.status && !stored_status(stored, kConditionBudgetExceeded).value_or(false)) {
    raise(true, "BudgetExceeded", budget.message);
  }
  if (wanted.ready.status && !stored_status(stored, kConditionReady).value_or(true)) {
    raise(false, "Resumed", wanted.ready.message);
  }
  return events;
}

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

}  // namespace hb::controllers
