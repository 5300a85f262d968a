// One write between a due slot and its Job: the Job is made first, with no
// owner, carrying the run it stands for; the next pass makes the run from it
// and hands the Job to it (run_after_job.h). The real AgentReconciler runs
// against a fake ClusterView and writes through a recording fake.
#include <gtest/gtest.h>

#include "controllers/model/names.h"
#include "controllers/run/run_after_job.h"
#include "controllers/run/run_record.h"
#include "controllers/shell/agent_reconciler.h"
#include "tests/unit/controllers/fake_agent_api_writes.h"
#include "tests/unit/controllers/fake_agent_source.h"
#include "tests/unit/controllers/fixtures.h"
#include "tests/unit/controllers/scripted_reconciler.h"

namespace hb::controllers {
namespace {

using testing::at;
using testing::FakeAgentApiWrites;
using testing::RecordingApi;
using testing::WriteCall;

constexpr const char* kSlotRun = "bot-1714565100";  // the 12:05 slot's run

// bot heartbeats every 5 minutes from 12:00; at 12:05 its slot is due and
// it has no run yet. Its per-agent objects exist (the Lease says so), so a
// pass's writes are the heartbeat's own.
struct Harness {
  testing::FakeView view;
  std::shared_ptr<RecordingApi> api = std::make_shared<RecordingApi>();
  std::shared_ptr<FakeAgentApiWrites> writes = std::make_shared<FakeAgentApiWrites>();
  Metrics metrics;
  std::unique_ptr<AgentReconciler> reconciler;
  explicit Harness(ReconcilerConfig config = {}) {
    view.agents_by_name["bot"] = testing::agent();
    reconciler = testing::reconciler_over(api, writes, view, metrics, at("2024-05-01T12:05:00Z"),
                                          std::chrono::steady_clock::now, std::move(config));
  }
  void pass() {
    const kube::Result<ReconcileResult> result = reconciler->reconcile("ns", "bot");
    ASSERT_TRUE(result.ok()) << result.error().describe();
  }
  const WriteCall* call(const char* kind, const std::string& name) const {
    const std::optional<std::size_t> i = writes->first(kind, name);
    return i ? &writes->calls[*i] : nullptr;
  }
};

TEST(ReconcilerJobFirst, TheSlotsFirstWriteIsItsJobCarryingTheRun) {
  Harness h;
  h.pass();
  const WriteCall* job = h.call(testing::kCallCreateJob, job_name_for_run(kSlotRun));
  ASSERT_NE(job, nullptr);
  EXPECT_FALSE(h.writes->first(testing::kCallCreateRun)) << "the run is made after its Job";
  EXPECT_FALSE(job->object["metadata"].contains("ownerReferences"))
      << "no owner till the run is made: the Agent's deletion must not take it";
  EXPECT_EQ(annotation_at(job->object, kAnnotationAgentUid), "uid-bot");
  EXPECT_EQ(job->priority.cls, kube::RequestClass::kDispatch);
  const std::optional<Json> carried = run_carried_by(job->object);
  ASSERT_TRUE(carried.has_value());
  EXPECT_EQ(name_of(*carried), kSlotRun);
  EXPECT_EQ(string_at(*carried, "spec/scheduledTime"), "2024-05-01T12:05:00Z");
  EXPECT_EQ(string_at(*carried, "spec/invocationSource"), kSourceScheduler);
  // The runner's trace is the one the run records.
  const std::string trace(annotation_at(*carried, kAnnotationTraceId));
  ASSERT_EQ(trace.size(), 32u);
  EXPECT_NE(job->object.dump().find(trace), std::string::npos);
}

TEST(ReconcilerJobFirst, TheNextPassMakesTheRunAndHandsTheJobToIt) {
  Harness h;
  h.pass();
  const std::size_t first_pass = h.writes->calls.size();
  testing::cache_sees(h.view, *h.writes);
  h.pass();
  const std::optional<std::size_t> made = h.writes->first(testing::kCallCreateRun, kSlotRun);
  const std::optional<std::size_t> handed =
      h.writes->first(testing::kCallHandOverJob, job_name_for_run(kSlotRun));
  ASSERT_TRUE(made && handed);
  EXPECT_GE(*made, first_pass);
  EXPECT_LT(*made, *handed);
  const WriteCall& run = h.writes->calls[*made];
  // Its slot's dispatch, after that slot's Jobs; the hand-over is bookkeeping.
  EXPECT_EQ(run.priority.cls, kube::RequestClass::kDispatch);
  EXPECT_EQ(run.priority.order, 1714565100 * kDispatchStages + 1);
  EXPECT_EQ(h.writes->calls[*handed].priority.cls, kube::RequestClass::kBookkeeping);
  EXPECT_EQ(string_at(run.object, "spec/scheduledTime"), "2024-05-01T12:05:00Z");
  const Json& patch = h.writes->calls[*handed].object;
  ASSERT_EQ(patch["metadata"]["ownerReferences"].size(), 1u);
  EXPECT_EQ(patch["metadata"]["ownerReferences"][0]["kind"], "HeartbeatRun");
  EXPECT_EQ(patch["metadata"]["ownerReferences"][0]["uid"], "uid-made");
  EXPECT_EQ(patch["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_TRUE(patch["metadata"]["annotations"][kAnnotationRunToMake].is_null());
  EXPECT_EQ(h.writes->count(testing::kCallCreateJob), 1u) << "never a second Job for the slot";

  // Handed over, the Job awaits nothing: a third pass makes nothing more.
  const std::size_t second_pass = h.writes->calls.size();
  testing::cache_sees(h.view, *h.writes, first_pass);
  h.pass();
  for (std::size_t i = second_pass; i < h.writes->calls.size(); ++i) {
    EXPECT_NE(h.writes->calls[i].call, testing::kCallCreateRun);
    EXPECT_NE(h.writes->calls[i].call, testing::kCallHandOverJob);
    EXPECT_NE(h.writes->calls[i].call, testing::kCallCreateJob);
  }
}

// A crash after the run was made and before the Job was handed to it: the
// next pass only hands it over.
TEST(ReconcilerJobFirst, ARunMadeBeforeACrashIsNotMadeAgain) {
  Harness h;
  h.pass();
  testing::cache_sees(h.view, *h.writes);
  Json run = *run_carried_by(h.view.jobs.at(job_name_for_run(kSlotRun)));
  run["metadata"]["uid"] = "uid-stored";
  h.view.runs.push_back(run);
  const std::size_t before = h.writes->calls.size();
  h.pass();
  EXPECT_FALSE(h.writes->first(testing::kCallCreateRun));
  const std::optional<std::size_t> handed =
      h.writes->first(testing::kCallHandOverJob, job_name_for_run(kSlotRun));
  ASSERT_TRUE(handed);
  EXPECT_GE(*handed, before);
  EXPECT_EQ(h.writes->calls[*handed].object["metadata"]["ownerReferences"][0]["uid"], "uid-stored");
}

// The run's name is someone else's run (kubectl-made, not this Agent's):
// that heartbeat cannot be recorded, so its Job goes; nothing is handed to
// a run the Agent does not own.
TEST(ReconcilerJobFirst, AJobWhoseRunNameIsTakenIsDeleted) {
  Harness h;
  h.pass();
  testing::cache_sees(h.view, *h.writes);
  Json squatter = testing::run(kSlotRun, "manual");
  squatter["metadata"]["annotations"] = {{kAnnotationAgentUid, "uid-someone-else"}};
  h.view.runs.push_back(squatter);
  h.writes->existing[kSlotRun] = squatter;  // a create of that name finds it
  h.pass();
  EXPECT_TRUE(h.writes->first(testing::kCallDeleteJob, job_name_for_run(kSlotRun)));
  EXPECT_FALSE(h.writes->first(testing::kCallHandOverJob));
  // The slot, still due for this Agent, is tried as a run create (which
  // finds the name taken), never as a second Job.
  EXPECT_EQ(h.writes->count(testing::kCallCreateJob), 1u);
}

// A Job whose text does not check (here: it names another run than its
// own Job name says) is not one the operator made: left alone. Positive
// control: the same Job with its own text gets its run.
TEST(ReconcilerJobFirst, AJobCarryingAForgedRunIsLeftAlone) {
  for (bool forged : {true, false}) {
    Harness h;
    h.pass();
    testing::cache_sees(h.view, *h.writes);
    Json& job = h.view.jobs.at(job_name_for_run(kSlotRun));
    if (forged) {
      Json carried = *run_carried_by(job);
      carried["metadata"]["name"] = "bot-victim";
      job["metadata"]["annotations"][kAnnotationRunToMake] = carried.dump();
    }
    const std::size_t before = h.writes->calls.size();
    h.pass();
    bool touched = false;
    for (std::size_t i = before; i < h.writes->calls.size(); ++i) {
      const WriteCall& c = h.writes->calls[i];
      touched = touched || c.call == testing::kCallHandOverJob ||
                c.call == testing::kCallDeleteJob ||
                (c.call == testing::kCallCreateRun && c.name == "bot-victim");
    }
    EXPECT_EQ(touched, !forged) << (forged ? "forged" : "its own text");
  }
}

// The Agent deleted before the run was made: the run is still made (the
// heartbeat's record and charge are kept), then tended as an orphan.
TEST(ReconcilerJobFirst, TheRunIsMadeWhenItsAgentIsGone) {
  Harness h;
  h.pass();
  testing::cache_sees(h.view, *h.writes);
  h.view.agents_by_name.clear();
  h.pass();
  EXPECT_TRUE(h.writes->first(testing::kCallCreateRun, kSlotRun));
  EXPECT_TRUE(h.writes->first(testing::kCallHandOverJob, job_name_for_run(kSlotRun)));
}

// A Job the API server refuses (a quota): the run is made Queued, so the
// slot is not recorded as handled without it, and the pass fails.
TEST(ReconcilerJobFirst, ARefusedJobLeavesTheRunQueued) {
  Harness h;
  h.writes->failing.insert(testing::kCallCreateJob);
  const kube::Result<ReconcileResult> result = h.reconciler->reconcile("ns", "bot");
  ASSERT_FALSE(result.ok());
  const std::optional<std::size_t> job = h.writes->first(testing::kCallCreateJob);
  const std::optional<std::size_t> run = h.writes->first(testing::kCallCreateRun, kSlotRun);
  ASSERT_TRUE(job && run);
  EXPECT_LT(*job, *run);
}

// A tenant who makes many HeartbeatPolicies over its Agent makes the run's
// policies annotation larger than a Job may carry: that slot's run is made
// first and owns its Job, and the operator goes on.
TEST(ReconcilerJobFirst, ARunTooLargeToCarryIsMadeBeforeItsJob) {
  auto index = std::make_shared<PolicyIndex>([](const std::string&) {});
  testing::FakeAgents agents;
  index->read_agents_from(agents.source());
  agents.put(*index, "ns/bot", testing::agent());
  const std::size_t policies = kRunToMakeBytesMax / 60 + 1;
  for (std::size_t i = 0; i < policies; ++i) {
    const Json policy = {{"metadata",
                          {{"namespace", "ns"},
                           {"name", "p-" + std::to_string(i) + std::string(56, 'x')},
                           {"generation", 1},
                           {"uid", "up" + std::to_string(i)}}},
                         {"spec", {{"selector", Json::object()}}}};
    index->policy_changed(nullptr, &policy);
  }
  ReconcilerConfig config;
  config.policies = index;
  Harness h(std::move(config));
  h.pass();
  const std::optional<std::size_t> run = h.writes->first(testing::kCallCreateRun, kSlotRun);
  const std::optional<std::size_t> job =
      h.writes->first(testing::kCallCreateJob, job_name_for_run(kSlotRun));
  ASSERT_TRUE(run.has_value()) << "the run is made, not carried";
  ASSERT_TRUE(job.has_value()) << "and its heartbeat starts";
  EXPECT_LT(*run, *job);
  const Json& job_object = h.writes->calls[*job].object;
  EXPECT_FALSE(awaits_its_run(job_object));
  EXPECT_TRUE(job_object["metadata"].contains("ownerReferences")) << "its run owns it at once";
}

}  // namespace
}  // namespace hb::controllers
