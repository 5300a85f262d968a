#include "controllers/schedule/cron_zoned.h"

#include <date/tz.h>

#include <algorithm>

#include "api/hb_assert.h"

namespace hb::schedule {
namespace {

using std::chrono::floor;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

// A span of constant UTC offset: [begin, end), local = instant + offset.
struct Span {
  TimePoint begin;
  TimePoint end;
  seconds offset;
  seconds previous_offset;  // of the span before (its own at the far bound)
  // The earliest local time of the span that is not a repeat: when the
  // clocks went back at `begin`, local times up to the old offset already
  // happened in the span before.
  TimePoint first_fresh_local;
};

// The tz library marks "no transition before/after" with extreme times a
// nanosecond TimePoint cannot hold; spans are cut to these bounds, far
// beyond any slot kCronSearchYearsMax years from a Kubernetes timestamp.
constexpr date::sys_seconds kSpanBoundEarliest{date::sys_days{date::year{1800} / 1 / 1}};
constexpr date::sys_seconds kSpanBoundLatest{date::sys_days{date::year{2200} / 1 / 1}};

Span span_of(const date::time_zone& zone, date::sys_seconds at) {
  const date::sys_info info = zone.get_info(at);
  const date::sys_seconds begin = std::max(info.begin, kSpanBoundEarliest);
  const date::sys_seconds end = std::min(info.end, kSpanBoundLatest);
  HB_ASSERT_MSG(begin < end, "a span of constant offset is not empty");
  const seconds before =
      begin > kSpanBoundEarliest ? zone.get_info(begin - seconds{1}).offset : info.offset;
  return {begin, end, info.offset, before, begin + std::max(info.offset, before)};
}

// The offset the span after `span` has (its own at the far bound).
seconds next_offset(const date::time_zone& zone, const Span& span) {
  HB_ASSERT(span.begin < span.end);
  return span.end < kSpanBoundLatest ? zone.get_info(floor<seconds>(span.end)).offset : span.offset;
}

}  // namespace

std::optional<TimePoint> next_after_zoned(const CronSchedule& cron, TimePoint t) {
  HB_ASSERT_MSG(cron.zone != nullptr, "a UTC schedule takes the UTC search");
  const date::time_zone& zone = *cron.zone;
  Span span = span_of(zone, floor<seconds>(t));
  TimePoint after = t;  // the answer is strictly after this instant
  for (int i = 0; i < kZoneSpansSearchedMax; ++i) {
    // Local minutes strictly after `after`, and no repeat of an earlier span.
    const TimePoint from_local = std::max(after + span.offset, span.first_fresh_local - minutes{1});
    const std::optional<TimePoint> local = next_after_in_utc(cron, from_local);
    if (!local) return std::nullopt;
    if (*local - span.offset < span.end) return *local - span.offset;
    // Past this span. A match among the local times the clocks skip runs
    // when they jump, once.
    const seconds after_jump = next_offset(zone, span);
    if (after_jump > span.offset && *local < span.end + after_jump) return span.end;
    if (span.end >= kSpanBoundLatest) return std::nullopt;
    after = span.end - nanoseconds{1};
    span = span_of(zone, floor<seconds>(span.end));
  }
  return std::nullopt;
}

std::optional<TimePoint> latest_at_or_before_zoned(const CronSchedule& cron, TimePoint t) {
  HB_ASSERT_MSG(cron.zone != nullptr, "a UTC schedule takes the UTC search");
  const date::time_zone& zone = *cron.zone;
  Span span = span_of(zone, floor<seconds>(t));
  TimePoint until = t;  // the answer is at or before this instant
  for (int i = 0; i < kZoneSpansSearchedMax; ++i) {
    const std::optional<TimePoint> local = latest_at_or_before_in_utc(cron, until + span.offset);
    if (local && *local >= span.first_fresh_local) return *local - span.offset;
    // Nothing fresh in this span. Local times skipped when the clocks
    // jumped forward at its start ran at that jump.
    const seconds before = span.previous_offset;
    if (before < span.offset) {
      const std::optional<TimePoint> skipped =
          latest_at_or_before_in_utc(cron, span.begin + span.offset - nanoseconds{1});
      if (skipped && *skipped >= span.begin + before) return span.begin;
    }
    if (!local || span.begin <= kSpanBoundEarliest) return std::nullopt;
    until = span.begin - nanoseconds{1};
    span = span_of(zone, floor<seconds>(until));
  }
  return std::nullopt;
}

}  // namespace hb::schedule
