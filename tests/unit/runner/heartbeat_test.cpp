#include "runner/heartbeat.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/fakes/fake_clock.h"

namespace hb::runner {
namespace {

using fakes::FakeClock;
using namespace std::chrono_literals;

class CountingRenewer final : public LeaseRenewer {
 public:
  kube::Done renew(TimePoint now, std::chrono::seconds duration,
                   const api::UsageReport* usage) override {
    renewals.push_back(now);
    last_duration = duration;
    if (fail) {
      kube::Error error;
      error.kind = kube::ErrorKind::kServerError;
      error.message = "apiserver unavailable";
      return error;
    }
    if (usage != nullptr) usages.push_back(*usage);
    return kube::done();
  }
  std::vector<TimePoint> renewals;
  std::vector<api::UsageReport> usages;
  std::chrono::seconds last_duration{0};
  bool fail = false;
};

TEST(Heartbeat, BeatRecordsTimeAndCallsTheChain) {
  FakeClock clock;
  Heartbeat heartbeat(clock);
  std::vector<TimePoint> seen;
  heartbeat.add_callback([&](TimePoint t) { seen.push_back(t); });
  heartbeat.add_callback([&](TimePoint) {
    // Called outside the lock: reading the heartbeat here must not deadlock.
    EXPECT_TRUE(heartbeat.last_beat().has_value());
  });
  EXPECT_FALSE(heartbeat.last_beat().has_value());
  heartbeat.beat();
  clock.jump(5s);
  heartbeat.beat();
  EXPECT_EQ(heartbeat.beats(), 2);
  EXPECT_EQ(heartbeat.last_beat(), clock.now());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1] - seen[0], 5s);
}

TEST(LeaseExtender, RenewsAtMostOncePerInterval) {
  FakeClock clock;
  CountingRenewer renewer;
  LeaseExtender extender(renewer, 60s, 300s, nullptr);
  Heartbeat heartbeat(clock);
  heartbeat.add_callback(extender.callback());
  for (int second = 0; second <= 180; ++second) {  // a beat every second for 3 minutes
    heartbeat.beat();
    clock.jump(1s);
  }
  ASSERT_EQ(renewer.renewals.size(), 4u);  // t=0, 60, 120, 180
  EXPECT_EQ(renewer.renewals[1] - renewer.renewals[0], 60s);
  EXPECT_EQ(renewer.last_duration, 300s);
  EXPECT_EQ(extender.attempts(), 4);
}

TEST(LeaseExtender, ClockJumpsForwardAndBackward) {
  FakeClock clock;
  CountingRenewer renewer;
  LeaseExtender extender(renewer, 60s, 300s, nullptr);
  extender.on_beat(clock.now());
  clock.jump(10s);
  extender.on_beat(clock.now());
  EXPECT_EQ(renewer.renewals.size(), 1u);
  clock.jump(1h);  // forward jump: due at once
  extender.on_beat(clock.now());
  EXPECT_EQ(renewer.renewals.size(), 2u);
  clock.jump(-2h);  // backward jump: renew rather than wait an hour
  extender.on_beat(clock.now());
  EXPECT_EQ(renewer.renewals.size(), 3u);
  clock.jump(30s);
  extender.on_beat(clock.now());
  EXPECT_EQ(renewer.renewals.size(), 3u);
}

TEST(LeaseExtender, FailuresAreLoggedNeverThrown) {
  FakeClock clock;
  CountingRenewer renewer;
  renewer.fail = true;
  std::vector<std::string> warnings;
  LeaseExtender extender(renewer, 60s, 300s, [&](const std::string& w) { warnings.push_back(w); });
  Heartbeat heartbeat(clock);
  heartbeat.add_callback(extender.callback());
  EXPECT_NO_THROW(heartbeat.beat());
  clock.jump(30s);
  heartbeat.beat();  // still rate-limited after a failure
  clock.jump(30s);
  heartbeat.beat();
  EXPECT_EQ(extender.attempts(), 2);
  EXPECT_EQ(extender.failures(), 2);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("apiserver unavailable"), std::string::npos);
}

// Usage rides on the beats: a changed report renews at once, inside the
// interval, so a runner killed right after a model call is charged for it.
TEST(LeaseExtender, RenewsAtOnceWhenTheUsageChanged) {
  FakeClock clock;
  Heartbeat heartbeat(clock);
  CountingRenewer renewer;
  LeaseExtender extender(renewer, 60s, 300s, nullptr, [&] { return heartbeat.usage(); });
  heartbeat.add_callback(extender.callback());
  heartbeat.beat();
  ASSERT_EQ(renewer.renewals.size(), 1u);
  clock.jump(2s);
  heartbeat.beat();  // nothing new, inside the interval
  EXPECT_EQ(renewer.renewals.size(), 1u);
  heartbeat.report_usage({{1, 100, 20, 0, 1}, ""});
  ASSERT_EQ(renewer.renewals.size(), 2u);
  EXPECT_EQ(renewer.usages.back().input_tokens, 100);
  heartbeat.beat();  // the same usage again: not due
  EXPECT_EQ(renewer.renewals.size(), 2u);
  heartbeat.report_usage({{2, 250, 40, 1, 2}, ""});
  ASSERT_EQ(renewer.renewals.size(), 3u);
  EXPECT_EQ(renewer.usages.back().llm_calls, 2);
}

TEST(LeaseExtender, AFailedRenewalReportsTheUsageAgainOnTheNextBeat) {
  FakeClock clock;
  Heartbeat heartbeat(clock);
  CountingRenewer renewer;
  LeaseExtender extender(renewer, 60s, 300s, nullptr, [&] { return heartbeat.usage(); });
  heartbeat.add_callback(extender.callback());
  renewer.fail = true;
  heartbeat.report_usage({{1, 100, 20, 0, 1}, ""});
  EXPECT_TRUE(renewer.usages.empty());
  renewer.fail = false;
  clock.jump(1s);
  heartbeat.beat();
  ASSERT_EQ(renewer.usages.size(), 1u);
  EXPECT_EQ(renewer.usages.back().output_tokens, 20);
}

}  // namespace
}  // namespace hb::runner
