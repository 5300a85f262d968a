// When to look at an agent again. The operator never polls: each agent is
// requeued for the earliest moment its decision could change.
#pragma once

#include <chrono>
#include <initializer_list>
#include <optional>

#include "controllers/schedule/utc_time.h"

namespace hb::schedule {

// The earliest candidate strictly after now (e.g. next slot, pausedUntil,
// budget reset); nullopt when none is in the future.
std::optional<TimePoint> requeue_at(TimePoint now,
                                    std::initializer_list<std::optional<TimePoint>> candidates);

// The same as a delay from now, rounded up to whole milliseconds so the
// reconcile never wakes a hair before the slot and finds nothing due.
std::optional<std::chrono::milliseconds> requeue_after(
    TimePoint now, std::initializer_list<std::optional<TimePoint>> candidates);

}  // namespace hb::schedule
