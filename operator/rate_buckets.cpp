#include "operator/rate_buckets.h"

#include <algorithm>
#include <cmath>

#include "api/hb_assert.h"

namespace hb::operator_ {

KeyedBuckets::KeyedBuckets(BucketRate rate, std::size_t entries_max)
    : rate_(rate), entries_(std::max<std::size_t>(entries_max, 1)) {
  HB_ASSERT(rate.per_second > 0 && rate.burst >= 1);
}

double KeyedBuckets::tokens_at(const Entry& e, Clock::time_point now) const {
  if (now <= e.at) return e.tokens;
  const double elapsed = std::chrono::duration<double>(now - e.at).count();
  return std::min(rate_.burst, e.tokens + elapsed * rate_.per_second);
}

// The least recently used first: once one is not full, the newer ones were
// used later and are not full either (most of the time), so stop there.
void KeyedBuckets::drop_full(Clock::time_point now) {
  while (!entries_.empty() && tokens_at(entries_.least_recent(), now) >= rate_.burst) {
    entries_.pop_least_recent();
  }
}

std::optional<std::chrono::seconds> KeyedBuckets::take(const std::string& key,
                                                       Clock::time_point now) {
  std::lock_guard lock(mutex_);
  drop_full(now);
  Entry& e = entries_.touch(key, Entry{rate_.burst, now});
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
