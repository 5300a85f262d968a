// Jittered exponential backoff, pure but for its random source.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

namespace hb::kube {

// The watch reconnect bounds: first retry after ~0.8 s, never more than 30 s.
inline constexpr std::chrono::milliseconds kWatchBackoffInitial{800};
inline constexpr std::chrono::milliseconds kWatchBackoffMax{30000};

class Backoff {
 public:
  Backoff(std::chrono::milliseconds initial = kWatchBackoffInitial,
          std::chrono::milliseconds max = kWatchBackoffMax, double jitter_fraction = 0.2,
          uint64_t seed = std::random_device{}())
      : initial_(initial), max_(max), jitter_(jitter_fraction), next_(initial), rng_(seed) {}

  // The delay before the next attempt; doubles each call up to max, jittered
  // by +-jitter_fraction so many clients do not reconnect in lockstep.
  std::chrono::milliseconds next() {
    auto base = next_;
    next_ = std::min(max_, next_ * 2);
    std::uniform_real_distribution<double> dist(1.0 - jitter_, 1.0 + jitter_);
    auto jittered = std::chrono::milliseconds(static_cast<int64_t>(base.count() * dist(rng_)));
    return std::clamp(jittered, std::chrono::milliseconds(1), max_);
  }
  void reset() { next_ = initial_; }

 private:
  std::chrono::milliseconds initial_, max_;
  double jitter_;
  std::chrono::milliseconds next_;
  std::mt19937_64 rng_;
};

}  // namespace hb::kube
