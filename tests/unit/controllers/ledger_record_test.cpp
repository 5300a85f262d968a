// The durable ledger's record alone, and a randomised run of the whole
// counting protocol (record, agent status, marks) with crashes, stale
// copies, 409s and the Agent deleted and applied again at every point.
#include "controllers/spend/ledger_record.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "controllers/schedule/time_zone.h"
#include "controllers/spend/agent_ledger.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;

LedgerCharge charge(const std::string& run, double cents, const char* finished,
                    std::vector<std::string> policies = {}) {
  return {run, cents, 100, 10, at(finished), std::move(policies)};
}

TEST(LedgerRecord, ChargesEachRunOnceAndARaiseOnlyByTheDifference) {
  LedgerRecord r{"ns", "bot", {}, {}};
  const TimePoint now = at("2024-05-20T00:00:00Z");
  r = charge_runs(r, {charge("a", 2.5, "2024-05-01T12:00:00Z", {"team"})}, now);
  r = charge_runs(r, {charge("a", 2.5, "2024-05-01T12:00:00Z", {"team"})}, now);
  EXPECT_EQ(r.periods.at("2024-05").micro_cents, 2'500'000);
  EXPECT_EQ(r.periods.at("2024-05").input_tokens, 100) << "tokens once";
  // Observed higher after it was charged (its mark did not land): the difference.
  r = charge_runs(r, {charge("a", 3.0, "2024-05-01T12:00:00Z", {"team"})}, now);
  EXPECT_EQ(r.periods.at("2024-05").micro_cents, 3'000'000);
  EXPECT_EQ(r.periods.at("2024-05").policy_micro_cents.at("team"), 3'000'000);
  // Never lower.
  r = charge_runs(r, {charge("a", 1.0, "2024-05-01T12:00:00Z", {"team"})}, now);
  EXPECT_EQ(r.periods.at("2024-05").micro_cents, 3'000'000);
  EXPECT_EQ(spend_in(r, "2024-05").cents, 3.0);
  EXPECT_EQ(spend_in(r, "2024-04").cents, 0);
}

TEST(LedgerRecord, ARunIsAddedToTheMonthItFinishedInWheneverItIsCounted) {
  LedgerRecord r{"ns", "bot", {}, {}};
  // Finished on the last second of April, counted in May: April's.
  r = charge_runs(r, {charge("late", 4, "2024-04-30T23:59:59Z")}, at("2024-05-01T00:00:30Z"));
  EXPECT_EQ(spend_in(r, "2024-04").cents, 4);
  EXPECT_EQ(spend_in(r, "2024-05").cents, 0);
  // Months older than the one before now are not kept.
  r = charge_runs(r, {charge("june", 1, "2024-06-02T00:00:00Z")}, at("2024-06-02T00:00:01Z"));
  EXPECT_EQ(r.periods.count("2024-04"), 0u);
  EXPECT_EQ(spend_in(r, "2024-06").cents, 1);
}

// A charge lands in the month and day whose room admitted its run (its
// start, by the operator's clock), not where a clock that stamped its
// finish puts it: a run admitted in the first seconds of a day by an
// operator clock ahead of the node's, finished "yesterday" by the node's
// clock, is today's. Without a start (never admitted), its finish.
TEST(LedgerRecord, AChargeBelongsToTheDayAndMonthItsRunWasAdmittedIn) {
  LedgerRecord r{"ns", "bot", {}, {}};
  std::vector<LedgerCharge> charges = {charge("early", 2, "2024-04-30T23:59:54Z", {"team"}),
                                       charge("never-started", 1, "2024-04-30T23:59:58Z")};
  charges[0].admitted_at = at("2024-05-01T00:00:00Z");
  stamp_days(charges, nullptr, [](const std::string&) { return nullptr; });
  r = charge_runs(r, charges, at("2024-05-01T00:00:30Z"));
  EXPECT_EQ(spend_in(r, "2024-05").cents, 2);
  EXPECT_EQ(spend_in(r, "2024-04").cents, 1);
  EXPECT_EQ(spend_on_day(r, "2024-05-01@UTC"), 2.0);
  EXPECT_EQ(r.days.at("2024-05-01@UTC").policy_micro_cents.at("team"), 2'000'000);
  EXPECT_EQ(spend_on_day(r, "2024-04-30@UTC"), 1.0);
}

