// Idle backoff (spec.heartbeat.idleBackoff): an agent whose scheduled
// heartbeats keep finding nothing to do is woken less often. After `after`
// scheduled runs in a row ended idle, the next slot lies two intervals after
// the last one, then four, and so on up to maxInterval; any run that acts,
// any manual or callback run, and any spec change start the count again.
//
// The streak is counted in the ledger (spend_ledger.h) as each run is
// counted, in the same write, so a run moves it exactly once. Slots stay on
// the agent's interval grid (created + offset + k * interval). Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/run_result.h"
#include "controllers/model/json_util.h"
#include "controllers/model/run_view.h"
#include "controllers/schedule/slots.h"

namespace hb::controllers {

inline constexpr std::string_view kIdleBackoffField = "spec.heartbeat.idleBackoff";
// Idle scheduled runs in a row before the interval first doubles.
inline constexpr int64_t kIdleBackoffAfterDefault = 3;
inline constexpr int64_t kIdleBackoffAfterMax = 1000;  // the CRD's maximum too
// maxInterval when unset: this many intervals.
inline constexpr int64_t kIdleBackoffMaxIntervalsDefault = 8;
// A run whose whole output (trimmed) is this acted on nothing.
inline constexpr std::string_view kIdleTokenDefault = "HEARTBEAT_OK";
inline constexpr std::size_t kIdleTokenBytesMax = 64;  // the CRD's maxLength too
// The streak stops counting here: doubling is capped long before.
inline constexpr int64_t kIdleStreakMax = 1'000'000;

struct IdleBackoff {
  int64_t after = kIdleBackoffAfterDefault;
  int64_t max_interval_seconds = 0;  // at least the interval
  std::string idle_token = std::string(kIdleTokenDefault);
};

// spec.heartbeat.idleBackoff, when set; `schedule` is the parsed schedule
// (null: the agent has none). Errors name the field and the fix: no
// interval, a maxInterval below the interval, `after` out of range, an
// empty or too long token.
std::optional<IdleBackoff> parse_idle_backoff(const Json& heartbeat,
                                              const schedule::Schedule* schedule,
                                              std::vector<std::string>& errors);

// The idle token a run's output is compared with: the spec's, else the default.
std::string_view idle_token(const std::optional<IdleBackoff>& backoff);

// Whether a run's result says it acted on nothing. A run that acted is never
// idle: the runner counted a tool call that could change something
// (usage.actionToolCalls above 0), or its output @mentions another agent
// (mentions.h: a mention may wake it). Otherwise it is idle when it called
// pause_heartbeats, its whole output (trimmed) is the idle token, or the
// runner counted no such call (usage.actionToolCalls 0; a result without
// that count is not idle by it). `self` is the run's agent.
bool result_is_idle(const api::RunResult& result, std::string_view token, std::string_view self);

// The streak after one more run is counted: a scheduled run that succeeded
// idle adds one; any other run ends the streak.
int64_t next_idle_streak(int64_t streak, std::string_view source, RunPhase phase, bool idle);

// How many intervals the next slot lies after lastScheduleTime: 1 below
// `after` idle runs, then 2, 4, ... up to the whole intervals in maxInterval.
int64_t backoff_intervals(const IdleBackoff& backoff, int64_t interval_seconds, int64_t streak);

}  // namespace hb::controllers
