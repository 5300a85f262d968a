#include "controllers/shell/write_overlay.h"

namespace hb::controllers {

void WriteOverlay::expire_locked(Clock::time_point now) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    it = now - it->second.at > kOverlayTtl ? entries_.erase(it) : std::next(it);
  }
}

void WriteOverlay::put(const std::string& kind, const Json& object) {
  std::lock_guard lock(mutex_);
  const auto now = now_();
  expire_locked(now);
  entries_[kind + "|" + object_key(object)] = Entry{object, now};
}

void WriteOverlay::erase(const std::string& kind, const std::string& key) {
  std::lock_guard lock(mutex_);
  entries_[kind + "|" + key] = Entry{std::nullopt, now_()};
}

std::optional<Json> WriteOverlay::merge(const std::string& kind, const std::string& key,
                                        std::optional<Json> cached) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(kind + "|" + key);
  if (it == entries_.end()) return cached;
  if (now_() - it->second.at > kOverlayTtl) {
    entries_.erase(it);
    return cached;
  }
  if (!it->second.object) {
    return std::nullopt;  // deleted by us: the cache still showing it is stale
  }
  if (!cached) return it->second.object;
  if (string_at(*cached, "metadata/uid") != string_at(*it->second.object, "metadata/uid")) {
    entries_.erase(it);  // a different object of the same name
    return cached;
  }
  if (resource_version_number(*cached) >= resource_version_number(*it->second.object)) {
    entries_.erase(it);  // the cache caught up
    return cached;
  }
  return it->second.object;
}

size_t WriteOverlay::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace hb::controllers