// Days: the agent's in its zone, each policy's in the policy's; a raise
// adds only the difference; days are kept three days; the ConfigMap keeps them.
TEST(LedgerRecord, ChargesTheDaysOfTheAgentsAndEachPolicysZone) {
  LedgerRecord r{"ns", "bot", {}, {}};
  std::vector<LedgerCharge> charges = {charge("a", 2, "2024-05-01T23:30:00Z", {"team", "org"})};
  auto berlin = schedule::find_time_zone("Europe/Berlin");
  ASSERT_TRUE(berlin.ok());
  stamp_days(charges, nullptr,
             [&](const std::string& policy) { return policy == "team" ? *berlin.value : nullptr; });
  const TimePoint now = at("2024-05-02T00:00:00Z");
  r = charge_runs(r, charges, now);
  EXPECT_EQ(spend_on_day(r, "2024-05-01@UTC"), 2.0);
  EXPECT_EQ(r.days.at("2024-05-01@UTC").policy_micro_cents.at("org"), 2'000'000);
  EXPECT_EQ(r.days.at("2024-05-02@Europe/Berlin").policy_micro_cents.at("team"), 2'000'000);
  EXPECT_EQ(spend_on_day(r, "2024-05-02@Europe/Berlin"), 0) << "the agent's day is UTC's";
  charges[0].cost_cents = 3;
  r = charge_runs(r, charges, now);
  EXPECT_EQ(spend_on_day(r, "2024-05-01@UTC"), 3.0) << "raised by the difference";
  EXPECT_EQ(r.days.at("2024-05-02@Europe/Berlin").policy_micro_cents.at("team"), 3'000'000);
  const ParsedLedger back = parse_ledger_configmap(ledger_configmap(r, "hb-system", ""));
  ASSERT_TRUE(back.record) << back.error;
  EXPECT_EQ(*back.record, r);
  r = charge_runs(r, {}, at("2024-05-06T00:00:00Z"));
  EXPECT_TRUE(r.days.empty()) << "days older than three are dropped";
  EXPECT_EQ(spend_in(r, "2024-05").cents, 3.0) << "the month keeps them";
}

// A run charged after its Agent is gone counts in the zone the Agent's days
// were counted in, not in UTC, so the Agent applied again sees it today.
TEST(LedgerRecord, TheAgentsZoneIsTheZoneOfItsNewestDay) {
  LedgerRecord r{"ns", "bot", {}, {}};
  EXPECT_EQ(agent_zone_in(r), "") << "nothing charged: UTC";
  auto tokyo = schedule::find_time_zone("Asia/Tokyo");
  auto berlin = schedule::find_time_zone("Europe/Berlin");
  ASSERT_TRUE(tokyo.ok() && berlin.ok());
  std::vector<LedgerCharge> charges = {charge("a", 2, "2024-05-01T10:00:00Z", {"team"})};
  // The policy's day (Berlin) sorts after the agent's (Tokyo) and is not the agent's.
  stamp_days(charges, *tokyo.value, [&](const std::string&) { return *berlin.value; });
  r = charge_runs(r, charges, at("2024-05-01T11:00:00Z"));
  EXPECT_EQ(agent_zone_in(r), "Asia/Tokyo");
  charges = {charge("b", 1, "2024-05-02T10:00:00Z")};
  stamp_days(charges, nullptr, [](const std::string&) { return nullptr; });
  r = charge_runs(r, charges, at("2024-05-02T11:00:00Z"));
  EXPECT_EQ(agent_zone_in(r), "UTC") << "the newest day's zone";
}

TEST(LedgerRecord, AMalformedDayIsRefusedByName) {
  Json cm = ledger_configmap(LedgerRecord{"ns", "bot", {}, {}}, "hb-system", "");
  Json data = Json::parse(cm["data"][kLedgerDataKey].get<std::string>());
  data["days"]["yesterday"] = {{"microCents", 1}, {"inputTokens", 0}, {"outputTokens", 0}};
  cm["data"][kLedgerDataKey] = data.dump();
  EXPECT_EQ(parse_ledger_configmap(cm).error, "day yesterday is malformed");
}

TEST(LedgerRecord, APolicyNamedTwiceIsChargedOnce) {
  LedgerRecord r{"ns", "bot", {}, {}};
  r = charge_runs(r, {charge("a", 2, "2024-05-01T12:00:00Z", {"team", "org", "team"})},
                  at("2024-05-01T12:01:00Z"));
  EXPECT_EQ(r.periods.at("2024-05").policy_micro_cents.at("team"), 2'000'000);
  EXPECT_EQ(r.periods.at("2024-05").policy_micro_cents.at("org"), 2'000'000);
}

