// A run's Job-like conditions follow its phase on every status write.
#include "controllers/run_conditions.h"

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
      {{{"phase", "Queued"}, {"message", "waiting"}}, {"Running=False:Queued"}},
      {Json::object(), {"Running=False:Queued"}},
      {{{"phase", "Running"}}, {"Running=True:Running"}},
      {{{"phase", "Succeeded"}, {"reason", "Completed"}},
       {"Running=False:Completed", "Complete=True:Completed"}},
      {{{"phase", "Failed"}, {"reason", "Stalled"}},
       {"Running=False:Stalled", "Failed=True:Stalled"}},
      {{{"phase", "TimedOut"}, {"reason", "DeadlineExceeded"}},
       {"Running=False:DeadlineExceeded", "Failed=True:DeadlineExceeded"}},
      {{{"phase", "Cancelled"}, {"reason", "Coalesced"}},
       {"Running=False:Coalesced", "Failed=True:Coalesced"}},
      // A reason the CRD's pattern would reject falls back to the phase.
      {{{"phase", "Failed"}, {"reason", "not a reason!"}},
       {"Running=False:Failed", "Failed=True:Failed"}},
      {{{"phase", "Succeeded"}}, {"Running=False:Succeeded", "Complete=True:Succeeded"}},
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
  ASSERT_EQ(done["conditions"].size(), 2u);
  EXPECT_EQ(done["conditions"][0]["lastTransitionTime"], "2024-05-01T12:07:00Z");  // True->False
  EXPECT_EQ(done["conditions"][1]["lastTransitionTime"], "2024-05-01T12:07:00Z");
  EXPECT_EQ(done["conditions"][1]["message"], "no beat for 300s");
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

}  // namespace
}  // namespace hb::controllers
