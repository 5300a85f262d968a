// An Agent's interval, cron schedule and time zone, as any kubectl user can
// write them: a value or an error naming the field, next slots that move
// forward, and in a zone with daylight saving, a next slot the latest-slot
// search finds again (across both of 2026's transitions in Berlin).
#include "controllers/schedule/cron.h"
#include "controllers/schedule/duration.h"
#include "controllers/schedule/time_zone.h"
#include "controllers/schedule/utc_time.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using hb::schedule::TimePoint;

void check_zoned(hb::schedule::CronSchedule cron) {
  static const date::time_zone* const berlin = *hb::schedule::find_time_zone("Europe/Berlin").value;
  cron.zone = berlin;
  // 2026-03-29T00:30Z and 2026-10-25T00:30Z: half an hour before each jump.
  for (int64_t at : {int64_t{1774744200}, int64_t{1792888200}}) {
    const TimePoint t0{std::chrono::seconds(at)};
    const auto next = hb::schedule::next_after(cron, t0);
    if (!next) continue;
    hb::fuzz::require(*next > t0);
    hb::fuzz::require(hb::schedule::latest_at_or_before(cron, *next) == next);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = hb::fuzz::as_text(data, size);
  const auto duration = hb::schedule::parse_duration_seconds(text, "heartbeat.interval");
  hb::fuzz::require(duration.value.has_value() == duration.error.empty());
  if (duration.value) hb::fuzz::require(*duration.value >= 0);
  const auto zone = hb::schedule::find_time_zone(text);
  hb::fuzz::require(zone.value.has_value() == zone.error.empty());
  const auto cron = hb::schedule::parse_cron(text, "schedule", text);  // the text is its H key too
  hb::fuzz::require(cron.value.has_value() == cron.error.empty());
  if (cron.value) {
    const TimePoint t0{std::chrono::seconds(1767225600)};  // 2026-01-01
    if (auto next = hb::schedule::next_after(*cron.value, t0)) hb::fuzz::require(*next > t0);
    check_zoned(*cron.value);
  }
  return 0;
}
