#include "controllers/shell/write_overlay.h"

namespace hb::controllers {

namespace {

// Server-side-apply bookkeeping: large, and no reader of the overlay reads it.
std::string text_without_managed_fields(const Json& object) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object() || !meta->contains("managedFields")) {
    return object.dump();
  }
  Json kept = object;
  kept["metadata"].erase("managedFields");
  return kept.dump();
}

}  // namespace

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
  std::string key = kind + "|" + object_key(object);
  Entry entry{text_without_managed_fields(object),
              string_at(object, "metadata/uid"),
              resource_version_number(object),
              {},
              kind + "|" + (group_ ? group_(kind, object) : std::string())};
  std::lock_guard lock(mutex_);
  entry.at = now_();
  expire_locked(entry.at);
  if (auto was = entries_.find(key); was != entries_.end()) forget_locked(was);
  groups_[entry.group].insert(key);
  written_.emplace_back(entry.at, key);
  entries_[std::move(key)] = std::move(entry);
}

void WriteOverlay::erase(const std::string& kind, const std::string& key) {
  std::lock_guard lock(mutex_);
  const auto now = now_();
  expire_locked(now);
  if (auto was = entries_.find(kind + "|" + key); was != entries_.end()) forget_locked(was);
  entries_[kind + "|" + key] = Entry{std::nullopt, {}, 0, now, {}};
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
  const Entry& entry = it->second;
  if (!entry.text) {
    return std::nullopt;  // deleted by us: the cache still showing it is stale
  }
  if (!cached) return Json::parse(*entry.text);
  if (string_view_at(*cached, "metadata/uid") != entry.uid) {
    forget_locked(it);  // a different object of the same name
    return cached;
  }
  if (resource_version_number(*cached) >= entry.resource_version) {
    forget_locked(it);  // the cache caught up
    return cached;
  }
  return Json::parse(*entry.text);
}

size_t WriteOverlay::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace hb::controllers
