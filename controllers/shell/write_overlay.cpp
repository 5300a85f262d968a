#include "controllers/shell/write_overlay.h"

namespace hb::controllers {

void WriteOverlay::expire_locked(Clock::time_point now) {
  while (!written_.empty() && now - written_.front().first > kOverlayTtl) {
    auto it = entries_.find(written_.front().second);
    // Not when written again since (a newer record expires it).
    if (it != entries_.end() && now - it->second.at > kOverlayTtl) forget_locked(it);
    written_.pop_front();
  }
}

void WriteOverlay::forget_locked(std::map<std::string, Entry>::iterator it) {
  if (auto members = groups_.find(it->second.group); members != groups_.end()) {
    members->second.erase(it->first);
    if (members->second.empty()) groups_.erase(members);
  }
  entries_.erase(it);
}

void WriteOverlay::put(const std::string& kind, const Json& object) {
  Json kept = object;
  // Server-side-apply bookkeeping: large, and no reader of the overlay reads it.
  if (auto meta = kept.find("metadata"); meta != kept.end() && meta->is_object()) {
    meta->erase("managedFields");
  }
  std::lock_guard lock(mutex_);
  const auto now = now_();
  expire_locked(now);
  std::string key = kind + "|" + object_key(kept);
  std::string group = kind + "|" + (group_ ? group_(kind, kept) : std::string());
  if (auto was = entries_.find(key); was != entries_.end()) forget_locked(was);
  groups_[group].insert(key);
  entries_[key] = Entry{std::move(kept), now, std::move(group)};
  written_.emplace_back(now, std::move(key));
}

void WriteOverlay::erase(const std::string& kind, const std::string& key) {
  std::lock_guard lock(mutex_);
  const auto now = now_();
  expire_locked(now);
  if (auto was = entries_.find(kind + "|" + key); was != entries_.end()) forget_locked(was);
  entries_[kind + "|" + key] = Entry{std::nullopt, now, {}};
  written_.emplace_back(now, kind + "|" + key);
}

std::optional<Json> WriteOverlay::merge(const std::string& kind, const std::string& key,
                                        std::optional<Json> cached) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(kind + "|" + key);
  if (it == entries_.end()) return cached;
  if (now_() - it->second.at > kOverlayTtl) {
    forget_locked(it);
    return cached;
  }
  if (!it->second.object) {
    return std::nullopt;  // deleted by us: the cache still showing it is stale
  }
  if (!cached) return it->second.object;
  if (string_at(*cached, "metadata/uid") != string_at(*it->second.object, "metadata/uid")) {
    forget_locked(it);  // a different object of the same name
    return cached;
  }
  if (resource_version_number(*cached) >= resource_version_number(*it->second.object)) {
    forget_locked(it);  // the cache caught up
    return cached;
  }
  return it->second.object;
}

size_t WriteOverlay::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace hb::controllers
