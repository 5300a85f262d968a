#include "controllers/model/idle_backoff.h"

#include <algorithm>
#include <variant>

#include "api/hb_assert.h"
#include "api/stop_reason.h"
#include "controllers/model/mentions.h"
#include "controllers/model/text_util.h"
#include "controllers/schedule/duration.h"

namespace hb::controllers {

// A streak counts far enough for the latest `after` to start backing off,
// and an unset maxInterval is a backoff at all.
static_assert(kIdleBackoffAfterDefault <= kIdleBackoffAfterMax &&
              kIdleBackoffAfterMax < kIdleStreakMax);
static_assert(kIdleBackoffMaxIntervalsDefault > 1);

namespace {

std::string field(std::string_view name) {
  return std::string(kIdleBackoffField) + "." + std::string(name);
}

// maxInterval: a duration of at least the interval; unset, 8 intervals.
std::optional<int64_t> parse_max_interval(const Json& backoff, int64_t interval_seconds,
                                          std::vector<std::string>& errors) {
  HB_ASSERT_MSG(interval_seconds > 0, "a parsed interval is a positive duration");
  const std::string_view text = string_view_at(backoff, "maxInterval");
  if (text.empty()) return interval_seconds * kIdleBackoffMaxIntervalsDefault;
  auto parsed = schedule::parse_duration_seconds(text, field("maxInterval"));
  if (!parsed.ok()) {
    errors.push_back(std::move(parsed.error));
    return std::nullopt;
  }
  if (*parsed.value < interval_seconds) {
    errors.push_back(field("maxInterval") + " \"" + std::string(text) +
                     "\": shorter than the interval " +
                     schedule::format_duration(interval_seconds) +
                     "; use at least the interval (it is where backing off stops)");
    return std::nullopt;
  }
  return *parsed.value;
}

}  // namespace

std::optional<IdleBackoff> parse_idle_backoff(const Json& heartbeat,
                                              const schedule::Schedule* schedule,
                                              std::vector<std::string>& errors) {
  const Json* backoff = find_path(heartbeat, "idleBackoff");
  if (backoff == nullptr || backoff->is_null()) return std::nullopt;
  const std::size_t errors_before = errors.size();
  IdleBackoff out;
  out.after = int_at(*backoff, "after").value_or(kIdleBackoffAfterDefault);
  if (out.after < 1 || out.after > kIdleBackoffAfterMax) {
    errors.push_back(field("after") + ": must be 1.." + std::to_string(kIdleBackoffAfterMax) +
                     " idle runs in a row");
  }
  if (const Json* token = find_path(*backoff, "idleToken"); token != nullptr) {
    out.idle_token = std::string(trim_blank(string_view_at(*backoff, "idleToken")));
    if (out.idle_token.empty() || out.idle_token.size() > kIdleTokenBytesMax) {
      errors.push_back(field("idleToken") + ": must be 1-" + std::to_string(kIdleTokenBytesMax) +
                       " bytes of text, e.g. " + std::string(kIdleTokenDefault));
    }
  }
  const auto* interval =
      schedule != nullptr ? std::get_if<schedule::IntervalSchedule>(schedule) : nullptr;
  if (interval == nullptr) {
    errors.push_back(std::string(kIdleBackoffField) + ": applies to " +
                     std::string(schedule::kIntervalField) +
                     (schedule != nullptr ? "; a schedule fires when its rule says (use a "
                                            "sparser rule, or an interval)"
                                          : ", which is not set"));
    return std::nullopt;
  }
  const std::optional<int64_t> max = parse_max_interval(*backoff, interval->seconds, errors);
  if (!max || errors.size() != errors_before) return std::nullopt;
  out.max_interval_seconds = *max;
  HB_ASSERT_MSG(out.after >= 1 && out.after <= kIdleBackoffAfterMax &&
                    out.max_interval_seconds >= interval->seconds &&
                    out.idle_token.size() <= kIdleTokenBytesMax,
                "an idleBackoff parsed without errors lies in its documented ranges");
  return out;
}

std::string_view idle_token(const std::optional<IdleBackoff>& backoff) {
  static_assert(!kIdleTokenDefault.empty() && kIdleTokenDefault.size() <= kIdleTokenBytesMax);
  const std::string_view token =
      backoff ? std::string_view(backoff->idle_token) : kIdleTokenDefault;
  HB_ASSERT_MSG(!token.empty() && token.size() <= kIdleTokenBytesMax,
                "an idleBackoff is kept only when parsed without errors");
  return token;
}

bool result_is_idle(const api::RunResult& result, std::string_view token, std::string_view self) {
  if (result.action_tool_calls.value_or(0) > 0) return false;
  if (!mentioned_agents(result.output, self).empty()) return false;
  if (api::parse_stop_reason(result.stop_reason) == api::StopReason::kPauseHeartbeats) return true;
  if (!token.empty() && trim_blank(result.output) == token) return true;
  return result.action_tool_calls == 0;
}

int64_t next_idle_streak(int64_t streak, std::string_view source, RunPhase phase, bool idle) {
  const bool idle_slot = source == kSourceScheduler && phase == RunPhase::kSucceeded && idle;
  const int64_t next = idle_slot ? std::min(streak + 1, kIdleStreakMax) : 0;
  HB_ASSERT_MSG(next <= kIdleStreakMax && (idle_slot || next == 0),
                "an idle streak stops at its cap, and any other run ends it");
  return next;
}

int64_t backoff_intervals(const IdleBackoff& backoff, int64_t interval_seconds, int64_t streak) {
  if (interval_seconds <= 0 || streak < backoff.after) return 1;
  const int64_t most = std::max<int64_t>(1, backoff.max_interval_seconds / interval_seconds);
  int64_t intervals = 1;
  // Doubles once per idle run from the `after`-th on; stops at the cap, so
  // a streak of any length costs at most 63 steps.
  for (int64_t idle = backoff.after; idle <= streak && intervals < most; ++idle) {
    intervals = std::min(intervals * 2, most);
  }
  HB_ASSERT_MSG(intervals >= 1 && (intervals == 1 ||
                                   intervals * interval_seconds <= backoff.max_interval_seconds),
                "backing off stops at maxInterval");
  return intervals;
}

}  // namespace hb::controllers
