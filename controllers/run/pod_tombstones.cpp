#include "controllers/run/pod_tombstones.h"

#include <algorithm>

#include "api/hb_assert.h"

namespace hb::controllers {

bool tells_an_outcome(const Json& pod) {
  const Json* statuses = find_path(pod, "status/containerStatuses");
  if (statuses == nullptr || !statuses->is_array()) return false;
  return std::any_of(statuses->begin(), statuses->end(), [](const Json& s) {
    return find_path(s, "state/terminated") != nullptr ||
           string_at(s, "state/waiting/reason") == "CreateContainerConfigError";
  });
}

void PodTombstones::remember(const std::string& run_key, const Json& pod, Clock::time_point now) {
  expire(now);
  if (run_key.empty() || !tells_an_outcome(pod)) return;
  const std::string name = string_at(pod, "metadata/name");
  auto& pods = by_run_[run_key];
  if (!pods.count(name)) order_.push_back({run_key, name, now});
  pods[name] = pod;
  while (order_.size() > kPodTombstonesMax) drop_oldest();
  HB_ASSERT_MSG(by_run_.size() <= order_.size(), "every run kept has a Pod in the age order");
}

std::vector<Json> PodTombstones::of(const std::string& run_key,
                                    const std::vector<Json>& live) const {
  std::vector<Json> out;
  auto it = by_run_.find(run_key);
  if (it == by_run_.end()) return out;
  for (const auto& entry : it->second) {
    const std::string& name = entry.first;  // a plain reference: clang 14 cannot capture bindings
    const bool is_live = std::any_of(live.begin(), live.end(), [&](const Json& p) {
      return string_at(p, "metadata/name") == name;
    });
    if (!is_live) out.push_back(entry.second);
  }
  HB_ASSERT_MSG(out.size() <= it->second.size(), "only the run's own remembered Pods are told");
  return out;
}

void PodTombstones::forget(const std::string& run_key) {
  if (by_run_.erase(run_key) == 0) return;
  order_.erase(std::remove_if(order_.begin(), order_.end(),
                              [&](const Entry& e) { return e.run_key == run_key; }),
               order_.end());
  HB_ASSERT_MSG(by_run_.size() <= order_.size(), "every run kept has a Pod in the age order");
}

void PodTombstones::expire(Clock::time_point now) {
  while (!order_.empty() && now - order_.front().at > kPodTombstoneTtl) drop_oldest();
  HB_ASSERT_MSG(order_.empty() == by_run_.empty(), "Pods are remembered exactly while one is kept");
}

void PodTombstones::drop_oldest() {
  HB_ASSERT(!order_.empty());
  const Entry& oldest = order_.front();
  auto it = by_run_.find(oldest.run_key);
  if (it != by_run_.end()) {
    it->second.erase(oldest.pod_name);
    if (it->second.empty()) by_run_.erase(it);
  }
  order_.pop_front();
}

}  // namespace hb::controllers
