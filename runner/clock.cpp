#include "runner/clock.h"

#include <thread>

namespace hb::runner {

TimePoint SystemClock::now() const {
  return std::chrono::system_clock::now();
}

void SystemClock::sleep_for(Millis duration) {
  if (duration.count() > 0) std::this_thread::sleep_for(duration);
}

}  // namespace hb::runner