TEST(LedgerRecord, SaturatesInsteadOfWrapping) {
  LedgerRecord r{"ns", "bot", {}, {}};
  const TimePoint now = at("2024-05-20T00:00:00Z");
  r = charge_runs(r, {charge("a", 1e20, "2024-05-01T12:00:00Z", {"team"})}, now);
  r = charge_runs(r, {charge("b", 1e20, "2024-05-01T12:00:00Z", {"team"})}, now);
  EXPECT_EQ(r.periods.at("2024-05").micro_cents, INT64_MAX);
  EXPECT_EQ(r.periods.at("2024-05").policy_micro_cents.at("team"), INT64_MAX);
}

TEST(LedgerRecord, ForgetsRunsOnceMarkedOrGone) {
  LedgerRecord r{"ns", "bot", {}, {}};
  const TimePoint now = at("2024-05-20T00:00:00Z");
  r = charge_runs(
      r, {charge("a", 1, "2024-05-01T12:00:00Z"), charge("b", 1, "2024-05-01T13:00:00Z")}, now);
  r = forget_marked(r, [](const std::string& run) { return run == "b"; });
  ASSERT_EQ(r.counted.size(), 1u);
  EXPECT_EQ(r.counted[0].run, "b");
  EXPECT_EQ(spend_in(r, "2024-05").cents, 2) << "forgetting a run keeps its spend";
}

TEST(LedgerRecord, RoundTripsThroughItsConfigMapAndRefusesAnotherName) {
  LedgerRecord r{"team-a", "bot", {}, {}};
  r = charge_runs(r, {charge("a", 1.25, "2024-05-01T12:00:00Z", {"team"})},
                  at("2024-05-20T00:00:00Z"));
  Json cm = ledger_configmap(r, "heartbeat-system", "7");
  EXPECT_EQ(cm["metadata"]["namespace"], "heartbeat-system");
  EXPECT_EQ(cm["metadata"]["resourceVersion"], "7");
  EXPECT_EQ(cm["metadata"]["labels"]["heartbeat.dev/ledger"], "agent");
  const ParsedLedger parsed = parse_ledger_configmap(cm);
  ASSERT_TRUE(parsed.record) << parsed.error;
  EXPECT_EQ(*parsed.record, r);
  // A record copied under another agent's name is refused, not believed.
  Json moved = cm;
  moved["metadata"]["name"] = ledger_object_name("team-a", "other");
  EXPECT_FALSE(parse_ledger_configmap(moved).record);
  Json bad = cm;
  bad["data"]["ledger.json"] = R"({"namespace":"team-a","agent":"bot","periods":{"2024-05":1}})";
  const ParsedLedger refused = parse_ledger_configmap(bad);
  EXPECT_FALSE(refused.record);
  EXPECT_NE(refused.error.find("2024-05"), std::string::npos);
}

TEST(LedgerRecord, NamesFitAConfigMapForAnyAgentAndDifferByNamespace) {
  const std::string ns(63, 'n');
  const std::string agent(253, 'a');
  const std::string name = ledger_object_name(ns, agent);
  EXPECT_LE(name.size(), 253u);
  EXPECT_EQ(name, ledger_object_name(ns, agent)) << "fixed";
  EXPECT_NE(ledger_object_name("a-b", "c"), ledger_object_name("a", "b-c"));
}

