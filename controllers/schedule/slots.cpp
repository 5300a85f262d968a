#include "controllers/schedule/slots.h"

#include <algorithm>
#include <chrono>

#include "controllers/schedule/duration.h"

namespace hb::schedule {
namespace {

using std::chrono::seconds;

// floor(a / b) for b > 0; C++ division truncates towards zero instead.
int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// `earliest` is max(created, lastScheduleTime); slots are created + k * interval.
SlotDecision decide_interval(int64_t interval_seconds, TimePoint created, TimePoint earliest,
                             std::optional<int64_t> deadline_seconds, TimePoint now) {
  SlotDecision d;
  if (interval_seconds <= 0) return d;  // parse_schedule never yields this; stay safe anyway
  const TimePoint::duration interval = seconds{interval_seconds};
  const auto slot = [&](int64_t k) { return created + k * interval; };
  // Slot indices come from division, so a gap of any length costs the same.
  const int64_t first = floor_div((earliest - created).count(), interval.count()) + 1;
  if (now < slot(first)) {
    d.next_slot = slot(first);
    return d;
  }
  const int64_t latest = floor_div((now - created).count(), interval.count());
  const int64_t due = latest - first + 1;
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
  d.next_slot = next_after(cron, now);
  int64_t due = 0;
  // One past the cap, so that a saturated count reads exactly the cap.
  for (std::optional<TimePoint> t = first; t && *t <= now && due <= kCronMissedSlotsScanMax;
       t = next_after(cron, *t)) {
    ++due;
  }
  if (deadline_seconds && latest < now - seconds{*deadline_seconds}) {
    d.missed_too_late = true;
    d.missed_count = std::min(due, kCronMissedSlotsScanMax);
    return d;
  }
  d.run_slot = latest;
  d.missed_count = std::min(due - 1, kCronMissedSlotsScanMax);
  return d;
}

}  // namespace

ParseResult<Schedule> parse_schedule(std::string_view interval, std::string_view cron) {
  using Result = ParseResult<Schedule>;
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
    return Result::success(IntervalSchedule{*parsed.value});
  }
  auto parsed = parse_cron(cron, kScheduleField);
  if (!parsed.ok()) return Result::failure(std::move(parsed.error));
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
    return created + (floor_div((earliest - created).count(), interval.count()) + 1) * interval;
  }
  return next_after(std::get<CronSchedule>(schedule), earliest);
}

SlotDecision decide_slot(const Schedule& schedule, TimePoint created,
                         std::optional<TimePoint> last_schedule_time,
                         std::optional<int64_t> starting_deadline_seconds, TimePoint now) {
  const TimePoint earliest = std::max(created, last_schedule_time.value_or(created));
  if (const auto* iv = std::get_if<IntervalSchedule>(&schedule)) {
    return decide_interval(iv->seconds, created, earliest, starting_deadline_seconds, now);
  }
  return decide_cron(std::get<CronSchedule>(schedule), earliest, starting_deadline_seconds, now);
}

}  // namespace hb::schedule
