// The concurrency caps: the pure admission (who may start, in which order,
// in which pools), the shell's gate over the fleet (reservations, the line,
// wakeups, what lapses, policy pools), and the Agent decision holding a run
// back.
#include "controllers/policy/concurrency.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "controllers/schedule/run_name.h"
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

TEST(ConcurrencyAdmission, ARefusalNamesItsLimit) {
  EXPECT_EQ(limit_name(""), "--max-concurrent-runs");
  EXPECT_EQ(limit_name("team/team-a"), "HeartbeatPolicy team-a, maxConcurrentRuns");
  const Admission a = admit_start(2, 2, {}, candidate("a", kT0), limit_name("team/team-a"));
  EXPECT_FALSE(a.admitted);
  EXPECT_NE(a.message.find("2 of 2 concurrent runs in use (HeartbeatPolicy team-a, "
                           "maxConcurrentRuns)"),
            std::string::npos)
      << a.message;
}

TEST(ConcurrencyAdmission, EveryPoolMustAdmitAndTheLongestWaitIsShown) {
  const StartCandidate early = candidate("early", kT0), c = candidate("c", kT0 + 1s);
  const std::vector<const StartCandidate*> line = {&early, &c};
  struct Case {
    const char* name;
    std::vector<PoolState> pools;
    bool admitted;
    const char* names;  // the limit the refusal names
  };
  const std::vector<Case> cases = {
      {"no pools: no cap", {}, true, ""},
      {"all have room", {{"", 5, 1, line}, {"ns/p", 3, 1, line}}, true, ""},
      {"one full", {{"", 5, 1, line}, {"ns/p", 1, 1, {&c}}}, false, "HeartbeatPolicy p"},
      {"both full: more ahead wins",
       {{"ns/p", 1, 1, {&c}}, {"ns/q", 2, 2, line}},
       false,
       "HeartbeatPolicy q"},
      {"both full, tie: first pool",
       {{"", 1, 1, {&c}}, {"ns/p", 1, 1, {&c}}},
       false,
       "--max-concurrent-runs"},
  };
  for (const Case& k : cases) {
    const Admission a = admit_start_in_pools(k.pools, c);
    EXPECT_EQ(a.admitted, k.admitted) << k.name;
    EXPECT_NE(a.message.find(k.names), std::string::npos) << k.name << ": " << a.message;
  }
}

TEST(ConcurrencyAdmission, TheWokenAreThoseEveryPoolOfTheirsWouldAdmit) {
  const StartCandidate a = candidate("a", kT0), b = candidate("b", kT0 + 1s),
                       c = candidate("c", kT0 + 2s), d = candidate("d", kT0 + 3s);
  const std::vector<const StartCandidate*> line = {&a, &b, &c, &d};
  // p (1 free): a, b stand in it; q (1 free): b, c; d stands in no line (it
  // left its pools) and may start at once.
  const std::vector<PoolState> pools = {{"ns/p", 2, 1, {&a, &b}}, {"ns/q", 2, 1, {&b, &c}}};
  EXPECT_EQ(agents_to_wake_in_pools(pools, line), (std::vector<std::string>{"ns/a", "ns/d"}))
      << "b is second in p's line; c is behind b in q's";
  const std::vector<PoolState> roomy = {{"ns/p", 3, 1, {&a, &b}}, {"ns/q", 3, 1, {&b, &c}}};
  EXPECT_EQ(agents_to_wake_in_pools(roomy, line),
            (std::vector<std::string>{"ns/a", "ns/b", "ns/c", "ns/d"}));
}

