#include "controllers/schedule/requeue.h"

namespace hb::schedule {

std::optional<TimePoint> requeue_at(TimePoint now,
                                    std::initializer_list<std::optional<TimePoint>> candidates) {
  std::optional<TimePoint> best;
  for (const auto& c : candidates) {
    if (c && *c > now && (!best || *c < *best)) best = c;
  }
  return best;
}

std::optional<std::chrono::milliseconds> requeue_after(
    TimePoint now, std::initializer_list<std::optional<TimePoint>> candidates) {
  const auto at = requeue_at(now, candidates);
  if (!at) return std::nullopt;
  return std::chrono::ceil<std::chrono::milliseconds>(*at - now);
}

}  // namespace hb::schedule
