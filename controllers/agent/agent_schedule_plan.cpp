#include "controllers/agent/agent_schedule_plan.h"

#include <algorithm>
#include <string>

#include "api/hb_assert.h"
#include "controllers/schedule/run_name.h"
#include "controllers/schedule/utc_time.h"

namespace hb::controllers {

namespace {

using schedule::format_rfc3339;

// `current` or `candidate`, whichever is earlier, counting only future times.
std::optional<TimePoint> earliest_future(std::optional<TimePoint> current,
                                         std::optional<TimePoint> candidate, TimePoint now) {
  if (!candidate || *candidate <= now) return current;
  if (!current || *candidate < *current) return candidate;
  HB_ASSERT_MSG(*current <= *candidate, "the earliest time kept is never a later one");
  return current;
}

Event missed_too_late_event(const AgentSpec& spec, const schedule::SlotDecision& slot) {
  HB_ASSERT_MSG(slot.missed_too_late, "only a slot past its deadline is told as missed too late");
  return {EventTarget::kAgent, spec.name, true, "MissedSchedule",
          "the most recent due slot is older than startingDeadlineSeconds (" +
              std::to_string(spec.starting_deadline_seconds.value_or(0)) + "s); skipped " +
              std::to_string(slot.missed_count) + " slot(s)"};
}

Event missed_slots_event(const AgentSpec& spec, const schedule::SlotDecision& slot) {
  HB_ASSERT_MSG(slot.run_slot && slot.missed_count > 0,
                "missed slots are told only beside the slot that runs");
  return {EventTarget::kAgent, spec.name, true, "MissedSchedule",
          std::to_string(slot.missed_count) + " slot(s) missed; running only the most recent, " +
              format_rfc3339(*slot.run_slot)};
}

bool run_exists(const std::vector<RunObservation>& runs, const std::string& name) {
  return std::any_of(runs.begin(), runs.end(),
                     [&](const RunObservation& r) { return r.view->name == name; });
}

// While blocked: when the pause or the month lifts, the most recent slot
// runs then; else the first slot after the lift.
std::optional<TimePoint> heartbeat_after_blocks(const AgentSpec& spec,
                                                const schedule::BlockResult& blocks,
                                                std::optional<TimePoint> last_scheduled,
                                                TimePoint now, int64_t intervals_after_last) {
  const TimePoint lifts =
      std::max({blocks.paused_until_lifts_at.value_or(now), blocks.budget_resets_at.value_or(now),
                blocks.provider_hold_lifts_at.value_or(now)});
  const schedule::SlotDecision at_lift =
      schedule::decide_slot(*spec.schedule, spec.created, last_scheduled,
                            spec.starting_deadline_seconds, lifts, intervals_after_last);
  const std::optional<TimePoint> next =
      at_lift.run_slot ? std::optional<TimePoint>(lifts) : at_lift.next_slot;
  HB_ASSERT_MSG(!next || *next >= now, "a blocked agent's next heartbeat is not in the past");
  return next;
}

}  // namespace

std::optional<TimePoint> later_time(std::optional<TimePoint> a, std::optional<TimePoint> b) {
  if (!a) return b;
  if (!b) return a;
  const TimePoint later = std::max(*a, *b);
  HB_ASSERT_MSG(later >= *a && later >= *b, "the later time is at or after both");
  return later;
}

SchedulePlan plan_schedule(const AgentSpec& spec, const schedule::BlockResult& blocks,
                           std::optional<TimePoint> last_scheduled,
                           const std::vector<RunObservation>& runs,
                           const RunObservation* first_waiting, TimePoint now,
                           int64_t intervals_after_last) {
  HB_ASSERT_MSG(spec.schedule.has_value(), "only a scheduled agent's slots are planned");
  SchedulePlan plan;
  const schedule::SlotDecision slot =
      schedule::decide_slot(*spec.schedule, spec.created, last_scheduled,
                            spec.starting_deadline_seconds, now, intervals_after_last);
  if (slot.missed_too_late) plan.events.push_back(missed_too_late_event(spec, slot));
  if (slot.run_slot && !blocks.blocked()) {
    if (slot.missed_count > 0) plan.events.push_back(missed_slots_event(spec, slot));
    plan.run_slot = slot.run_slot;
    std::string name = schedule::scheduled_run_name(spec.name, *slot.run_slot);
    if (run_exists(runs, name)) {
      // Created by an earlier pass: nothing to add.
    } else if (first_waiting == nullptr) {
      plan.events.push_back(
          {EventTarget::kAgent, spec.name, false, "RunScheduled",
           "created HeartbeatRun " + name + " for " + format_rfc3339(*slot.run_slot),
           /*routine=*/true});
      plan.create_run = RunRequest{std::move(name), kSourceScheduler, slot.run_slot, ""};
    } else {
      plan.events.push_back({EventTarget::kAgent, spec.name, false, "ScheduleCoalesced",
                             "slot " + format_rfc3339(*slot.run_slot) +
                                 " coalesced into the queued run " + first_waiting->view->name,
                             /*routine=*/true});
    }
  }
  // Held until a person acts (spec.paused, a budget stop awaiting approval):
  // no next heartbeat time can be told.
  if (!spec.paused && !blocks.until_a_person_acts) {
    plan.next_heartbeat =
        blocks.blocked()
            ? heartbeat_after_blocks(spec, blocks, later_time(last_scheduled, plan.run_slot), now,
                                     intervals_after_last)
            : slot.next_slot;
  }
  HB_ASSERT_MSG(!plan.create_run ||
                    (!blocks.blocked() && plan.create_run->slot && *plan.create_run->slot <= now),
                "an unblocked agent's run is made for a slot at or before now");
  return plan;
}

std::optional<TimePoint> due_slot_without_run(const AgentSpec& spec,
                                              std::optional<TimePoint> last_scheduled,
                                              const std::vector<RunObservation>& runs,
                                              TimePoint now) {
  if (!spec.schedule) return std::nullopt;
  // One interval after the last slot is the earliest idle backoff allows.
  const schedule::SlotDecision slot = schedule::decide_slot(
      *spec.schedule, spec.created, last_scheduled, spec.starting_deadline_seconds, now, 1);
  if (!slot.run_slot) return std::nullopt;
  if (run_exists(runs, schedule::scheduled_run_name(spec.name, *slot.run_slot))) {
    return std::nullopt;
  }
  HB_ASSERT_MSG(*slot.run_slot <= now, "a due slot is at or before now");
  return slot.run_slot;
}

std::optional<TimePoint> requeue_time(std::optional<TimePoint> deferred_write,
                                      std::optional<TimePoint> next_heartbeat,
                                      const schedule::BlockResult& blocks,
                                      const std::vector<RunObservation>& runs, TimePoint now) {
  std::optional<TimePoint> at = deferred_write;
  at = earliest_future(at, next_heartbeat, now);
  at = earliest_future(at, blocks.paused_until_lifts_at, now);
  at = earliest_future(at, blocks.provider_hold_lifts_at, now);
  at = earliest_future(at, blocks.budget_resets_at, now);
  for (const RunObservation& run : runs) at = earliest_future(at, run.recheck_at, now);
  HB_ASSERT_MSG(!at || at == deferred_write || *at > now, "an agent is looked at again later");
  return at;
}

}  // namespace hb::controllers
