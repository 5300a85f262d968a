// What Flux (kstatus) concludes about a HeartbeatPolicy in each state the
// operator writes: an invalid policy limits nobody and only a person can fix
// it, so it is Failed (Stalled) and not Ready; a valid one is Current and
// Ready, paused, over its budget or selecting nothing alike (states a person
// chose); a generation the operator has not acted on is InProgress.
#include <gtest/gtest.h>

#include "controllers/policy/policy_status.h"
#include "tests/support/kstatus.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using hb::testing::kstatus_of;
using testing::at;

constexpr int64_t kPolicyGeneration = 4;

Json policy_object(Json spec) {
  return {{"metadata", {{"namespace", "ns"}, {"name", "team"}, {"generation", kPolicyGeneration}}},
          {"spec", std::move(spec)}};
}

const Json* policy_condition(const Json& status, const char* type) {
  for (const Json& c : status["conditions"]) {
    if (c["type"] == type) return &c;
  }
  return nullptr;
}

// The policy as a GitOps tool reads it back once the operator wrote status.
Json written_policy(Json object, const PolicyTally& tally, TimePoint now) {
  const Json* stored = object.contains("status") ? &object["status"] : nullptr;
  Json status = desired_policy_status(parse_policy(object), stored, tally, now);
  object["status"] = std::move(status);
  return object;
}

struct PolicyCase {
  const char* name;
  Json spec;
  PolicyTally tally;
  const char* kstatus;
  const char* ready;
  const char* ready_reason;
};

TEST(PolicyKStatus, EachStateReadsAsAGitOpsToolShouldSeeIt) {
  const PolicyTally two{2, 0, 0, "2024-05"};
  const std::vector<PolicyCase> cases = {
      {"valid", {{"maxConcurrentRuns", 2}}, two, "Current", "True", "Valid"},
      {"paused", {{"paused", true}}, two, "Current", "True", "Valid"},
      {"budget spent",
       {{"budget", {{"monthlyCents", 10}}}},
       {2, 0, 12, "2024-05"},
       "Current",
       "True",
       "Valid"},
      {"selects nothing", Json::object(), {0, 0, 0, "2024-05"}, "Current", "True", "Valid"},
      {"invalid limit", {{"maxConcurrentRuns", -1}}, two, "Failed", "False", "InvalidSpec"},
      {"invalid selector",
       {{"selector", {{"matchExpressions", {{{"key", "team"}, {"operator", "Near"}}}}}}},
       two,
       "Failed",
       "False",
       "InvalidSpec"},
  };
  for (const PolicyCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Json object = written_policy(policy_object(c.spec), c.tally, at("2024-05-10T10:00:00Z"));
    EXPECT_EQ(kstatus_of(object).status, c.kstatus) << kstatus_of(object).message;
    const Json& status = object["status"];
    ASSERT_NE(policy_condition(status, "Ready"), nullptr);
    EXPECT_EQ((*policy_condition(status, "Ready"))["status"], c.ready);
    EXPECT_EQ((*policy_condition(status, "Ready"))["reason"], c.ready_reason);
    ASSERT_NE(policy_condition(status, "Stalled"), nullptr);
    EXPECT_EQ((*policy_condition(status, "Stalled"))["status"] == "True",
              std::string(c.kstatus) == "Failed");
    ASSERT_NE(policy_condition(status, "Reconciling"), nullptr);
    EXPECT_EQ((*policy_condition(status, "Reconciling"))["status"], "False");
    EXPECT_EQ(status["observedGeneration"], kPolicyGeneration);
    for (const Json& each : status["conditions"]) {
      EXPECT_EQ(each["observedGeneration"], kPolicyGeneration);
    }
  }
}

// Stalled's message names the bad field, as Ready's does.
TEST(PolicyKStatus, StalledNamesTheField) {
  const Json object = written_policy(policy_object({{"budget", {{"monthlyCents", "ten"}}}}),
                                     {1, 0, 0, "2024-05"}, at("2024-05-10T10:00:00Z"));
  const std::string message = (*policy_condition(object["status"], "Stalled"))["message"];
  EXPECT_NE(message.find("spec.budget.monthlyCents"), std::string::npos) << message;
}

// Before the operator writes status, the CRD's status default reads
// observedGeneration 0; after a spec change the stored one lags. Either way
// kstatus waits for the operator instead of trusting old conditions, and a
// fixed spec clears Stalled at once.
TEST(PolicyKStatus, AGenerationNotYetActedOnIsInProgress) {
  const PolicyTally tally{1, 0, 0, "2024-05"};
  Json object = policy_object({{"maxConcurrentRuns", -1}});
  object["status"] = {{"observedGeneration", 0}};
  EXPECT_EQ(kstatus_of(object).status, "InProgress");
  object = written_policy(object, tally, at("2024-05-10T10:00:00Z"));
  EXPECT_EQ(kstatus_of(object).status, "Failed");
  object["spec"]["maxConcurrentRuns"] = 3;
  object["metadata"]["generation"] = kPolicyGeneration + 1;
  EXPECT_EQ(kstatus_of(object).status, "InProgress");
  object = written_policy(object, tally, at("2024-05-10T10:01:00Z"));
  EXPECT_EQ(kstatus_of(object).status, "Current");
  EXPECT_EQ((*policy_condition(object["status"], "Stalled"))["lastTransitionTime"],
            "2024-05-10T10:01:00Z");
}

}  // namespace
}  // namespace hb::controllers
