#include "controllers/schedule/slots.h"

#include <algorithm>
#include <chrono>

#include "api/hb_assert.h"
#include "controllers/schedule/duration.h"
#include "controllers/schedule/stable_hash.h"
#include "controllers/schedule/time_zone.h"

namespace hb::schedule {
namespace {

using std::chrono::seconds;

// Cron fields use salts 0-4 (one per field); the interval spread its own.
constexpr uint64_t kSpreadHashSalt = 5;

// floor(a / b) for b > 0; C++ division truncates towards zero instead.
int64_t floor_div(int64_t a, int64_t b) {
  HB_ASSERT_MSG(b > 0, "slots are a positive interval apart");
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// `earliest` is max(created, lastScheduleTime); slots are anchor + k * interval.
SlotDecision decide_interval(int64_t interval_seconds, TimePoint anchor, TimePoint earliest,
                             std::optional<int64_t> deadline_seconds, TimePoint now) {
  SlotDecision d;
  if (interval_seconds <= 0) return d;  // parse_schedule never yields this; stay safe anyway
  const TimePoint::duration interval = seconds{interval_seconds};
  const auto slot = [&](int64_t k) { return anchor + k * interval; };
  // Slot indices come from division, so a gap of any length costs the same.
  const int64_t first = floor_div((earliest - anchor).count(), interval.count()) + 1;
  if (now < slot(first)) {
    d.next_slot = slot(first);
    return d;
  }
  const int64_t latest = floor_div((now - anchor).count(), interval.count());
  const int64_t due = latest - first + 1;
  HB_ASSERT_MSG(due >= 1, "the first slot after the last one is due");
  d.next_slot = slot(latest + 1);
  if (deadline_seconds && slot(latest) < now - seconds{*deadline_seconds}) {
    d.missed_too_late = true;
    d.missed_count = due;
    return d;
  }
  d.run_slot = slot(latest);
  d.missed_count = due - 1;
  return d;
}

SlotDecision decide_cron(const CronSchedule& cron, TimePoint earliest,
                         std::optional<int64_t> deadline_seconds, TimePoint now) {
  SlotDecision d;
  const std::optional<TimePoint> first = next_after(cron, earliest);
  if (!first || now < *first) {
    d.next_slot = first;
    return d;
  }
  // Jump straight to the most recent due slot rather than walking the gap,
  // which is what the CronJob controller approximates with its arithmetic.
  const TimePoint latest = latest_at_or_before(cron, now).value_or(*first);
  HB_ASSERT_MSG(latest <= now, "the latest slot is at or before now");
  d.next_slot = next_after(cron, now);
  int64_t due = 0;
  // One past the cap, so that a saturated count reads exactly the cap.
  for (std::optional<TimePoint> t = first; t && *t <= now && due <= kCronMissedSlotsScanMax;
       t = next_after(cron, *t)) {
    ++due;
  }
  HB_ASSERT_MSG(due >= 1, "the first slot after the last one is due");
  if (deadline_seconds && latest < now - seconds{*deadline_seconds}) {
    d.missed_too_late = true;
    d.missed_count = std::min(due, kCronMissedSlotsScanMax);
    return d;
  }
  d.run_slot = latest;
  d.missed_count = std::min(due - 1, kCronMissedSlotsScanMax);
  return d;
}

// The offset of an interval's slots from its spread (see ScheduleText).
ParseResult<int64_t> parse_spread(std::string_view spread, int64_t interval_seconds,
                                  std::string_view hash_key) {
  using Result = ParseResult<int64_t>;
  HB_ASSERT_MSG(interval_seconds > 0, "a spread is parsed for a parsed interval");
  if (spread.empty() || spread == kSpreadNone) return Result::success(0);
  const auto hashed_below = [&](int64_t bound) {
    HB_ASSERT_MSG(bound > 0, "a spread is hashed within a positive duration");
    return static_cast<int64_t>(stable_hash(hash_key, kSpreadHashSalt) %
                                static_cast<uint64_t>(bound));
  };
  if (spread == kSpreadAuto) return Result::success(hashed_below(interval_seconds));
  auto within = parse_duration_seconds(spread, kSpreadField);
  if (!within.ok()) {
    return Result::failure(std::move(within.error) + "; or use " + std::string(kSpreadAuto) +
                           " (within one interval) or " + std::string(kSpreadNone));
  }
  if (*within.value > interval_seconds) {
    return Result::failure(std::string(kSpreadField) + " \"" + std::string(spread) +
                           "\": longer than the interval " + format_duration(interval_seconds) +
                           "; use at most the interval, or " + std::string(kSpreadAuto));
  }
  return Result::success(*within.value == 0 ? 0 : hashed_below(*within.value));
}

// The anchor that makes slot(1) = created + offset, the first slot after creation.
TimePoint interval_anchor(const IntervalSchedule& iv, TimePoint created) {
  HB_ASSERT_MSG(iv.offset_seconds == 0 || (iv.offset_seconds > 0 && iv.offset_seconds < iv.seconds),
                "a spread lies within one interval");
  const int64_t back = iv.offset_seconds > 0 ? iv.seconds - iv.offset_seconds : 0;
  return created - seconds{back};
}

}  // namespace

ParseResult<Schedule> parse_schedule(const ScheduleText& text) {
  using Result = ParseResult<Schedule>;
  const std::string_view interval = text.interval;
  const std::string_view cron = text.cron;
  if (!interval.empty() && !cron.empty()) {
    return Result::failure(std::string(kIntervalField) + " and " + std::string(kScheduleField) +
                           " are both set; set exactly one");
  }
  if (interval.empty() && cron.empty()) {
    return Result::failure("set one of " + std::string(kIntervalField) + " (e.g. 5m) or " +
                           std::string(kScheduleField) + " (5-field cron, UTC)");
  }
  if (!interval.empty()) {
    auto parsed = parse_duration_seconds(interval, kIntervalField);
    if (!parsed.ok()) return Result::failure(std::move(parsed.error));
    if (auto error = check_duration_min(kIntervalField, *parsed.value)) {
      return Result::failure(std::move(*error));
    }
    if (!text.time_zone.empty() && text.time_zone != "UTC") {
      return Result::failure(std::string(kTimeZoneField) + " \"" + std::string(text.time_zone) +
                             "\": applies to a schedule; an interval is the same in every zone");
    }
    auto offset = parse_spread(text.spread, *parsed.value, text.hash_key);
    if (!offset.ok()) return Result::failure(std::move(offset.error));
    HB_ASSERT_MSG(
        *parsed.value >= kIntervalSecondsMin && *offset.value >= 0 && *offset.value < *parsed.value,
        "a parsed interval has its minimum and a spread within it");
    return Result::success(IntervalSchedule{*parsed.value, *offset.value});
  }
  if (!text.spread.empty() && text.spread != kSpreadNone) {
    return Result::failure(std::string(kSpreadField) + " \"" + std::string(text.spread) +
                           "\": applies to an interval; spread a schedule with H instead, e.g. "
                           "\"H * * * *\" or \"H(0-29) 9 * * 1-5\"");
  }
  auto parsed = parse_cron(cron, kScheduleField, text.hash_key);
  if (!parsed.ok()) return Result::failure(std::move(parsed.error));
  auto zone = find_time_zone(text.time_zone);
  if (!zone.ok()) return Result::failure(std::move(zone.error));
  parsed.value->zone = *zone.value;
  if (!can_ever_match(*parsed.value)) {
    return Result::failure(std::string(kScheduleField) + " \"" + parsed.value->text +
                           "\": never fires; no chosen month has the chosen day of month");
  }
  return Result::success(std::move(*parsed.value));
}

std::optional<TimePoint> first_slot_after(const Schedule& schedule, TimePoint created,
                                          TimePoint t) {
  const TimePoint earliest = std::max(created, t);
  if (const auto* iv = std::get_if<IntervalSchedule>(&schedule)) {
    if (iv->seconds <= 0) return std::nullopt;
    const TimePoint::duration interval = seconds{iv->seconds};
    const TimePoint anchor = interval_anchor(*iv, created);
    const TimePoint first =
        anchor + (floor_div((earliest - anchor).count(), interval.count()) + 1) * interval;
    HB_ASSERT_MSG(first > earliest, "the first slot is after both times");
    return first;
  }
  return next_after(std::get<CronSchedule>(schedule), earliest);
}

SlotDecision decide_slot(const Schedule& schedule, TimePoint created,
                         std::optional<TimePoint> last_schedule_time,
                         std::optional<int64_t> starting_deadline_seconds, TimePoint now,
                         int64_t intervals_after_last) {
  HB_ASSERT(intervals_after_last >= 1);
  const TimePoint earliest = std::max(created, last_schedule_time.value_or(created));
  SlotDecision d;
  if (const auto* iv = std::get_if<IntervalSchedule>(&schedule)) {
    // Slots strictly after last + (n - 1) intervals: at least n after it.
    const int64_t skipped = last_schedule_time ? std::max<int64_t>(intervals_after_last - 1, 0) : 0;
    d = decide_interval(iv->seconds, interval_anchor(*iv, created),
                        earliest + skipped * seconds{iv->seconds}, starting_deadline_seconds, now);
  } else {
    d = decide_cron(std::get<CronSchedule>(schedule), earliest, starting_deadline_seconds, now);
  }
  HB_ASSERT_MSG(!d.run_slot || (*d.run_slot <= now && *d.run_slot > earliest),
                "a slot runs at or before now, after the last one");
  HB_ASSERT(!(d.run_slot && d.missed_too_late));
  HB_ASSERT(d.missed_count >= 0);
  HB_ASSERT_MSG(!d.next_slot || *d.next_slot > now, "the next slot is after now");
  return d;
}

}  // namespace hb::schedule
