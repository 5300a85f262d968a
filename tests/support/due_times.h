// Keys by due time, one entry a key: the fake kubelet's worker queue. Each
// step of a Pod schedules the Pod's next, so a second entry for the same Pod
// would start a second chain of steps (a beating Pod beating once for every
// event it ever had). A schedule earlier than the key's entry replaces it; a
// later one is dropped, since the earlier step will ask again.
#pragma once

#include <cassert>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace hb::testing {

template <typename Time>
class DueTimes {
 public:
  void schedule(const std::string& key, Time at) {
    const auto [entry, added] = by_key_.try_emplace(key, at);
    if (!added) {
      if (entry->second <= at) return;
      by_time_.erase({entry->second, key});
      entry->second = at;
    }
    by_time_.emplace(at, key);
  }
  bool empty() const { return by_time_.empty(); }
  Time first_at() const {
    assert(!empty());
    return by_time_.begin()->first;
  }
  std::string pop_first() {
    assert(!empty());
    std::string key = by_time_.begin()->second;
    by_time_.erase(by_time_.begin());
    by_key_.erase(key);
    return key;
  }
  std::size_t size() const { return by_time_.size(); }

 private:
  std::set<std::pair<Time, std::string>> by_time_;
  std::map<std::string, Time> by_key_;
};

}  // namespace hb::testing
