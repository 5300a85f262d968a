// A slot's run carried by its Job (run_after_job.h): what the Job carries,
// what a pass makes of it, and the text a tenant could put there.
#include "controllers/run/run_after_job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controllers/agent/agent_decision.h"
#include "controllers/model/names.h"
#include "controllers/run/run_record.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using testing::at;

constexpr const char* kRunName = "bot-1714565100";

Json slot_run() {
  Json run =
      make_run_object(view_agent(testing::agent()).spec.spec,
                      RunRequest{kRunName, kSourceScheduler, at("2024-05-01T12:05:00Z"), ""});
  run["metadata"]["annotations"][kAnnotationPolicies] = "team-a";
  trace_before_uid(run);
  return run;
}

// The Job as the operator makes it for the run (only what these read).
Json job_for(const Json& run) {
  return {{"metadata",
           {{"name", job_name_for_run(name_of(run))},
            {"namespace", "ns"},
            {"annotations",
             {{kAnnotationAgentName, "bot"},
              {kAnnotationRunName, name_of(run)},
              {kAnnotationAgentUid, "uid-bot"},
              {kAnnotationRunToMake, run_to_make_text(run).value()}}}}}};
}

Json stored(Json run, const std::string& uid) {
  run["metadata"]["uid"] = uid;
  return run;
}

std::vector<std::string> kinds(const std::vector<JobRunStep>& steps) {
  std::vector<std::string> out;
  for (const JobRunStep& s : steps) {
    const char* kind = s.kind == JobRunStepKind::kMakeRun    ? "make "
                       : s.kind == JobRunStepKind::kHandOver ? "hand over "
                                                             : "delete job ";
    out.push_back(kind + (s.kind == JobRunStepKind::kDeleteJob ? s.job : s.run_name));
  }
  return out;
}

TEST(RunAfterJob, TheJobCarriesTheRunAsItWillBeMade) {
  const Json run = slot_run();
  const std::optional<Json> carried = run_carried_by(job_for(run));
  ASSERT_TRUE(carried.has_value());
  EXPECT_EQ(name_of(*carried), kRunName);
  EXPECT_EQ((*carried)["spec"], run["spec"]);
  EXPECT_EQ((*carried)["metadata"]["annotations"], run["metadata"]["annotations"]);
  EXPECT_EQ((*carried)["metadata"]["labels"], run["metadata"]["labels"]);
  EXPECT_FALSE((*carried)["metadata"].contains("uid"));
  EXPECT_TRUE(awaits_its_run(job_for(run)));
}

TEST(RunAfterJob, TheTraceIdIsStableAndDiffersByRun) {
  const std::string trace(annotation_at(slot_run(), kAnnotationTraceId));
  EXPECT_EQ(trace.size(), 32u);
  EXPECT_EQ(trace, std::string(annotation_at(slot_run(), kAnnotationTraceId)));
  Json other = make_run_object(view_agent(testing::agent()).spec.spec,
                               RunRequest{"bot-1714565400", kSourceScheduler, std::nullopt, ""});
  trace_before_uid(other);
  EXPECT_NE(trace, std::string(annotation_at(other, kAnnotationTraceId)));
}

