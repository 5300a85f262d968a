// The operator-wide concurrency cap: the pure admission (who may start, in
// which order), the shell's gate over the fleet (reservations, the line,
// wakeups, what lapses), and the Agent decision holding a run back.
#include "controllers/concurrency.h"

#include <gtest/gtest.h>

#include "controllers/shell/concurrency_gate.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace std::chrono_literals;
using namespace testing;

const TimePoint kT0 = at("2024-05-01T12:00:00Z");

StartCandidate candidate(const std::string& agent, TimePoint order) {
  return {"ns/" + agent, "ns/" + agent + "-run", order};
}

TEST(ConcurrencyAdmission, NoCapAdmitsEverything) {
  const StartCandidate c = candidate("a", kT0);
  EXPECT_TRUE(admit_start(0, 1000, {}, c).admitted);
}

TEST(ConcurrencyAdmission, AFullFleetHoldsTheRunAndSaysWhy) {
  const Admission a = admit_start(2, 2, {}, candidate("a", kT0));
  EXPECT_FALSE(a.admitted);
  EXPECT_NE(a.message.find("2 of 2 concurrent runs"), std::string::npos) << a.message;
  EXPECT_NE(a.message.find("--max-concurrent-runs"), std::string::npos) << a.message;
}

TEST(ConcurrencyAdmission, EarlierRequestsTakeTheFreePlacesFirst) {
  const StartCandidate early = candidate("early", kT0);
  const StartCandidate late = candidate("late", kT0 + 1min);
  const std::vector<const StartCandidate*> line = {&early, &late};
  // One place free: the earlier request has it, the later waits behind it.
  EXPECT_TRUE(admit_start(2, 1, line, early).admitted);
  const Admission behind = admit_start(2, 1, line, late);
  EXPECT_FALSE(behind.admitted);
  EXPECT_EQ(behind.ahead, 1);
  // Two places free: both.
  EXPECT_TRUE(admit_start(3, 1, line, late).admitted);
  // A later request never passes an earlier one, whoever is reconciled first.
  const StartCandidate newcomer = candidate("newcomer", kT0 + 2min);
  EXPECT_FALSE(admit_start(2, 1, line, newcomer).admitted);
}

TEST(ConcurrencyAdmission, EqualTimesAreOrderedByAgentKey) {
  const StartCandidate a = candidate("a", kT0);
  const StartCandidate b = candidate("b", kT0);
  EXPECT_TRUE(starts_before(a, b));
  EXPECT_FALSE(starts_before(b, a));
  EXPECT_FALSE(starts_before(a, a));
}

TEST(ConcurrencyAdmission, TheFirstInLineAreWokenForTheFreePlaces) {
  const StartCandidate a = candidate("a", kT0), b = candidate("b", kT0 + 1s),
                       c = candidate("c", kT0 + 2s);
  const std::vector<const StartCandidate*> line = {&a, &b, &c};
  EXPECT_EQ(agents_to_wake(3, 1, line), (std::vector<std::string>{"ns/a", "ns/b"}));
  EXPECT_TRUE(agents_to_wake(3, 3, line).empty());
  EXPECT_TRUE(agents_to_wake(3, 5, line).empty()) << "over the cap (a lowered flag): nobody";
}

// The gate over a fleet, on a fake clock; wakeups are recorded.
struct Fleet {
  std::chrono::steady_clock::time_point now{};
  std::vector<std::string> woken;
  ConcurrencyGate gate{2, [this] { return now; },
                       [this](const std::string& agent) { woken.push_back(agent); }};

  void phase(const std::string& run_key, const char* phase, bool has_job = false) {
    const Json run = {{"status", {{"phase", phase}}}};
    gate.observe_run(run_key, &run, has_job);
  }
};

TEST(ConcurrencyGate, TheThirdRunWaitsAndIsWokenWhenAPlaceFrees) {
  Fleet f;
  EXPECT_TRUE(f.gate.admit(candidate("a", kT0)).admitted);
  EXPECT_TRUE(f.gate.admit(candidate("b", kT0)).admitted);
  EXPECT_FALSE(f.gate.admit(candidate("c", kT0)).admitted);
  EXPECT_EQ(f.gate.in_use(), 2);
  EXPECT_EQ(f.gate.waiting(), 1u);
  // The informer sees a's run start (its reservation becomes a running run), then end.
  f.phase("ns/a-run", "Running");
  EXPECT_EQ(f.gate.in_use(), 2);
  EXPECT_TRUE(f.woken.empty());
  f.phase("ns/a-run", "Succeeded");
  EXPECT_EQ(f.woken, std::vector<std::string>{"ns/c"});
  EXPECT_TRUE(f.gate.admit(candidate("c", kT0)).admitted);
  EXPECT_EQ(f.gate.waiting(), 0u);
}