// The whole protocol: a run is charged to the record (a write conditional on
// its version), then the agent status is written, then the run is marked.
// Any write may be lost to a crash, the informer's copies may be one write
// behind, and the Agent may be deleted and applied again (its status gone)
// at any point. The record's spend and the team's share must end equal to
// the sum of the runs' costs, each counted once.
TEST(LedgerRecord, ProtocolNeverLosesNorDoubleCountsAcrossCrashesAndReapplies) {
  std::mt19937 rng(7);
  const TimePoint now = at("2024-05-20T00:00:00Z");
  for (int trial = 0; trial < 300; ++trial) {
    struct Stored {
      LedgerRecord record{"ns", "bot", {}, {}};
      bool exists = false;
      int64_t rv = 0;
    } server, previous;
    AgentStatus status;
    std::map<std::string, bool> marked;
    std::vector<FinishedRun> runs;
    int64_t expected_micros = 0;
    int steps = 0;
    const int run_count = 1 + static_cast<int>(rng() % 20);
    const auto all_marked = [&] {
      return std::all_of(marked.begin(), marked.end(), [](const auto& m) { return m.second; });
    };
    // Runs finish one after another, sometimes before the last one's mark
    // landed (a callback run, an orphan of an earlier Agent of the name).
    while (static_cast<int>(runs.size()) < run_count || !all_marked()) {
      ASSERT_LT(++steps, 20000);
      if (static_cast<int>(runs.size()) < run_count && (all_marked() || rng() % 3 == 0)) {
        FinishedRun f;
        f.name = "run-" + std::to_string(runs.size());
        f.usage.cost_cents = 0.125 * static_cast<double>(runs.size() + 1);
        f.finished_at = at("2024-05-01T12:00:00Z") + std::chrono::minutes(runs.size());
        runs.push_back(f);
        marked[f.name] = false;
        expected_micros += to_micro_cents(f.usage.cost_cents);
      }
      if (rng() % 8 == 0) status = AgentStatus{};  // deleted and applied again
      const Stored cached = rng() % 4 == 0 ? previous : server;
      std::vector<FinishedRun> unmarked;
      for (const FinishedRun& r : runs) {
        if (!marked[r.name]) unmarked.push_back(r);
      }
      const LedgerRecord seen =
          cached.exists ? cached.record : record_from_status("ns", "bot", status, now);
      CountedLedger counted = count_finished_runs(status, unmarked, now, &seen);
      if (!counted.charges.empty()) {
        if (cached.rv != server.rv) continue;  // 409
        if (rng() % 5 == 0) continue;          // crash before the record write
        for (LedgerCharge& c : counted.charges) c.policies = {"team"};
        previous = server;
        server.record =
            charge_runs(forget_marked(seen, [&](const std::string& r) { return !marked[r]; }),
                        counted.charges, now);
        server.exists = true;
        ++server.rv;
        if (rng() % 5 == 0) continue;  // crash after it
      }
      if (rng() % 5 == 0) continue;  // crash before the agent status write
      status.spend = counted.ledger.spend;
      status.recent_runs = counted.recent_runs;
      for (const std::string& name : counted.ledger.mark) {
        if (rng() % 6 == 0) break;  // crash mid-way through the marks
        marked[name] = true;
      }
    }
    const PeriodSpend& month = server.record.periods.at("2024-05");
    EXPECT_EQ(month.micro_cents, expected_micros) << "trial " << trial;
    EXPECT_EQ(month.policy_micro_cents.at("team"), expected_micros) << "trial " << trial;
  }
}

// The harm the record prevents, shown without it: an Agent deleted and
// applied again starts from an empty status, so its month's spend is gone.
TEST(LedgerRecord, WithoutTheRecordAReappliedAgentStartsFromZero) {
  const TimePoint now = at("2024-05-20T00:00:00Z");
  FinishedRun f;
  f.name = "run-0";
  f.usage.cost_cents = 40;
  f.finished_at = at("2024-05-01T12:00:00Z");
  AgentStatus status;
  CountedLedger counted = count_finished_runs(status, {f}, now);
  LedgerRecord record =
      charge_runs(record_from_status("ns", "bot", status, now), counted.charges, now);
  EXPECT_EQ(counted.ledger.spend.cents, 40);
  const AgentStatus reapplied;  // the new Agent's empty status
  EXPECT_EQ(count_finished_runs(reapplied, {}, now).ledger.spend.cents, 0) << "the harm";
  EXPECT_EQ(count_finished_runs(reapplied, {}, now, &record).ledger.spend.cents, 40);
}

// The record charged a run whose agent status write did not land (or
// landed and the cache has not shown it): the status read does not count
// it, so the pause it asked for is applied again, though its cost is not.
TEST(LedgerRecord, ARunTheRecordChargedAheadOfTheStatusStillPausesTheAgent) {
  const TimePoint now = at("2024-05-20T00:00:00Z");
  FinishedRun f;
  f.name = "run-0";
  f.usage.cost_cents = 40;
  f.finished_at = at("2024-05-19T23:59:00Z");
  f.pause_until = at("2024-05-20T00:30:00Z");
  const AgentStatus before;  // the status as read: the run not counted
  const CountedLedger first = count_finished_runs(before, {f}, now);
  ASSERT_EQ(first.ledger.paused_until, f.pause_until);
  const LedgerRecord record =
      charge_runs(record_from_status("ns", "bot", before, now), first.charges, now);
  const CountedLedger again = count_finished_runs(before, {f}, now, &record);
  EXPECT_TRUE(again.charges.empty()) << "charged once";
  EXPECT_EQ(again.ledger.spend.cents, 40);
  EXPECT_EQ(again.ledger.paused_until, f.pause_until);
  EXPECT_EQ(again.ledger.last_heartbeat, f.finished_at);
}

}  // namespace
}  // namespace hb::controllers
