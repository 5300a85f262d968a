// Budget stops that wait for a person: manual intervention is required to
// resume. With spec.budget.resume: Manual, the pass that sees
// this month's spend reach spec.budget.monthlyCents records a hold in
// status.budgetHold; it keeps scheduled, manual and callback runs from
// starting across the month boundary until a person raises the budget above
// the one that stopped the agent or sets the heartbeat.dev/resume annotation
// to a value other than the one it had then (idempotent by value: the
// operator never removes the annotation, Git may hold it). NextPeriod keeps
// the old behaviour: heartbeats resume when the UTC month turns. Pure step of
// decide_agent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "controllers/model/agent_spec.h"
#include "controllers/model/agent_status.h"
#include "controllers/model/event.h"

namespace hb::controllers {

// `kubectl annotate hba NAME heartbeat.dev/resume=VALUE --overwrite` releases
// a budget hold; a value the hold already saw releases nothing.
inline constexpr const char* kAnnotationResume = "heartbeat.dev/resume";

// Who released a hold (status.budgetHold.releasedBy, the Event's message).
inline constexpr const char* kBudgetReleasedByRaise = "BudgetRaised";
inline constexpr const char* kBudgetReleasedByAnnotation = "ResumeAnnotation";
inline constexpr const char* kBudgetReleasedByPolicy = "ResumeNextPeriod";
inline constexpr const char* kEventBudgetResumed = "BudgetResumed";

struct BudgetHoldInput {
  const AgentSpec* spec = nullptr;
  std::optional<BudgetHold> stored;     // status.budgetHold
  std::optional<std::string> resume;    // the heartbeat.dev/resume annotation
  int64_t spent_cents_this_period = 0;  // counted, this UTC month
  std::string period;                   // this UTC month, "YYYY-MM"
  TimePoint now{};
};

struct BudgetHoldPlan {
  std::optional<BudgetHold> hold;  // status.budgetHold to store; none: absent
  std::vector<Event> events;       // BudgetResumed when a hold is released
};

BudgetHoldPlan plan_budget_hold(const BudgetHoldInput& in);

// The hash a hold keeps of the annotation's value ("" when it is absent).
std::string resume_value_hash(const std::optional<std::string>& resume);

}  // namespace hb::controllers
