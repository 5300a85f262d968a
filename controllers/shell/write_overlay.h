// Read-your-writes: objects this process wrote recently, laid over the
// informer cache until the cache catches up (by resourceVersion), so a
// reconcile that runs before the watch event arrives neither repeats a
// create nor acts on a stale status. Entries expire after kOverlayTtl, in
// the order they were written (a queue, so a write costs O(log n) however
// many entries a fleet keeps: a scan of every entry per write was a
// quadratic cost at fleet size). An object is kept without
// metadata.managedFields, as the informers keep theirs.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "controllers/json_util.h"

namespace hb::controllers {

inline constexpr std::chrono::seconds kOverlayTtl{60};

class WriteOverlay {
 public:
  using Clock = std::chrono::steady_clock;
  using Now = std::function<Clock::time_point()>;
  explicit WriteOverlay(Now now = Clock::now) : now_(std::move(now)) {}
  void put(const std::string& kind, const Json& object);        // after create/update
  void erase(const std::string& kind, const std::string& key);  // after delete
  // The fresher of the cached object and our write.
  std::optional<Json> merge(const std::string& kind, const std::string& key,
                            std::optional<Json> cached);
  // Cached list plus objects we created that the cache does not hold yet;
  // `belongs` filters the overlay's extra objects.
  template <typename Belongs>
  std::vector<Json> merge_list(const std::string& kind, std::vector<Json> cached, Belongs belongs);
  size_t size() const;

 private:
  struct Entry {
    std::optional<Json> object;  // nullopt: deleted
    Clock::time_point at;
  };
  void expire_locked(Clock::time_point now);
  Now now_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;  // "kind|ns/name"
  // Every put and erase in time order: (when, its key); an entry written
  // again since is expired by its newer record.
  std::deque<std::pair<Clock::time_point, std::string>> written_;
};

template <typename Belongs>
std::vector<Json> WriteOverlay::merge_list(const std::string& kind, std::vector<Json> cached,
                                           Belongs belongs) {
  std::vector<Json> out;
  std::map<std::string, bool> seen;
  for (Json& object : cached) {
    const std::string key = object_key(object);
    seen[key] = true;
    if (auto merged = merge(kind, key, std::move(object))) out.push_back(std::move(*merged));
  }
  std::lock_guard lock(mutex_);
  const std::string prefix = kind + "|";
  for (auto it = entries_.lower_bound(prefix);
       it != entries_.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    const std::string key = it->first.substr(prefix.size());
    if (seen.count(key) || !it->second.object) continue;
    if (belongs(*it->second.object)) out.push_back(*it->second.object);
  }
  return out;
}

}  // namespace hb::controllers
