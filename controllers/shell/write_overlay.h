// Read-your-writes: objects this process wrote recently, laid over the
// informer cache until the cache catches up (by resourceVersion), so a
// reconcile that runs before the watch event arrives neither repeats a
// create nor acts on a stale status. Entries expire after kOverlayTtl, in
// the order they were written: a queue, so a write costs O(log n) however
// many entries a fleet keeps. An object is kept without
// metadata.managedFields and as JSON text, as the informers keep theirs, and
// parsed only while it is fresher than the cache: with every agent's first
// status held a minute, entries kept as trees would be most of the
// operator's heap at fleet size (docs/benchmarks.md, capacity). Entries
// are also kept by group (a run's agent): a list reads its group's entries
// only, not every run the fleet wrote in the last minute.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "controllers/model/json_util.h"

namespace hb::controllers {

inline constexpr std::chrono::seconds kOverlayTtl{60};

class WriteOverlay {
 public:
  using Clock = std::chrono::steady_clock;
  using Now = std::function<Clock::time_point()>;
  // The group an object is listed in (merge_list); "" when none.
  using Group = std::function<std::string(const std::string& kind, const Json& object)>;
  explicit WriteOverlay(Now now = Clock::now, Group group = nullptr)
      : now_(std::move(now)), group_(std::move(group)) {}
  void put(const std::string& kind, const Json& object);        // after create/update
  void erase(const std::string& kind, const std::string& key);  // after delete
  // The fresher of the cached object and our write.
  std::optional<Json> merge(const std::string& kind, const std::string& key,
                            std::optional<Json> cached);
  // Cached list plus objects of `group` we created that the cache does not
  // hold yet; `belongs` filters the overlay's extra objects.
  template <typename Belongs>
  std::vector<Json> merge_list(const std::string& kind, const std::string& group,
                               std::vector<Json> cached, Belongs belongs);
  size_t size() const;

 private:
  struct Entry {
    std::optional<std::string> text;  // the object as JSON text; nullopt: deleted
    std::string uid;
    int64_t resource_version = 0;  // resource_version_number of the object
    Clock::time_point at;
    std::string group;  // "kind|group"
  };
  void expire_locked(Clock::time_point now);
  // Drops an entry and its place in its group.
  void forget_locked(std::map<std::string, Entry>::iterator it);
  Now now_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;  // "kind|ns/name"
  // Every put and erase in time order: (when, its key); an entry written
  // again since is expired by its newer record.
  std::deque<std::pair<Clock::time_point, std::string>> written_;
  Group group_;
  std::map<std::string, std::set<std::string>> groups_;  // "kind|group" -> entry keys
};

template <typename Belongs>
std::vector<Json> WriteOverlay::merge_list(const std::string& kind, const std::string& group,
                                           std::vector<Json> cached, Belongs belongs) {
  std::vector<Json> out;
  std::set<std::string> seen;
  for (Json& object : cached) {
    std::string key = object_key(object);
    if (auto merged = merge(kind, key, std::move(object))) out.push_back(std::move(*merged));
    seen.insert(kind + "|" + std::move(key));
  }
  std::lock_guard lock(mutex_);
  auto members = groups_.find(kind + "|" + group);
  if (members == groups_.end()) return out;
  for (const std::string& key : members->second) {
    auto it = entries_.find(key);
    if (it == entries_.end() || seen.count(key) || !it->second.text) continue;
    Json object = Json::parse(*it->second.text);
    if (belongs(object)) out.push_back(std::move(object));
  }
  return out;
}

}  // namespace hb::controllers
