// When does an agent's next scheduled heartbeat run? The decision the Agent
// reconciler makes on every reconcile, modelled on the Kubernetes CronJob
// controller v2 (getNextScheduleTime / mostRecentScheduleTime).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>

#include "controllers/schedule/cron.h"
#include "controllers/schedule/parse_result.h"
#include "controllers/schedule/utc_time.h"

namespace hb::schedule {

inline constexpr std::string_view kIntervalField = "spec.heartbeat.interval";
inline constexpr std::string_view kScheduleField = "spec.heartbeat.schedule";

// How many missed cron slots decide_slot counts one by one. Only the count
// stops there (it then reads "at least this many"); the slot to run is found
// directly with latest_at_or_before, however long the downtime.
inline constexpr int64_t kCronMissedSlotsScanMax = 1000;

inline constexpr std::string_view kSpreadField = "spec.heartbeat.spread";
inline constexpr std::string_view kSpreadAuto = "Auto";
inline constexpr std::string_view kSpreadNone = "None";

// Slots are created + offset + k * interval, the first strictly after the
// agent's creation: with offset 0 one interval after it, with a spread
// offset sooner, so a fleet created in one second fires across the interval.
struct IntervalSchedule {
  int64_t seconds = 0;
  int64_t offset_seconds = 0;  // 0 <= offset < seconds
};

// Either a fixed interval anchored to the agent's creation, or a cron rule.
using Schedule = std::variant<IntervalSchedule, CronSchedule>;

// What decides an agent's slots, as written in spec.heartbeat.
struct ScheduleText {
  std::string_view interval;
  std::string_view cron;
  // "", None: no offset; Auto: a stable hash of hash_key within one
  // interval; a duration D (at most the interval): a hash within D.
  std::string_view spread;
  std::string_view hash_key;  // the Agent's "namespace/name" (stable_hash.h)
  // An IANA name the cron fields are read in ("" or UTC: UTC); not with an interval.
  std::string_view time_zone;
};

// Exactly one of interval and cron must be non-empty. Checks the interval
// minimum (kIntervalSecondsMin), rejects cron rules that can never fire and a
// spread next to a cron rule (H spreads those), an unknown time zone and a
// time zone next to an interval. Errors name the field
// (spec.heartbeat.interval, .schedule, .spread or .timeZone) and the fix.
ParseResult<Schedule> parse_schedule(const ScheduleText& text);

// The first slot strictly after t. Interval slot k is created + k*interval,
// k >= 1, so the first heartbeat comes one interval after creation, never at
// creation. Cron slots are the matching minutes after creation. nullopt only
// for a cron rule with no match within kCronSearchYearsMax years.
std::optional<TimePoint> first_slot_after(const Schedule& schedule, TimePoint created, TimePoint t);

struct SlotDecision {
  // The slot to run now, if any: the most recent due slot, never a burst.
  // The caller records it as status.lastScheduleTime.
  std::optional<TimePoint> run_slot;
  // The first slot after now (and after lastScheduleTime): requeue for it.
  std::optional<TimePoint> next_slot;
  // The most recent due slot was older than startingDeadlineSeconds and is skipped.
  bool missed_too_late = false;
  // Due slots that will never run: all but run_slot, or all of them when
  // missed_too_late. For cron it saturates at kCronMissedSlotsScanMax.
  int64_t missed_count = 0;
};

// Candidates are the slots strictly after max(created, last_schedule_time)
// and at or before now. If a clock steps back behind last_schedule_time,
// nothing is due and next_slot still lies after last_schedule_time. O(1) for
// intervals; bounded for cron.
//
// `intervals_after_last` (idle backoff, interval schedules only): the next
// slot lies at least this many intervals after last_schedule_time; the slots
// in between are neither run nor missed.
SlotDecision decide_slot(const Schedule& schedule, TimePoint created,
                         std::optional<TimePoint> last_schedule_time,
                         std::optional<int64_t> starting_deadline_seconds, TimePoint now,
                         int64_t intervals_after_last = 1);

}  // namespace hb::schedule
