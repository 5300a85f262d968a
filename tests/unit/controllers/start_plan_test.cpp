// Starting one run, decided purely: refused before it starts, or its Job.
#include "controllers/plan/start_plan.h"

#include <gtest/gtest.h>

#include "controllers/model/names.h"
#include "controllers/run/run_status.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;

struct Start {
  AgentSpec spec = parse_agent_spec(agent()).spec;
  StartingRun run = starting_run(testing::run("bot-1"));
  std::string prompt = "Check the queue.";
  HoldDecision hold;
  JobConfig job;
  TimePoint now = at("2024-05-01T12:05:00Z");

  RunStartInput input(std::string source = "spec.heartbeat.prompt") const {
    return {.spec = &spec,
            .run = &run,
            .prompt = {&prompt, nullptr, std::move(source)},
            .earlier = {},
            .hold = &hold,
            .spend = {},
            .pricing = spec.pricing,
            .per_run_tokens = std::nullopt,
            .admitting_policies = "team-a",
            .job = &job,
            .now = now};
  }
};

const Json& template_annotations(const JobPlan& plan) {
  return plan.job["spec"]["template"]["metadata"]["annotations"];
}

TEST(StartPlan, APromptGapRefusesTheRunWithItsReason) {
  const PromptGap gap{kReasonPromptNotFound, "ConfigMap ns/prompts has no key beat"};
  const auto refusal = prompt_refusal({nullptr, &gap, ""});
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->reason, kReasonPromptNotFound);
  EXPECT_EQ(refusal->message, gap.message);
  const std::string text = "hi";
  EXPECT_FALSE(prompt_refusal({&text, nullptr, "spec.heartbeat.prompt"}));
}

TEST(StartPlan, TheJobCarriesWhatTheOperatorTrustsLater) {
  Start s;
  s.hold.cents = 12.5;
  const RunStart start = plan_run_start(s.input());
  ASSERT_TRUE(std::holds_alternative<JobPlan>(start));
  const JobPlan& plan = std::get<JobPlan>(start);
  EXPECT_EQ(plan.job["metadata"]["name"], "bot-1");
  EXPECT_EQ(plan.job["metadata"]["annotations"][kAnnotationStartedAt], "2024-05-01T12:05:00Z");
  EXPECT_EQ(template_annotations(plan)[kAnnotationPolicies], "team-a");
  EXPECT_EQ(template_annotations(plan)[kAnnotationBudgetHold], format_hold_cents(12.5));
  const Json context =
      Json::parse(template_annotations(plan)["heartbeat.dev/context"].get<std::string>());
  EXPECT_NE(context.dump().find("Check the queue."), std::string::npos);
}

TEST(StartPlan, NoBudgetOverTheRunHoldsNothingOnItsJob) {
  Start s;
  const JobPlan plan = std::get<JobPlan>(plan_run_start(s.input()));
  EXPECT_FALSE(template_annotations(plan).contains(kAnnotationBudgetHold));
}

TEST(StartPlan, AContextTooLargeRefusesTheRunNamingThePromptsSource) {
  Start s;
  s.prompt.assign(api::kContextDocumentBytesMax, 'x');
  const RunStart start = plan_run_start(s.input("ConfigMap ns/prompts key beat"));
  ASSERT_TRUE(std::holds_alternative<StartRefusal>(start));
  const StartRefusal& refusal = std::get<StartRefusal>(start);
  EXPECT_EQ(refusal.reason, kReasonContextTooLarge);
  EXPECT_NE(refusal.message.find("ConfigMap ns/prompts key beat"), std::string::npos)
      << refusal.message;
  // Control: the same run with a prompt that fits gets its Job.
  s.prompt.assign(1000, 'x');
  EXPECT_TRUE(std::holds_alternative<JobPlan>(plan_run_start(s.input())));
}

TEST(StartPlan, ARunRefusedEndsFailedAtCostZero) {
  const Json status = failed_before_start_status({kReasonPromptEmpty, "the prompt is empty"},
                                                 at("2024-05-01T12:05:00Z"));
  EXPECT_EQ(status["phase"], "Failed");
  EXPECT_EQ(status["reason"], kReasonPromptEmpty);
  EXPECT_EQ(status["message"], "the prompt is empty");
  EXPECT_EQ(status["startedAt"], status["finishedAt"]);
  EXPECT_EQ(status["usage"]["costCents"], 0);
}

TEST(StartPlanDeathTest, ARunWaitingForBudgetRoomIsNeverPlanned) {
  Start s;
  s.hold.start = false;
  EXPECT_DEATH(plan_run_start(s.input()), "a run waiting for budget room is not started");
}

}  // namespace
}  // namespace hb::controllers