TEST(ConcurrencyGate, AskingAgainForAnAdmittedRunAdmitsItAgain) {
  Fleet f;
  EXPECT_TRUE(f.gate.admit(candidate("a", kT0)).admitted);
  EXPECT_TRUE(f.gate.admit(candidate("b", kT0)).admitted);
  // The pass that reserved decides again (after reading the prompt), or
  // was retried after a failed write: the same place, not a second one.
  EXPECT_TRUE(f.gate.admit(candidate("a", kT0)).admitted);
  EXPECT_EQ(f.gate.in_use(), 2);
}

TEST(ConcurrencyGate, AQueuedUpdateKeepsTheReservationADeletionFreesIt) {
  Fleet f;
  f.gate.admit(candidate("a", kT0));
  f.phase("ns/a-run", "Queued");  // e.g. its message changed before the Job was seen
  EXPECT_EQ(f.gate.in_use(), 1);
  f.gate.observe_run("ns/a-run", nullptr, false);
  EXPECT_EQ(f.gate.in_use(), 0);
}

TEST(ConcurrencyGate, RunsAlreadyRunningAtStartupTakePlaces) {
  Fleet f;  // a restarted operator: the informer's first list
  f.phase("ns/x-run", "Running");
  f.phase("ns/y-run", "Running");
  f.phase("ns/z-run", "Succeeded");
  EXPECT_EQ(f.gate.in_use(), 2);
  EXPECT_FALSE(f.gate.admit(candidate("a", kT0)).admitted) << "the cap holds across a restart";
}

TEST(ConcurrencyGate, AStartedRunCountsFromItsJobBeforeItsRunningStatus) {
  Fleet f;  // a new leader: the old one made the Job, the Running status is a pass away
  f.phase("ns/x-run", "Queued", /*has_job=*/true);
  f.phase("ns/y-run", "", /*has_job=*/true);
  EXPECT_EQ(f.gate.in_use(), 2);
  EXPECT_FALSE(f.gate.admit(candidate("a", kT0)).admitted);
  // A finished run's Job stays for its history: it holds no place.
  f.phase("ns/x-run", "Succeeded", /*has_job=*/true);
  EXPECT_EQ(f.gate.in_use(), 1);
  EXPECT_EQ(f.woken, std::vector<std::string>{"ns/a"});
}

TEST(ConcurrencyGate, AJobSeenBeforeItsRunStillHoldsItsPlace) {
  Fleet f;
  f.gate.admit(candidate("a", kT0));
  // The Job's watch event comes before the run's: the place stays taken.
  f.gate.observe_run("ns/a-run", nullptr, /*has_job=*/true);
  f.gate.admit(candidate("b", kT0));
  EXPECT_FALSE(f.gate.admit(candidate("c", kT0)).admitted);
  // Run and Job both gone: free.
  f.gate.observe_run("ns/a-run", nullptr, /*has_job=*/false);
  EXPECT_EQ(f.gate.in_use(), 1);
}

TEST(ConcurrencyGate, AnOrphanJobHoldsAPlaceOnlyForAWhile) {
  Fleet f;  // a Job labelled as ours whose run never shows up
  f.gate.observe_run("ns/ghost-run", nullptr, /*has_job=*/true);
  f.gate.admit(candidate("a", kT0));
  EXPECT_FALSE(f.gate.admit(candidate("b", kT0)).admitted) << "it counts while its run may come";
  f.now += kReservationTtl;
  EXPECT_TRUE(f.gate.admit(candidate("b", kT0)).admitted) << "but not past the reservation's life";
}

TEST(ConcurrencyGate, AnUnusedReservationIsGivenBackOrLapses) {
  Fleet f;
  f.gate.admit(candidate("a", kT0));
  f.gate.admit(candidate("b", kT0));
  f.gate.admit(candidate("c", kT0 + 1s));
  f.gate.release("ns/a-run");  // the pass did not start it after all
  EXPECT_EQ(f.woken, std::vector<std::string>{"ns/c"});
  EXPECT_TRUE(f.gate.admit(candidate("c", kT0 + 1s)).admitted);
  f.phase("ns/c-run", "Queued", /*has_job=*/true);  // c started
  // b's pass died and never came back: its place lapses.
  f.now += kReservationTtl;
  EXPECT_TRUE(f.gate.admit(candidate("d", kT0 + 2s)).admitted);
  EXPECT_EQ(f.gate.in_use(), 2);
}

