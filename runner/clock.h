// Time is injected so the loop, the retry policy and the lease extender can be
// tested with a clock that tests skew, jump and advance by hand.
#pragma once

#include <chrono>

namespace hb::runner {

using TimePoint = std::chrono::system_clock::time_point;
using Millis = std::chrono::milliseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  virtual void sleep_for(Millis duration) = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint now() const override;
  void sleep_for(Millis duration) override;
};

}  // namespace hb::runner
