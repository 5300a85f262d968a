#include "controllers/shell/lease_sightings.h"

#include <algorithm>

namespace hb::controllers {

TimePoint LeaseSightings::seen_at(const std::string& key, const std::string& resource_version,
                                  TimePoint now) {
  const auto steady_now = steady_();
  std::lock_guard lock(mutex_);
  std::optional<LeaseSighting>& lease = agents_[key].lease;
  if (!lease || lease->resource_version != resource_version) {
    lease = LeaseSighting{resource_version, steady_now};
  }
  const auto ago = steady_now - lease->at;
  return now - std::chrono::duration_cast<TimePoint::duration>(ago);
}

std::vector<TimePoint> LeaseSightings::runs_seen_at(const std::string& key,
                                                    const std::vector<std::string>& runs,
                                                    TimePoint now) {
  const auto steady_now = steady_();
  std::lock_guard lock(mutex_);
  auto it = agents_.try_emplace(key).first;
  const std::vector<RunSighting>& known = it->second.runs;
  std::vector<RunSighting> kept;
  kept.reserve(runs.size());
  std::vector<TimePoint> out;
  out.reserve(runs.size());
  for (const std::string& run : runs) {
    const auto seen = std::find_if(known.begin(), known.end(),
                                   [&run](const RunSighting& s) { return s.run == run; });
    const SteadyTime at = seen != known.end() ? seen->at : steady_now;
    kept.push_back({run, at});
    out.push_back(now - std::chrono::duration_cast<TimePoint::duration>(steady_now - at));
  }
  it->second.runs = std::move(kept);
  erase_if_empty(it);
  return out;
}

void LeaseSightings::forget_lease(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = agents_.find(key);
  if (it == agents_.end()) return;
  it->second.lease.reset();
  erase_if_empty(it);
}

void LeaseSightings::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  agents_.erase(key);
}

std::size_t LeaseSightings::agents() const {
  std::lock_guard lock(mutex_);
  return agents_.size();
}

void LeaseSightings::erase_if_empty(Agents::iterator it) {
  if (!it->second.lease && it->second.runs.empty()) agents_.erase(it);
}

}  // namespace hb::controllers
