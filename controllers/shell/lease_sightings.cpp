#include "controllers/shell/lease_sightings.h"

namespace hb::controllers {

TimePoint LeaseSightings::seen_at(const std::string& key, const std::string& resource_version,
                                  TimePoint now) {
  const auto steady_now = steady_();
  std::lock_guard lock(mutex_);
  auto [it, inserted] = seen_.try_emplace(key, Sighting{resource_version, steady_now});
  if (!inserted && it->second.resource_version != resource_version) {
    it->second = {resource_version, steady_now};
  }
  const auto ago = steady_now - it->second.at;
  return now - std::chrono::duration_cast<TimePoint::duration>(ago);
}

std::vector<TimePoint> LeaseSightings::runs_seen_at(const std::string& key,
                                                    const std::vector<std::string>& runs,
                                                    TimePoint now) {
  const auto steady_now = steady_();
  std::lock_guard lock(mutex_);
  std::map<std::string, std::chrono::steady_clock::time_point> kept;
  std::vector<TimePoint> out;
  const auto& known = runs_[key];
  for (const std::string& run : runs) {
    auto it = known.find(run);
    const auto at = it != known.end() ? it->second : steady_now;
    kept[run] = at;
    out.push_back(now - std::chrono::duration_cast<TimePoint::duration>(steady_now - at));
  }
  if (kept.empty()) {
    runs_.erase(key);
  } else {
    runs_[key] = std::move(kept);
  }
  return out;
}

void LeaseSightings::forget_lease(const std::string& key) {
  std::lock_guard lock(mutex_);
  seen_.erase(key);
}

void LeaseSightings::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  seen_.erase(key);
  runs_.erase(key);
}

}  // namespace hb::controllers
