// Fake clock for the schedule tests: time points from literal UTC strings.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "controllers/schedule/utc_time.h"

namespace hb::schedule::testing {

// "2024-02-29T12:00:00Z", optionally with milliseconds ("...:00.250Z").
inline TimePoint utc(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, ms = 0;
  char z = 0;
  const bool with_ms =
      std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d.%3d%c", &y, &mo, &d, &h, &mi, &s, &ms, &z) == 8;
  if (!with_ms) {
    ms = 0;
    if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d%c", &y, &mo, &d, &h, &mi, &s, &z) != 7) z = 0;
  }
  if (z != 'Z') ADD_FAILURE() << "bad test time literal: " << text;
  using namespace std::chrono;
  const sys_days day{year{y} / month{static_cast<unsigned>(mo)} / d};
  return TimePoint{day + hours{h} + minutes{mi} + seconds{s} + milliseconds{ms}};
}

}  // namespace hb::schedule::testing
