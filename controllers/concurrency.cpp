#include "controllers/concurrency.h"

#include <algorithm>

namespace hb::controllers {

bool starts_before(const StartCandidate& a, const StartCandidate& b) {
  return a.order != b.order ? a.order < b.order : a.agent < b.agent;
}

Admission admit_start(int64_t cap, int64_t in_use,
                      const std::vector<const StartCandidate*>& waiting_in_order,
                      const StartCandidate& candidate) {
  if (cap <= 0) return Admission::yes();
  const int64_t free_places = std::max<int64_t>(cap - in_use, 0);
  int64_t ahead = 0;
  for (const StartCandidate* w : waiting_in_order) {
    if (!starts_before(*w, candidate)) break;
    if (w->agent != candidate.agent) ++ahead;
  }
  if (ahead < free_places) return Admission::yes(ahead);
  std::string message = "waiting: " + std::to_string(std::min(in_use, cap)) + " of " +
                        std::to_string(cap) + " concurrent runs in use (--max-concurrent-runs); " +
                        std::to_string(ahead) + " run(s) asked for earlier start first";
  return Admission::no(ahead, std::move(message));
}

std::vector<std::string> agents_to_wake(
    int64_t cap, int64_t in_use, const std::vector<const StartCandidate*>& waiting_in_order) {
  std::vector<std::string> agents;
  const int64_t free_places =
      cap <= 0 ? static_cast<int64_t>(waiting_in_order.size()) : std::max<int64_t>(cap - in_use, 0);
  for (const StartCandidate* w : waiting_in_order) {
    if (static_cast<int64_t>(agents.size()) >= free_places) break;
    agents.push_back(w->agent);
  }
  return agents;
}

}  // namespace hb::controllers
