// An Agent's interval and cron schedule, as any kubectl user can write them:
// a value or an error naming the field, and next slots that move forward.
#include "controllers/schedule/cron.h"
#include "controllers/schedule/duration.h"
#include "controllers/schedule/utc_time.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = hb::fuzz::as_text(data, size);
  const auto duration = hb::schedule::parse_duration_seconds(text, "heartbeat.interval");
  hb::fuzz::require(duration.value.has_value() == duration.error.empty());
  if (duration.value) hb::fuzz::require(*duration.value >= 0);
  const auto cron = hb::schedule::parse_cron(text);
  hb::fuzz::require(cron.value.has_value() == cron.error.empty());
  if (cron.value) {
    const hb::schedule::TimePoint t0{std::chrono::seconds(1767225600)};  // 2026-01-01
    if (auto next = hb::schedule::next_after(*cron.value, t0)) hb::fuzz::require(*next > t0);
  }
  return 0;
}
