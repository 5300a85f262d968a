// A clock tests move by hand: sleep_for advances it (and records the sleep),
// skew() and jump() move it without a sleep.
#pragma once

#include <mutex>
#include <vector>

#include "api/rfc3339.h"
#include "runner/clock.h"

namespace hb::fakes {

class FakeClock final : public runner::Clock {
 public:
  explicit FakeClock(runner::TimePoint start = *api::parse_rfc3339("2024-05-01T12:00:00Z"))
      : now_(start) {}

  runner::TimePoint now() const override {
    std::lock_guard lock(mutex_);
    return now_;
  }
  void sleep_for(runner::Millis duration) override {
    std::lock_guard lock(mutex_);
    sleeps_.push_back(duration);
    if (duration.count() > 0) now_ += duration;
  }
  // Moves time forward or backward (negative) at once.
  void jump(std::chrono::milliseconds delta) {
    std::lock_guard lock(mutex_);
    now_ += delta;
  }
  void set(runner::TimePoint time) {
    std::lock_guard lock(mutex_);
    now_ = time;
  }
  std::vector<runner::Millis> sleeps() const {
    std::lock_guard lock(mutex_);
    return sleeps_;
  }

 private:
  mutable std::mutex mutex_;
  runner::TimePoint now_;
  std::vector<runner::Millis> sleeps_;
};

}  // namespace hb::fakes
