// The firings of a cron schedule on the fake clock, as RFC 3339 strings.
#pragma once

#include <string>
#include <vector>

#include "controllers/schedule/cron.h"
#include "tests/unit/schedule/test_time.h"

namespace hb::schedule::testing {

// The next `n` firings after `from`.
inline std::vector<std::string> firings(const CronSchedule& c, const std::string& from, int n) {
  std::vector<std::string> out;
  TimePoint t = utc(from);
  for (int i = 0; i < n; ++i) {
    const auto next = next_after(c, t);
    if (!next) break;
    out.push_back(format_rfc3339(*next));
    t = *next;
  }
  return out;
}

}  // namespace hb::schedule::testing
