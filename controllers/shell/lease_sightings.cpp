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

void LeaseSightings::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  seen_.erase(key);
}

}  // namespace hb::controllers