TEST(ConcurrencyGate, AnAgentThatStopsAskingLeavesTheLine) {
  Fleet f;
  f.gate.admit(candidate("a", kT0));
  f.gate.admit(candidate("b", kT0));
  EXPECT_FALSE(f.gate.admit(candidate("early", kT0)).admitted);
  EXPECT_FALSE(f.gate.admit(candidate("late", kT0 + 1min)).admitted);
  // "early" was paused: its pass asks for no start and withdraws.
  f.gate.withdraw("ns/early");
  f.phase("ns/a-run", "Failed");
  EXPECT_EQ(f.woken, std::vector<std::string>{"ns/late"});
  // One that never comes back lapses, so it cannot hold the line forever.
  f.woken.clear();
  EXPECT_FALSE(f.gate.admit(candidate("c", kT0 + 2min)).admitted);
  f.now += kWaitingTtl;
  EXPECT_TRUE(f.gate.admit(candidate("c", kT0 + 2min)).admitted);
}

TEST(ConcurrencyGate, TheLineIsByRequestTimeNotByWhoAsksFirst) {
  Fleet f;
  f.gate.admit(candidate("a", kT0));
  f.gate.admit(candidate("b", kT0));
  EXPECT_FALSE(f.gate.admit(candidate("late", kT0 + 5min)).admitted);
  EXPECT_FALSE(f.gate.admit(candidate("early", kT0 + 1min)).admitted);
  f.phase("ns/a-run", "Succeeded");
  EXPECT_EQ(f.woken, std::vector<std::string>{"ns/early"});
  EXPECT_FALSE(f.gate.admit(candidate("late", kT0 + 5min)).admitted) << "early is ahead";
  EXPECT_TRUE(f.gate.admit(candidate("early", kT0 + 1min)).admitted);
}

TEST(ConcurrencyDecision, AHeldRunWaitsQueuedWithTheReasonAndStartsWhenAdmitted) {
  World w{agent()};  // every 5m from 12:00
  Admission answer = Admission::no(1, "waiting: 2 of 2 concurrent runs in use");
  std::vector<std::pair<std::string, TimePoint>> asked;
  w.admit_start = [&](const std::string& run, TimePoint order) {
    asked.emplace_back(run, order);
    return answer;
  };
  const TimePoint slot = at("2024-05-01T12:05:00Z");
  AgentDecision d = w.step(slot + 3s);
  ASSERT_TRUE(d.create_run);
  EXPECT_FALSE(d.start_run);
  EXPECT_EQ(d.concurrency_limited, d.create_run->name);
  ASSERT_FALSE(asked.empty());
  EXPECT_EQ(asked.back().second, slot) << "the line is kept by the slot, not the pass";
  EXPECT_NE(d.status_json()["phase"], "Running");
  ASSERT_TRUE(d.requeue_at);
  EXPECT_LE(*d.requeue_at, slot + 3s + kConcurrencyRecheck);
  // The next pass tells the run why it waits.
  d = w.step(slot + 10s);
  const Json& status = (*w.find(d.concurrency_limited.value()))["status"];
  EXPECT_EQ(status["phase"], "Queued");
  EXPECT_EQ(status["reason"], kReasonConcurrencyLimited);
  EXPECT_EQ(status["message"], answer.message);
  // A place frees: the run starts and the reason is gone.
  answer = Admission::yes();
  d = w.step(slot + 30s);
  ASSERT_TRUE(d.start_run);
  const Json& started = (*w.find(*d.start_run))["status"];
  EXPECT_EQ(started["phase"], "Running");
  EXPECT_FALSE(started.contains("reason"));
  EXPECT_EQ(d.status_json()["phase"], "Running");
}

TEST(ConcurrencyDecision, NothingIsAskedWhileTheAgentsOwnRunIsGoingOn) {
  World w{agent()};
  int asked = 0;
  w.admit_start = [&](const std::string&, TimePoint) {
    ++asked;
    return Admission::yes();
  };
  w.step(at("2024-05-01T12:05:00Z"));
  EXPECT_EQ(asked, 1);
  w.step(at("2024-05-01T12:06:00Z"));  // still running: no start, no question
  EXPECT_EQ(asked, 1);
}

}  // namespace
}  // namespace hb::controllers
