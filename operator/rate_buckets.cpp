#include "operator/rate_buckets.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace hb::operator_ {

KeyedBuckets::KeyedBuckets(BucketRate rate, std::size_t entries_max)
    : rate_(rate), entries_max_(std::max<std::size_t>(entries_max, 1)) {
  assert(rate.per_second > 0 && rate.burst >= 1);
}

double KeyedBuckets::tokens_at(const Entry& e, Clock::time_point now) const {
  if (now <= e.at) return e.tokens;
  const double elapsed = std::chrono::duration<double>(now - e.at).count();
  return std::min(rate_.burst, e.tokens + elapsed * rate_.per_second);
}

// The least recently used first: once one is not full, the newer ones were
// used later and are not full either (most of the time), so stop there.
void KeyedBuckets::drop_full(Clock::time_point now) {
  while (!recent_.empty()) {
    auto it = entries_.find(recent_.back());
    assert(it != entries_.end());
    if (tokens_at(it->second, now) < rate_.burst) return;
    entries_.erase(it);
    recent_.pop_back();
  }
}

std::optional<std::chrono::seconds> KeyedBuckets::take(const std::string& key,
                                                       Clock::time_point now) {
  std::lock_guard lock(mutex_);
  drop_full(now);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (entries_.size() >= entries_max_) {
      entries_.erase(recent_.back());
      recent_.pop_back();
    }
    recent_.push_front(key);
    it = entries_.emplace(key, Entry{rate_.burst, now, recent_.begin()}).first;
  } else {
    recent_.splice(recent_.begin(), recent_, it->second.recent);
  }
  Entry& e = it->second;
  e.tokens = tokens_at(e, now);
  e.at = std::max(e.at, now);
  if (e.tokens >= 1.0) {
    e.tokens -= 1.0;
    return std::nullopt;
  }
  const double wait = (1.0 - e.tokens) / rate_.per_second;
  return std::chrono::seconds(std::max<long long>(1, static_cast<long long>(std::ceil(wait))));
}

std::size_t KeyedBuckets::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace hb::operator_