// What a tenant who may create Jobs could write; each is refused, and the
// untouched Job (positive control) is accepted.
TEST(RunAfterJob, ATextThatDoesNotMatchItsJobIsNotARun) {
  const Json run = slot_run();
  ASSERT_TRUE(run_carried_by(job_for(run)).has_value());
  const auto with_run = [&](const std::function<void(Json&)>& edit) {
    Json carried = run;
    edit(carried);
    Json job = job_for(run);
    job["metadata"]["annotations"][kAnnotationRunToMake] = carried.dump();
    return run_carried_by(job).has_value();
  };
  EXPECT_FALSE(with_run([](Json& r) { r["metadata"]["name"] = "bot-other"; }));
  EXPECT_FALSE(with_run([](Json& r) { r["metadata"]["namespace"] = "kube-system"; }));
  EXPECT_FALSE(with_run([](Json& r) { r["spec"]["agentRef"]["name"] = "victim"; }));
  EXPECT_FALSE(with_run(
      [](Json& r) { r["metadata"]["annotations"][kAnnotationAgentUid] = "uid-earlier-bot"; }));
  EXPECT_FALSE(with_run([](Json& r) { r["kind"] = "ConfigMap"; }));
  Json job = job_for(run);
  job["metadata"]["annotations"][kAnnotationRunToMake] = "{not json";
  EXPECT_FALSE(run_carried_by(job).has_value());
  job["metadata"]["annotations"][kAnnotationRunToMake] =
      std::string(kRunToMakeBytesMax + 1, ' ') + run.dump();
  EXPECT_FALSE(run_carried_by(job).has_value());
  job = job_for(run);
  job["metadata"]["annotations"].erase(kAnnotationAgentUid);
  EXPECT_FALSE(run_carried_by(job).has_value());
}

TEST(RunAfterJob, TheRunIsMadeThenTheJobHandedToIt) {
  const Json run = slot_run();
  EXPECT_THAT(kinds(plan_runs_for_jobs({job_for(run)}, {})),
              ::testing::ElementsAre(std::string("make ") + kRunName,
                                     std::string("hand over ") + kRunName));
  // Made already by this Agent (a crash before the hand-over): only handed over.
  EXPECT_THAT(kinds(plan_runs_for_jobs({job_for(run)}, {stored(run, "uid-r")})),
              ::testing::ElementsAre(std::string("hand over ") + kRunName));
}

TEST(RunAfterJob, ARunNameAnotherHoldsDeletesTheJob) {
  const Json run = slot_run();
  Json theirs = stored(run, "uid-r");
  theirs["metadata"]["annotations"][kAnnotationAgentUid] = "uid-someone-else";
  EXPECT_THAT(kinds(plan_runs_for_jobs({job_for(run)}, {theirs})),
              ::testing::ElementsAre("delete job " + job_name_for_run(kRunName)));
}

TEST(RunAfterJob, AForgedJobGetsNoStep) {
  Json job = job_for(slot_run());
  job["metadata"]["annotations"][kAnnotationAgentName] = "victim";
  EXPECT_TRUE(plan_runs_for_jobs({job}, {}).empty());
}

TEST(RunAfterJob, TheHandOverMakesTheRunItsControllerAndDropsTheText) {
  const Json patch = job_handover_patch(stored(slot_run(), "uid-r"));
  const Json& owner = patch["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["kind"], "HeartbeatRun");
  EXPECT_EQ(owner["name"], kRunName);
  EXPECT_EQ(owner["uid"], "uid-r");
  EXPECT_EQ(owner["controller"], true);
  EXPECT_TRUE(patch["metadata"]["annotations"][kAnnotationRunToMake].is_null());
  Json job = job_for(slot_run());
  job.merge_patch(patch);
  EXPECT_FALSE(awaits_its_run(job));
  EXPECT_TRUE(job_of_run(job, stored(slot_run(), "uid-r")));
}

// A tenant's many HeartbeatPolicies are all stamped on the run: a text past
// the Job's cap is not carried (that run is made before its Job), and it
// never stops the operator.
TEST(RunAfterJob, ARunTooLargeToCarryIsNotCarried) {
  Json run = slot_run();
  ASSERT_TRUE(run_to_make_text(run).has_value()) << "control: a run's own text is carried";
  std::string policies;
  while (policies.size() <= kRunToMakeBytesMax) policies += std::string(200, 'p') + ",";
  run["metadata"]["annotations"][kAnnotationPolicies] = policies;
  EXPECT_FALSE(run_to_make_text(run).has_value());
}

}  // namespace
}  // namespace hb::controllers
