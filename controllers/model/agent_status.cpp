#include "controllers/model/agent_status.h"

#include <algorithm>
#include <array>

#include "api/hb_assert.h"
#include "controllers/model/idle_backoff.h"
#include "controllers/model/provider_backoff.h"
#include "controllers/schedule/utc_time.h"

namespace hb::controllers {

namespace {

constexpr std::array<api::AgentType, 3> kAgentTypes = {
    api::AgentType::kMemgpt, api::AgentType::kLettaV1, api::AgentType::kReact};

template <typename T>
bool same_list(const std::shared_ptr<const std::vector<T>>& a,
               const std::shared_ptr<const std::vector<T>>& b) {
  if (a == b) return true;  // shared (or both absent)
  if (a == nullptr || b == nullptr) return false;
  return *a == *b;
}

void put_time(Json& out, const char* key, const std::optional<TimePoint>& t) {
  if (t) out.emplace(key, schedule::format_rfc3339(*t));
}

}  // namespace

const Json& capabilities_json(api::AgentType type) {
  static const std::array<Json, kAgentTypes.size()> kTable = {
      api::to_json(api::capabilities(kAgentTypes[0])),
      api::to_json(api::capabilities(kAgentTypes[1])),
      api::to_json(api::capabilities(kAgentTypes[2]))};
  // Row i of the table is the type numbered i.
  static_assert(static_cast<size_t>(kAgentTypes[0]) == 0 &&
                static_cast<size_t>(kAgentTypes[1]) == 1 &&
                static_cast<size_t>(kAgentTypes[2]) == 2);
  HB_ASSERT(static_cast<size_t>(type) < kTable.size());
  return kTable[static_cast<size_t>(type)];
}

bool same_conditions(const Conditions& a, const Conditions& b) {
  return same_list(a, b);
}
bool same_recent_runs(const RecentRuns& a, const RecentRuns& b) {
  return same_list(a, b);
}

bool operator==(const AgentStatus& a, const AgentStatus& b) {
  return a.observed_generation == b.observed_generation &&
         same_conditions(a.conditions, b.conditions) && a.phase == b.phase &&
         a.last_schedule_time == b.last_schedule_time &&
         a.last_heartbeat_time == b.last_heartbeat_time &&
         a.next_heartbeat_time == b.next_heartbeat_time && a.paused_until == b.paused_until &&
         a.active_run == b.active_run && a.spend == b.spend && a.spend_today == b.spend_today &&
         a.capabilities == b.capabilities && same_recent_runs(a.recent_runs, b.recent_runs) &&
         a.last_invoke == b.last_invoke && a.last_skipped == b.last_skipped &&
         a.budget_hold == b.budget_hold && a.idle_streak == b.idle_streak &&
         a.provider_error_streak == b.provider_error_streak &&
         a.effective_interval == b.effective_interval;
}

Json to_json(const Condition& c) {
  Json out = Json::object();
  out.emplace("type", c.type);
  out.emplace("status", c.status);
  out.emplace("observedGeneration", c.observed_generation);
  out.emplace("lastTransitionTime", c.last_transition_time);
  out.emplace("reason", c.reason);
  out.emplace("message", c.message);
  return out;
}

Json to_json(const AgentStatus& s) {
  Json out = Json::object();
  if (s.observed_generation) out.emplace("observedGeneration", *s.observed_generation);
  if (s.conditions) {
    Json& list = *out.emplace("conditions", Json::array()).first;
    for (const Condition& c : *s.conditions) list.push_back(to_json(c));
  }
  if (!s.phase.empty()) out.emplace("phase", s.phase);
  put_time(out, "lastScheduleTime", s.last_schedule_time);
  put_time(out, "lastHeartbeatTime", s.last_heartbeat_time);
  put_time(out, "nextHeartbeatTime", s.next_heartbeat_time);
  put_time(out, "pausedUntil", s.paused_until);
  if (!s.active_run.empty()) out.emplace("activeRun", s.active_run);
  if (s.spend) out.emplace("spend", to_json(*s.spend));
  if (s.spend_today) out.emplace("spendToday", to_json(*s.spend_today));
  if (s.capabilities) out.emplace("capabilities", capabilities_json(*s.capabilities));
  if (s.recent_runs) out.emplace("recentRuns", to_json(*s.recent_runs));
  if (s.last_invoke) {
    Json& last = *out.emplace("lastInvoke", Json::object()).first;
    last.emplace("value", s.last_invoke->value);
    last.emplace("valueHash", s.last_invoke->value_hash);
    last.emplace("run", s.last_invoke->run);
  }
  if (s.last_skipped) {
    Json& skipped = *out.emplace("lastSkippedHeartbeat", Json::object()).first;
    skipped.emplace("scheduledTime", schedule::format_rfc3339(s.last_skipped->slot));
    skipped.emplace("reason", s.last_skipped->reason);
    skipped.emplace("message", s.last_skipped->message);
  }
  if (s.budget_hold) out.emplace("budgetHold", to_json(*s.budget_hold));
  if (s.idle_streak) out.emplace("idleStreak", *s.idle_streak);
  if (s.provider_error_streak) out.emplace("providerErrorStreak", *s.provider_error_streak);
  if (!s.effective_interval.empty()) out.emplace("effectiveInterval", s.effective_interval);
  return out;
}

Json to_json(const BudgetHold& hold) {
  Json out = Json::object();
  out.emplace("period", hold.period);
  out.emplace("budgetCents", hold.budget_cents);
  out.emplace("since", schedule::format_rfc3339(hold.since));
  out.emplace("resumeValueHash", hold.resume_hash);
  put_time(out, "releasedAt", hold.released_at);
  if (!hold.released_by.empty()) out.emplace("releasedBy", hold.released_by);
  return out;
}

Conditions parse_conditions(const Json* list) {
  if (list == nullptr || !list->is_array()) return nullptr;
  auto conditions = std::make_shared<std::vector<Condition>>();
  conditions->reserve(list->size());
  for (const Json& c : *list) {
    conditions->push_back(Condition{
        string_at(c, "type"), string_at(c, "status"), int_at(c, "observedGeneration").value_or(0),
        string_at(c, "lastTransitionTime"), string_at(c, "reason"), string_at(c, "message")});
  }
  return conditions;
}

ParsedAgentStatus parse_agent_status(const Json* stored) {
  ParsedAgentStatus parsed;
  if (stored == nullptr || !stored->is_object()) {
    parsed.canonical = stored == nullptr;  // absent renders as absent
    return parsed;
  }
  const Json& j = *stored;
  AgentStatus& s = parsed.status;
  s.observed_generation = int_at(j, "observedGeneration");
  s.conditions = parse_conditions(find_path(j, "conditions"));
  s.phase = string_at(j, "phase");
  s.last_schedule_time = time_at(j, "lastScheduleTime");
  s.last_heartbeat_time = time_at(j, "lastHeartbeatTime");
  s.next_heartbeat_time = time_at(j, "nextHeartbeatTime");
  s.paused_until = time_at(j, "pausedUntil");
  s.active_run = string_at(j, "activeRun");
  if (find_path(j, "spend") != nullptr) s.spend = spend_from_status(j);
  if (const Json* today = find_path(j, "spendToday"); today != nullptr) {
    s.spend_today = day_spend_from_json(*today);
  }
  if (const Json* caps = find_path(j, "capabilities"); caps != nullptr) {
    for (api::AgentType type : kAgentTypes) {
      if (same_json(*caps, capabilities_json(type))) s.capabilities = type;
    }
  }
  if (find_path(j, "recentRuns") != nullptr) {
    s.recent_runs = std::make_shared<const std::vector<LedgerEntry>>(recent_from_status(j));
  }
  if (const Json* last = find_path(j, "lastInvoke"); last != nullptr) {
    s.last_invoke = LastInvoke{string_at(*last, "value"), string_at(*last, "valueHash"),
                               string_at(*last, "run")};
  }
  if (const Json* skipped = find_path(j, "lastSkippedHeartbeat"); skipped != nullptr) {
    if (auto slot = time_at(*skipped, "scheduledTime")) {
      s.last_skipped =
          SkippedHeartbeat{*slot, string_at(*skipped, "reason"), string_at(*skipped, "message")};
    }
  }
  if (const Json* hold = find_path(j, "budgetHold"); hold != nullptr) {
    if (auto since = time_at(*hold, "since")) {
      s.budget_hold = BudgetHold{string_at(*hold, "period"),
                                 int_at(*hold, "budgetCents").value_or(0),
                                 *since,
                                 string_at(*hold, "resumeValueHash"),
                                 time_at(*hold, "releasedAt"),
                                 string_at(*hold, "releasedBy")};
    }
  }
  // Out of range (a hand-edited status): clamped, so rewritten.
  if (auto streak = int_at(j, "idleStreak"))
    s.idle_streak = std::clamp<int64_t>(*streak, 0, kIdleStreakMax);
  if (auto streak = int_at(j, "providerErrorStreak"); streak && *streak > 0) {
    s.provider_error_streak = std::min(*streak, kProviderErrorStreakMax);
  }
  s.effective_interval = string_at(j, "effectiveInterval");
  parsed.canonical = to_json(s) == j;
  return parsed;
}

}  // namespace hb::controllers
