// A run's Job-like conditions follow its phase on every status write.
#include "controllers/run/run_conditions.h"

#include <gtest/gtest.h>

#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace hb::controllers::testing;

// "type=status:reason" for each condition, in order.
std::vector<std::string> summary(const Json& status) {
  std::vector<std::string> out;
  for (const Json& c : status["conditions"]) {
    out.push_back(c["type"].get<std::string>() + "=" + c["status"].get<std::string>() + ":" +
                  c["reason"].get<std::string>());
  }
  return out;
}

TEST(RunConditions, FollowThePhase) {
  const TimePoint now = at("2024-05-01T12:05:00Z");
  struct Row {
    Json status;
    std::vector<std::string> want;
  };
  const std::vector<Row> rows = {
      {{{"phase", "Queued"}, {"message", "waiting"}},
       {"Running=False:Queued", "Finished=False:Queued"}},
      {Json::object(), {"Running=False:Queued", "Finished=False:Queued"}},
      {{{"phase", "Running"}}, {"Running=True:Running", "Finished=False:Running"}},
      {{{"phase", "Succeeded"}, {"reason", "Completed"}},
       {"Running=False:Completed", "Complete=True:Completed", "Finished=True:Succeeded"}},
      {{{"phase", "Failed"}, {"reason", "Stalled"}},
       {"Running=False:Stalled", "Failed=True:Stalled", "Finished=True:Failed"}},
      {{{"phase", "TimedOut"}, {"reason", "DeadlineExceeded"}},
       {"Running=False:DeadlineExceeded", "Failed=True:DeadlineExceeded",
        "Finished=True:TimedOut"}},
      {{{"phase", "Cancelled"}, {"reason", "Coalesced"}},
       {"Running=False:Coalesced", "Failed=True:Coalesced", "Finished=True:Cancelled"}},
      // A reason the CRD's pattern would reject falls back to the phase.
      {{{"phase", "Failed"}, {"reason", "not a reason!"}},
       {"Running=False:Failed", "Failed=True:Failed", "Finished=True:Failed"}},
      {{{"phase", "Succeeded"}},
       {"Running=False:Succeeded", "Complete=True:Succeeded", "Finished=True:Succeeded"}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.status.dump());
    const Json out = with_run_conditions(row.status, nullptr, 3, now);
    EXPECT_EQ(summary(out), row.want);
    EXPECT_EQ(out["observedGeneration"], 3);
    for (const Json& c : out["conditions"]) {
      EXPECT_EQ(c["observedGeneration"], 3);
      EXPECT_EQ(c["lastTransitionTime"], "2024-05-01T12:05:00Z");
    }
  }
}

TEST(RunConditions, KeepTheTransitionTimeOfAnUnchangedStatusAndTheMessage) {
  const Json running =
      with_run_conditions({{"phase", "Running"}}, nullptr, 1, at("2024-05-01T12:05:00Z"));
  const Json again = with_run_conditions(running, &running, 1, at("2024-05-01T12:06:00Z"));
  EXPECT_EQ(again, running);  // nothing new to write
  Json final_status = running;
  final_status["phase"] = "Failed";
  final_status["reason"] = "Stalled";
  final_status["message"] = "no beat for 300s";
  const Json done = with_run_conditions(final_status, &running, 1, at("2024-05-01T12:07:00Z"));
  ASSERT_EQ(done["conditions"].size(), 3u);
  EXPECT_EQ(done["conditions"][0]["lastTransitionTime"], "2024-05-01T12:07:00Z");  // True->False
  EXPECT_EQ(done["conditions"][1]["lastTransitionTime"], "2024-05-01T12:07:00Z");
  EXPECT_EQ(done["conditions"][1]["message"], "no beat for 300s");
  EXPECT_EQ(done["conditions"][2]["lastTransitionTime"], "2024-05-01T12:07:00Z");  // False->True
  const Json queued =
      with_run_conditions({{"phase", "Queued"}}, nullptr, 1, at("2024-05-01T12:00:00Z"));
  Json started = queued;
  started["phase"] = "Running";
  EXPECT_EQ(with_run_conditions(started, &queued, 1,
                                at("2024-05-01T12:01:00Z"))["conditions"][0]["lastTransitionTime"],
            "2024-05-01T12:01:00Z");
  Json still_queued = queued;
  still_queued["message"] = "waiting for bot-1";
  EXPECT_EQ(with_run_conditions(still_queued, &queued, 1,
                                at("2024-05-01T12:02:00Z"))["conditions"][0]["lastTransitionTime"],
            "2024-05-01T12:00:00Z");
}

// `kubectl wait --for=condition=Finished` returns for every final phase
// (Complete alone never comes for a failed run), and not before one.
TEST(RunConditions, FinishedIsTrueForEveryFinalPhaseOnly) {
  const TimePoint now = at("2024-05-01T12:05:00Z");
  for (const char* phase : {"Queued", "Running", "Succeeded", "Failed", "TimedOut", "Cancelled"}) {
    SCOPED_TRACE(phase);
    const Json out = with_run_conditions({{"phase", phase}, {"reason", "Why"}}, nullptr, 1, now);
    const bool final_phase = std::string(phase) != "Queued" && std::string(phase) != "Running";
    int finished = 0;
    for (const Json& c : out["conditions"]) {
      if (c["type"] != "Finished") continue;
      ++finished;
      EXPECT_EQ(c["status"], final_phase ? "True" : "False");
      EXPECT_EQ(c["reason"], phase);
    }
    EXPECT_EQ(finished, 1);
  }
}

}  // namespace
}  // namespace hb::controllers