TEST(ConcurrencyAdmission, ARunsAgentIsItsNamespaceAndAgentRef) {
  EXPECT_EQ(agent_of_run("team/a-run", Json{{"spec", {{"agentRef", {{"name", "a"}}}}}}), "team/a");
  EXPECT_EQ(agent_of_run("team/a-run", Json::object()), "");
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

TEST(ConcurrencyGate, AStartedRunWhoseJobGoesFirstKeepsItsPlaceUntilItIsFinal) {
  Fleet f;
  f.gate.admit(candidate("a", kT0));
  f.phase("ns/a-run", "Queued", /*has_job=*/true);  // started; its Running not seen yet
  // The watchdog deletes its Job before it stores Failed; the Job's informer
  // shows the deletion while the run's still shows the run Queued.
  f.phase("ns/a-run", "Queued", /*has_job=*/false);
  EXPECT_EQ(f.gate.in_use(), 1) << "the run is not final: it still holds its place";
  EXPECT_TRUE(f.gate.admit(candidate("b", kT0)).admitted);
  EXPECT_FALSE(f.gate.admit(candidate("c", kT0)).admitted);
  f.phase("ns/a-run", "Failed");
  EXPECT_EQ(f.gate.in_use(), 1);
  EXPECT_EQ(f.woken, std::vector<std::string>{"ns/c"});
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

// The gate with HeartbeatPolicy pools: `pools` says which policies select
// which agent (edited by the tests as labels and policies change).
struct PooledFleet {
  explicit PooledFleet(int64_t cap = 0) : gate(make_gate(cap)) {}

  std::chrono::steady_clock::time_point now{};
  std::vector<std::string> woken;
  std::map<std::string, std::vector<PoolCap>> pools;  // agent key -> its policies' caps
  ConcurrencyGate gate;

  // Puts agents ("a" -> "ns/a") in a policy pool of `cap`.
  void select(const std::string& pool, int64_t cap, const std::vector<std::string>& agents) {
    for (const std::string& agent : agents) pools["ns/" + agent].push_back({pool, cap});
  }
  void phase(const std::string& agent, const char* phase, bool has_job = false) {
    const Json run = {{"spec", {{"agentRef", {{"name", agent}}}}}, {"status", {{"phase", phase}}}};
    gate.observe_run("ns/" + agent + "-run", &run, has_job);
  }
  std::vector<std::string> take_woken() { return std::exchange(woken, {}); }

 private:
  ConcurrencyGate make_gate(int64_t cap) {
    return ConcurrencyGate(
        cap, [this] { return now; }, [this](const std::string& agent) { woken.push_back(agent); },
        [this](const std::string& agent) {
          const auto it = pools.find(agent);
          return it == pools.end() ? std::vector<PoolCap>{} : it->second;
        });
  }
};

TEST(ConcurrencyPools, APolicyPoolStartsItsAgentsInSlotOrder) {
  PooledFleet f;  // no operator-wide cap: only the policy's maxConcurrentRuns 2
  f.select("ns/team", 2, {"a", "b", "c", "d", "e"});
  EXPECT_TRUE(f.gate.admit(candidate("a", kT0)).admitted);
  EXPECT_TRUE(f.gate.admit(candidate("b", kT0 + 1s)).admitted);
  // The rest, due together, are reconciled in whatever order.
  for (const char* agent : {"e", "d", "c"}) {
    const int seconds = 2 + (agent[0] - 'c');
    EXPECT_FALSE(f.gate.admit(candidate(agent, kT0 + std::chrono::seconds(seconds))).admitted)
        << agent;
  }
  EXPECT_EQ(f.gate.in_use("ns/team"), 2);
  EXPECT_EQ(f.gate.waiting(), 3u);
  f.phase("a", "Running", /*has_job=*/true);
  f.phase("a", "Succeeded", /*has_job=*/true);
  EXPECT_EQ(f.take_woken(), std::vector<std::string>{"ns/c"}) << "the earliest slot first";
  EXPECT_FALSE(f.gate.admit(candidate("d", kT0 + 3s)).admitted) << "c is ahead";
  EXPECT_TRUE(f.gate.admit(candidate("c", kT0 + 2s)).admitted);
  EXPECT_EQ(f.gate.in_use("ns/team"), 2);
}

TEST(ConcurrencyPools, AnAgentInTwoPoolsIsHeldByTheFullerOne) {
  PooledFleet f(/*cap=*/10);
  f.select("ns/small", 1, {"x", "z"});
  f.select("ns/big", 3, {"y", "z"});
  EXPECT_TRUE(f.gate.admit(candidate("x", kT0)).admitted);
  EXPECT_TRUE(f.gate.admit(candidate("y", kT0)).admitted);
  const Admission held = f.gate.admit(candidate("z", kT0));
  EXPECT_FALSE(held.admitted);
  EXPECT_NE(held.message.find("HeartbeatPolicy small"), std::string::npos) << held.message;
  EXPECT_EQ(f.gate.in_use("ns/big"), 1);
  f.gate.observe_run("ns/x-run", nullptr, false);  // x's run is gone
  EXPECT_EQ(f.take_woken(), std::vector<std::string>{"ns/z"});
  EXPECT_TRUE(f.gate.admit(candidate("z", kT0)).admitted);
  EXPECT_EQ(f.gate.in_use("ns/small"), 1);
  EXPECT_EQ(f.gate.in_use("ns/big"), 2);
  EXPECT_EQ(f.gate.in_use(), 2);
}

TEST(ConcurrencyPools, AnAgentOutsideThePoolIsNotHeldByIt) {
  PooledFleet f;
  f.select("ns/team", 1, {"a", "b"});
  EXPECT_TRUE(f.gate.admit(candidate("a", kT0)).admitted);
  EXPECT_FALSE(f.gate.admit(candidate("b", kT0)).admitted);
  EXPECT_TRUE(f.gate.admit(candidate("outsider", kT0 + 1min)).admitted) << "not behind b";
  EXPECT_EQ(f.gate.in_use("ns/team"), 1);
  EXPECT_EQ(f.gate.in_use(), 2);
}

TEST(ConcurrencyPools, TheOperatorWideCapStillHoldsPoolMembers) {
  PooledFleet f(/*cap=*/1);
  f.select("ns/team", 5, {"a", "b"});
  EXPECT_TRUE(f.gate.admit(candidate("a", kT0)).admitted);
  const Admission held = f.gate.admit(candidate("b", kT0));
  EXPECT_FALSE(held.admitted);
  EXPECT_NE(held.message.find("--max-concurrent-runs"), std::string::npos) << held.message;
}

TEST(ConcurrencyPools, WithoutAnOperatorCapTheInformersRunsStillCount) {
  PooledFleet f;  // a restarted operator, no --max-concurrent-runs
  f.select("ns/team", 2, {"a", "b", "c"});
  f.phase("a", "Running");
  f.phase("outsider", "Running");
  // A Job seen before its run: its agent is unknown until the run shows up.
  f.gate.observe_run("ns/b-run", nullptr, /*has_job=*/true);
  EXPECT_EQ(f.gate.in_use("ns/team"), 1);
  f.phase("b", "Queued", /*has_job=*/true);
  EXPECT_EQ(f.gate.in_use("ns/team"), 2);
  EXPECT_EQ(f.gate.in_use(), 3);
  EXPECT_FALSE(f.gate.admit(candidate("c", kT0)).admitted);
  f.phase("outsider", "Succeeded");
  EXPECT_TRUE(f.take_woken().empty()) << "no place in the team's pool freed";
  f.phase("a", "Failed");
  EXPECT_EQ(f.take_woken(), std::vector<std::string>{"ns/c"});
}

TEST(ConcurrencyPools, RaisingAPoolsCapWakesTheNext) {
  PooledFleet f;
  f.select("ns/team", 1, {"a", "b", "c"});
  f.gate.admit(candidate("a", kT0));
  f.gate.admit(candidate("b", kT0 + 1s));
  f.gate.admit(candidate("c", kT0 + 2s));
  f.gate.pools_changed();  // an unrelated edit: nobody may start
  EXPECT_TRUE(f.take_woken().empty());
  for (auto& [agent, caps] : f.pools) caps = {{"ns/team", 2}};
  f.gate.pools_changed();
  EXPECT_EQ(f.take_woken(), std::vector<std::string>{"ns/b"});
  EXPECT_TRUE(f.gate.admit(candidate("b", kT0 + 1s)).admitted);
  EXPECT_FALSE(f.gate.admit(candidate("c", kT0 + 2s)).admitted);
}

TEST(ConcurrencyPools, AnAgentLeavingThePoolTakesItsPlaceWithIt) {
  PooledFleet f;
  f.select("ns/team", 1, {"a", "b", "c"});
  f.gate.admit(candidate("a", kT0));
  f.phase("a", "Running", /*has_job=*/true);
  f.gate.admit(candidate("b", kT0 + 1s));
  f.gate.admit(candidate("c", kT0 + 2s));
  f.pools.erase("ns/a");  // a's labels changed: the policy no longer selects it
  f.gate.pools_changed();
  EXPECT_EQ(f.gate.in_use("ns/team"), 0);
  EXPECT_EQ(f.take_woken(), std::vector<std::string>{"ns/b"});
  // A waiting agent that leaves the pool may start at once.
  f.pools.erase("ns/c");
  f.gate.pools_changed();
  EXPECT_EQ(f.take_woken(), (std::vector<std::string>{"ns/b", "ns/c"}));
  EXPECT_TRUE(f.gate.admit(candidate("c", kT0 + 2s)).admitted);
}

TEST(ConcurrencyPools, OneLeavingTheLineWakesThoseItHeldBack) {
  PooledFleet f;
  f.select("ns/small", 1, {"w", "x"});
  f.select("ns/other", 1, {"x", "y"});
  f.gate.admit(candidate("w", kT0));  // small is full
  EXPECT_FALSE(f.gate.admit(candidate("x", kT0 + 1s)).admitted);
  // other has room, but x (held by small) is ahead of y in other's line.
  EXPECT_FALSE(f.gate.admit(candidate("y", kT0 + 2s)).admitted);
  f.gate.withdraw("ns/x");  // x was paused
  EXPECT_EQ(f.take_woken(), std::vector<std::string>{"ns/y"});
  EXPECT_TRUE(f.gate.admit(candidate("y", kT0 + 2s)).admitted);
}

// A fleet of 2 places, both in use, and another agent's run asked for
// before `slot` waiting: the bot's slot run is held.
GateSnapshot full_gate(TimePoint slot) {
  return GateSnapshot{{PoolSnapshot{"", 2, 2, {{"ns/other", "ns/other-run", slot - 1min}}}}, {}};
}

TEST(ConcurrencyDecision, AHeldRunWaitsQueuedWithTheReasonAndStartsWhenAdmitted) {
  World w{agent()};  // every 5m from 12:00
  const TimePoint slot = at("2024-05-01T12:05:00Z");
  w.gate = full_gate(slot);
  AgentDecision d = w.step(slot + 3s);
  ASSERT_TRUE(d.create_run);
  EXPECT_FALSE(d.start_run);
  EXPECT_EQ(d.concurrency_limited, d.create_run->name);
  ASSERT_TRUE(d.admission_request);
  EXPECT_EQ(d.admission_request->order, slot) << "the line is kept by the slot, not the pass";
  EXPECT_EQ(d.admission_request->agent, "ns/bot");
  EXPECT_EQ(d.admission_request->run, "ns/" + d.create_run->name);
  EXPECT_FALSE(d.admission_assumed.admitted);
  const std::string message =
      "waiting: 2 of 2 concurrent runs in use (--max-concurrent-runs); 1 run(s) asked for "
      "earlier start first";
  EXPECT_EQ(d.admission_assumed.message, message);
  EXPECT_NE(d.status_json()["phase"], "Running");
  ASSERT_TRUE(d.requeue_at);
  EXPECT_LE(*d.requeue_at, slot + 3s + kConcurrencyRecheck);
  // The next pass tells the run why it waits.
  d = w.step(slot + 10s);
  const Json& status = (*w.find(d.concurrency_limited.value()))["status"];
  EXPECT_EQ(status["phase"], "Queued");
  EXPECT_EQ(status["reason"], kReasonConcurrencyLimited);
  EXPECT_EQ(status["message"], message);
  // Places free (the gate counts one in use): the run starts and the reason is gone.
  w.gate->pools[0].in_use = 0;
  d = w.step(slot + 30s);
  ASSERT_TRUE(d.start_run);
  ASSERT_TRUE(d.admission_request);
  EXPECT_TRUE(d.admission_assumed.admitted);
  EXPECT_EQ(d.admission_assumed.ahead, 1);
  const Json& started = (*w.find(*d.start_run))["status"];
  EXPECT_EQ(started["phase"], "Running");
  EXPECT_FALSE(started.contains("reason"));
  EXPECT_EQ(d.status_json()["phase"], "Running");
}

TEST(ConcurrencyDecision, NothingIsAskedWhileTheAgentsOwnRunIsGoingOn) {
  World w{agent()};
  w.gate = GateSnapshot{};  // no pool over the agent: every start is admitted
  AgentDecision d = w.step(at("2024-05-01T12:05:00Z"));
  EXPECT_TRUE(d.admission_request);
  EXPECT_TRUE(d.admission_assumed.admitted);
  d = w.step(at("2024-05-01T12:06:00Z"));  // still running: no start, no question
  EXPECT_FALSE(w.last_reads.gate);
  EXPECT_FALSE(d.admission_request);
}

// A run the gate shows holding a place (reserved by a pass that failed
// after it) is admitted again from the snapshot, the pool full or not.
TEST(ConcurrencyDecision, ARunHoldingAPlaceIsAdmittedFromTheSnapshot) {
  World w{agent()};
  const TimePoint slot = at("2024-05-01T12:05:00Z");
  w.gate = full_gate(slot);
  w.gate->runs_holding_place = {"ns/" + schedule::scheduled_run_name("bot", slot)};
  const AgentDecision d = w.step(slot);
  ASSERT_TRUE(d.start_run);
  EXPECT_TRUE(d.admission_assumed.admitted);
}

TEST(ConcurrencySnapshot, AdmitsFromTheSnapshotAsTheGateWould) {
  Fleet f;
  EXPECT_TRUE(f.gate.admit(candidate("a", kT0)).admitted);
  // One place left: b is admitted from a snapshot.
  GateSnapshot snap = f.gate.snapshot("ns/b", {"ns/b-run"});
  ASSERT_EQ(snap.pools.size(), 1u);
  EXPECT_EQ(snap.pools[0].cap, 2);
  EXPECT_EQ(snap.pools[0].in_use, 1);
  EXPECT_TRUE(admit_from_snapshot(snap, candidate("b", kT0)).admitted);
  EXPECT_TRUE(f.gate.admit(candidate("b", kT0)).admitted);
  // Full: c is refused with the gate's own message.
  snap = f.gate.snapshot("ns/c", {"ns/c-run"});
  const Admission from_snapshot = admit_from_snapshot(snap, candidate("c", kT0));
  EXPECT_FALSE(from_snapshot.admitted);
  EXPECT_EQ(from_snapshot.message,
            "waiting: 2 of 2 concurrent runs in use (--max-concurrent-runs); 0 run(s) asked for "
            "earlier start first");
  const Admission from_gate = f.gate.admit(candidate("c", kT0));
  EXPECT_FALSE(from_gate.admitted);
  EXPECT_EQ(from_gate.message, from_snapshot.message);
  // a's run holds its place: a snapshot says so, and asking again admits it.
  snap = f.gate.snapshot("ns/a", {"ns/a-run", "ns/a-other"});
  EXPECT_EQ(snap.runs_holding_place, std::vector<std::string>{"ns/a-run"});
  EXPECT_TRUE(admit_from_snapshot(snap, candidate("a", kT0)).admitted);
}

TEST(ConcurrencySnapshot, TheLineKeepsItsOrder) {
  Fleet f;
  f.gate.admit(candidate("a", kT0));
  f.gate.admit(candidate("b", kT0));
  EXPECT_FALSE(f.gate.admit(candidate("late", kT0 + 2s)).admitted);
  EXPECT_FALSE(f.gate.admit(candidate("early", kT0 + 1s)).admitted);
  const GateSnapshot snap = f.gate.snapshot("ns/x", {});
  ASSERT_EQ(snap.pools.size(), 1u);
  ASSERT_EQ(snap.pools[0].line.size(), 2u);
  EXPECT_EQ(snap.pools[0].line[0].agent, "ns/early");
  EXPECT_EQ(snap.pools[0].line[1].agent, "ns/late");
  // A place frees for one: whoever was asked for first takes it.
  GateSnapshot one_free = snap;
  one_free.pools[0].in_use = 1;
  EXPECT_TRUE(admit_from_snapshot(one_free, candidate("first", kT0)).admitted);
  EXPECT_TRUE(admit_from_snapshot(one_free, candidate("early", kT0 + 1s)).admitted);
  const Admission late = admit_from_snapshot(one_free, candidate("late", kT0 + 2s));
  EXPECT_FALSE(late.admitted);
  EXPECT_EQ(late.ahead, 1);
  EXPECT_FALSE(admit_from_snapshot(one_free, candidate("x", kT0 + 3s)).admitted);
}

// Two workers decide from snapshots taken before either commits: the gate
// takes the first commit and refuses the stale second, which stands in
// line and is woken when the place frees.
TEST(ConcurrencySnapshot, TheGateRefusesACommitWhoseSnapshotWentStale) {
  Fleet f;
  f.gate.admit(candidate("a", kT0));
  const GateSnapshot for_b = f.gate.snapshot("ns/b", {"ns/b-run"});
  const GateSnapshot for_c = f.gate.snapshot("ns/c", {"ns/c-run"});
  EXPECT_TRUE(admit_from_snapshot(for_b, candidate("b", kT0)).admitted);
  EXPECT_TRUE(admit_from_snapshot(for_c, candidate("c", kT0 + 1s)).admitted);
  EXPECT_TRUE(f.gate.admit(candidate("b", kT0)).admitted);  // the positive control
  const Admission stale = f.gate.admit(candidate("c", kT0 + 1s));
  EXPECT_FALSE(stale.admitted);
  EXPECT_EQ(f.gate.in_use(), 2) << "never a place beyond the cap";
  EXPECT_EQ(f.gate.waiting(), 1u);
  f.phase("ns/a-run", "Succeeded");
  EXPECT_EQ(f.woken, std::vector<std::string>{"ns/c"});
}

TEST(ConcurrencySnapshot, ARefusalFromTheSnapshotStandsInLineAndReservesNothing) {
  Fleet f;
  f.gate.admit(candidate("a", kT0));
  f.gate.admit(candidate("b", kT0));
  EXPECT_FALSE(f.gate.stand_in_line(candidate("c", kT0)));
  EXPECT_EQ(f.gate.in_use(), 2);
  EXPECT_EQ(f.gate.waiting(), 1u);
  EXPECT_TRUE(f.woken.empty());
  // A place freed between the snapshot and standing in line: the caller is
  // told to decide again (it is not woken: a wake while its pass runs would
  // queue it again past the backoff of a pass that then fails), still with
  // nothing reserved.
  f.gate.release("ns/a-run");
  f.woken.clear();
  EXPECT_FALSE(f.gate.stand_in_line(candidate("d", kT0 + 1s)))
      << "c, earlier, takes the free place first";
  EXPECT_EQ(f.gate.in_use(), 1);
  EXPECT_TRUE(f.gate.stand_in_line(candidate("c", kT0)));
  EXPECT_TRUE(f.woken.empty());
  EXPECT_EQ(f.gate.in_use(), 1);
}

// The snapshot answers as admit would for a run the cache does not show:
// one admitted and not yet seen, and one whose Job the informers showed
// before the run (made by another replica, or a Job a tenant named after
// the agent's next slot). Otherwise the decision refuses a start the gate
// then admits, in every pass, while the cache lags.
TEST(ConcurrencySnapshot, ShowsPlacesHeldForRunsTheCacheDoesNotShowYet) {
  Fleet f;
  EXPECT_TRUE(f.gate.admit(candidate("a", kT0)).admitted);
  f.gate.observe_run("ns/b-run", nullptr, /*has_job=*/true);  // the Job before its run
  f.gate.observe_run("other/b-run", nullptr, /*has_job=*/true);
  EXPECT_EQ(f.gate.in_use(), 3);
  GateSnapshot snap = f.gate.snapshot("ns/b", {});
  EXPECT_EQ(snap.runs_holding_place, std::vector<std::string>{"ns/b-run"})
      << "attributed to no agent, in b's namespace only";
  EXPECT_TRUE(admit_from_snapshot(snap, candidate("b", kT0)).admitted);
  // Once claimed, the place is b's alone.
  EXPECT_TRUE(f.gate.admit(candidate("b", kT0)).admitted);
  EXPECT_EQ(f.gate.snapshot("ns/c", {}).runs_holding_place, std::vector<std::string>{});
  EXPECT_EQ(f.gate.snapshot("ns/a", {}).runs_holding_place, std::vector<std::string>{"ns/a-run"});
  // Places that end leave the snapshot.
  f.gate.release("ns/a-run");
  f.gate.observe_run("ns/b-run", nullptr, /*has_job=*/false);
  EXPECT_EQ(f.gate.snapshot("ns/a", {}).runs_holding_place, std::vector<std::string>{});
  EXPECT_EQ(f.gate.snapshot("ns/b", {}).runs_holding_place, std::vector<std::string>{});
  EXPECT_EQ(f.gate.in_use(), 1);
}

}  // namespace
}  // namespace hb::controllers
