// Token buckets by key (an agent, a source IP, a namespace): `per_second`
// tokens a second, at most `burst` saved. Pure: time is passed in. Memory is
// bounded: a bucket full again is the same as no bucket and is dropped, and
// past `entries_max` keys the least recently used is forgotten (which can
// only forgive, never refuse, a caller).
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>

#include "operator/lru_map.h"

namespace hb::operator_ {

struct BucketRate {
  double per_second = 1;
  double burst = 1;
};

class KeyedBuckets {
 public:
  using Clock = std::chrono::steady_clock;

  KeyedBuckets(BucketRate rate, std::size_t entries_max);

  // Takes a token of `key`'s bucket: nullopt when one was free, else how
  // long until one is (whole seconds, at least 1: a Retry-After).
  std::optional<std::chrono::seconds> take(const std::string& key, Clock::time_point now);
  std::size_t size() const;

 private:
  struct Entry {
    double tokens = 0;
    Clock::time_point at;
  };
  double tokens_at(const Entry& e, Clock::time_point now) const;
  void drop_full(Clock::time_point now);

  const BucketRate rate_;
  mutable std::mutex mutex_;  // guards the members below; no I/O under it
  LruMap<std::string, Entry> entries_;
};

}  // namespace hb::operator_
