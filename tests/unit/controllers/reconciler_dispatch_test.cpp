// A pass that counts a finished run and starts the next one creates the
// next run's Job first (the dispatch path must not wait for the counting
// writes, which queue behind other agents' dispatches), and the started
// run's context document still tells the finished run's output, which is
// only stored by a write after the Job. The real AgentReconciler runs
// against a fake ClusterView, reads through a real kube::Client whose
// transport is scripted per request and writes through a recording fake.
#include <gtest/gtest.h>

#include <map>

#include "controllers/model/agent_grants.h"
#include "controllers/model/names.h"
#include "controllers/pod/job_pods.h"
#include "controllers/run/cache_projection.h"
#include "controllers/shell/agent_reconciler.h"
#include "kube/client.h"
#include "kube/request_priority.h"
#include "tests/unit/controllers/fake_agent_api_writes.h"
#include "tests/unit/controllers/fixtures.h"
#include "tests/unit/controllers/scripted_reconciler.h"

namespace hb::controllers {
namespace {

using testing::at;
using testing::FakeAgentApiWrites;
using testing::RecordingApi;
using testing::WriteCall;

constexpr const char* kJobUid = "uid-job-bot-1";
constexpr const char* kFinishedOutput = "the finished run's own words";

// bot-1 (the 12:00 slot) ran and its runner ended with a result; bot-manual-1
// waits Queued behind it. At 12:03 no slot is due: the pass counts bot-1
// and starts bot-manual-1.
struct Harness {
  testing::FakeView view;
  std::shared_ptr<RecordingApi> api = std::make_shared<RecordingApi>();  // the reads
  std::shared_ptr<FakeAgentApiWrites> writes = std::make_shared<FakeAgentApiWrites>();
  Metrics metrics;
  std::unique_ptr<AgentReconciler> reconciler;
  static constexpr std::chrono::steady_clock::time_point kSteadyNow{std::chrono::hours(7)};
  explicit Harness(bool paused = false) {
    view.agents_by_name["bot"] = testing::agent();
    view.agents_by_name["bot"]["spec"]["paused"] = paused;
    view.runs.push_back(testing::with_status(
        testing::run("bot-1", "scheduler", at("2024-05-01T12:00:00Z"), "2024-05-01T12:00:00Z"),
        {{"phase", "Running"},
         {"jobName", "bot-1"},
         {"jobUID", kJobUid},
         {"startedAt", "2024-05-01T12:00:01Z"}}));
    view.runs.push_back(
        testing::run("bot-manual-1", "manual", std::nullopt, "2024-05-01T12:01:00Z"));
    Json job = testing::job("bot-1", "2024-05-01T12:00:01Z");
    job["metadata"]["uid"] = kJobUid;
    view.jobs["bot-1"] = job;
    Json result = Json::parse(testing::result_json(0.5));
    result["output"] = kFinishedOutput;
    Json pod = testing::terminated(testing::pod("bot-1-x", "2024-05-01T12:00:02Z"), 0,
                                   result.dump(), "2024-05-01T12:02:00Z");
    pod["metadata"]["ownerReferences"] =
        Json::array({{{"kind", "Job"}, {"name", "bot-1"}, {"uid", kJobUid}, {"controller", true}}});
    pod["metadata"]["labels"] = {{kLabelBatchControllerUid, kJobUid}};
    view.pods.push_back(pod);
    reconciler = testing::reconciler_over(api, writes, view, metrics, at("2024-05-01T12:03:00Z"),
                                          [] { return kSteadyNow; });
  }
};

// The pass that makes the Job writes the agent status (the charge) after
// it, ends there and asks to be queued again at once; that pass marks the
// finished run counted: the charge before the mark.
TEST(ReconcilerDispatch, TheNextJobGoesBeforeTheWritesThatCountTheLastRun) {
  Harness h;
  const kube::Result<ReconcileResult> first = h.reconciler->reconcile("ns", "bot");
  ASSERT_TRUE(first.ok()) << first.error().describe();
  const auto job = h.writes->first(testing::kCallCreateJob);
  const auto agent_status = h.writes->first(testing::kCallReplaceAgentStatus, "bot");
  ASSERT_TRUE(job && agent_status);
  EXPECT_LT(*job, *agent_status);
  EXPECT_FALSE(h.writes->first(testing::kCallPatchRunStatus, "bot-1"));
  EXPECT_EQ(first.value().requeue_after, kRestOfPassAfter);

  testing::cache_sees(h.view, *h.writes);
  const kube::Result<ReconcileResult> second = h.reconciler->reconcile("ns", "bot");
  ASSERT_TRUE(second.ok()) << second.error().describe();
  const auto counted = h.writes->first(testing::kCallPatchRunStatus, "bot-1");
  ASSERT_TRUE(counted);
  EXPECT_LT(*agent_status, *counted) << "the ledger's order: the charge, then the mark";
  EXPECT_EQ(h.writes->calls[*counted].object["status"]["costRecorded"], true);
  EXPECT_EQ(h.writes->count(testing::kCallCreateJob), 1u)
      << "the second pass adopts the Job the first made";
}

TEST(ReconcilerDispatch, TheStartedRunsContextTellsTheOutputNotYetStored) {
  Harness h;
  ASSERT_TRUE(h.reconciler->reconcile("ns", "bot").ok());
  const auto job = h.writes->first(testing::kCallCreateJob);
  const auto context = h.writes->first(testing::kCallCreateContext);
  ASSERT_TRUE(job);
  bool told = h.writes->calls[*job].object.dump().find(kFinishedOutput) != std::string::npos;
  if (context)
    told =
        told || h.writes->calls[*context].object.dump().find(kFinishedOutput) != std::string::npos;
  EXPECT_TRUE(told) << "bot-1's output reaches bot-manual-1's context document";
}

// A Job that cannot be made (a quota, a webhook) does not hold back the
// count of the run before it: the charge and the mark are written, and the
// pass fails so that the start is retried.
TEST(ReconcilerDispatch, AFailedStartStillCountsTheFinishedRun) {
  Harness h;
  h.writes->failing.insert(testing::kCallCreateJob);
  const kube::Result<ReconcileResult> result = h.reconciler->reconcile("ns", "bot");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, kube::ErrorKind::kForbidden);
  EXPECT_TRUE(h.writes->first(testing::kCallReplaceAgentStatus, "bot"));
  EXPECT_TRUE(h.writes->first(testing::kCallPatchRunStatus, "bot-1"));
}

// Under a saturated rate limiter the counting writes wait behind every other
// agent's dispatch; they give way when this agent's next heartbeat (12:05,
// two minutes on) comes due, so that heartbeat's pass can make its Job. The
// fake records the give-way time the pass set on its thread, which the
// client sends each request with.
TEST(ReconcilerDispatch, ThePassesWritesGiveWayAtTheAgentsNextHeartbeat) {
  Harness h;
  ASSERT_TRUE(h.reconciler->reconcile("ns", "bot").ok());
  testing::cache_sees(h.view, *h.writes);
  ASSERT_TRUE(h.reconciler->reconcile("ns", "bot").ok());
  const auto counted = h.writes->first(testing::kCallPatchRunStatus, "bot-1");
  const auto agent_status = h.writes->first(testing::kCallReplaceAgentStatus, "bot");
  ASSERT_TRUE(counted && agent_status);
  const kube::GiveWayTime expected = Harness::kSteadyNow + std::chrono::minutes(2);
  EXPECT_EQ(h.writes->calls[*counted].give_way, expected);
  EXPECT_EQ(h.writes->calls[*agent_status].give_way, expected);
  EXPECT_FALSE(kube::current_give_way_time()) << "the pass's scope ended with it";
}

// A paused agent has no heartbeat ahead: its writes wait as long as it takes.
TEST(ReconcilerDispatch, APausedAgentsWritesNeverGiveWay) {
  Harness h(/*paused=*/true);
  ASSERT_TRUE(h.reconciler->reconcile("ns", "bot").ok());
  const auto counted = h.writes->first(testing::kCallPatchRunStatus, "bot-1");
  ASSERT_TRUE(counted);
  EXPECT_EQ(h.writes->calls[*counted].give_way, std::nullopt);
}

// The cache keeps a settled run's output only while it is within its
// agent's context window (cluster_cache.h); a run the context shows whose
// output the cache dropped (contextRuns raised since) is read from the API
// server before the Job is made.
constexpr const char* kDroppedOutput = "words the cache let go";

Json earlier_settled_run(bool output_in_cache) {
  Json run = testing::with_status(
      testing::run("bot-0", "scheduler", at("2024-05-01T11:00:00Z"), "2024-05-01T11:00:00Z"),
      {{"phase", "Succeeded"},
       {"costRecorded", true},
       {"finishedAt", "2024-05-01T11:00:30Z"},
       {"output", kDroppedOutput}});
  if (!output_in_cache) drop_output(run);
  return run;
}

bool context_tells(const FakeAgentApiWrites& writes, const std::string& text) {
  for (const char* call : {testing::kCallCreateJob, testing::kCallCreateContext}) {
    const auto at_index = writes.first(call);
    if (at_index && writes.calls[*at_index].object.dump().find(text) != std::string::npos)
      return true;
  }
  return false;
}

// The index in `journal` of the first entry that starts with `prefix` and has `part`.
std::optional<std::size_t> first_in(const std::vector<std::string>& journal,
                                    const std::string& prefix, const std::string& part) {
  for (std::size_t i = 0; i < journal.size(); ++i) {
    if (journal[i].starts_with(prefix) && journal[i].find(part) != std::string::npos) return i;
  }
  return std::nullopt;
}

TEST(ReconcilerDispatch, AContextRunWhoseOutputTheCacheDroppedIsReadAgain) {
  Harness h;
  h.view.runs.push_back(earlier_settled_run(false));
  h.api->get_answers["/heartbeatruns/bot-0"] = {200, {}, earlier_settled_run(true).dump()};
  std::vector<std::string> journal;  // the reads and the writes, in order
  h.api->journal = &journal;
  h.writes->journal = &journal;
  ASSERT_TRUE(h.reconciler->reconcile("ns", "bot").ok());
  const auto read = first_in(journal, "GET ", "/heartbeatruns/bot-0");
  const auto job = first_in(journal, testing::kCallCreateJob, "");
  ASSERT_TRUE(read && job) << ::testing::PrintToString(journal);
  EXPECT_LT(*read, *job);
  EXPECT_TRUE(context_tells(*h.writes, kDroppedOutput));
  EXPECT_TRUE(context_tells(*h.writes, kFinishedOutput));
}

TEST(ReconcilerDispatch, AContextRunWithItsOutputCachedIsNotReadAgain) {
  Harness h;
  h.view.runs.push_back(earlier_settled_run(true));
  ASSERT_TRUE(h.reconciler->reconcile("ns", "bot").ok());
  EXPECT_FALSE(h.api->first("GET", "/heartbeatruns/bot-0"));
  EXPECT_TRUE(context_tells(*h.writes, kDroppedOutput));
}

// Deleted meanwhile: the context goes without it; the run still starts.
TEST(ReconcilerDispatch, AContextRunDeletedMeanwhileIsLeftOut) {
  Harness h;
  h.view.runs.push_back(earlier_settled_run(false));
  ASSERT_TRUE(h.reconciler->reconcile("ns", "bot").ok());
  EXPECT_TRUE(h.api->first("GET", "/heartbeatruns/bot-0"));
  EXPECT_TRUE(h.writes->first(testing::kCallCreateJob));
  EXPECT_FALSE(context_tells(*h.writes, "bot-0"));
}

// A server that cannot answer now: the start waits for the next pass (a
// transient error, requeued), rather than a context that lacks the output.
TEST(ReconcilerDispatch, AContextRunThatCannotBeReadHoldsTheStartBack) {
  Harness h;
  h.view.runs.push_back(earlier_settled_run(false));
  h.api->get_answers["/heartbeatruns/bot-0"] = {
      503, {}, R"({"kind":"Status","code":503,"reason":"ServiceUnavailable"})"};
  const kube::Result<ReconcileResult> result = h.reconciler->reconcile("ns", "bot");
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(result.error().transient()) << result.error().describe();
  EXPECT_FALSE(h.writes->first(testing::kCallCreateJob));
}

// A new Agent (no runs, its first slot minutes away): the first pass makes
// its five per-agent objects (and marks its Lease) and nothing else, and asks to be queued again
// behind every other key; the next pass writes its first status and sends
// nothing about the objects. So a fleet applied at once has every agent's
// objects, which its first heartbeat's dispatch needs, before any agent's
// first status, which nothing waits for.
TEST(ReconcilerDispatch, ANewAgentsObjectsGoBeforeItsFirstStatus) {
  testing::FakeView view;
  view.agents_by_name["bot"] = testing::agent("bot", "2024-05-01T12:00:00Z");
  auto api = std::make_shared<RecordingApi>();
  auto writes = std::make_shared<FakeAgentApiWrites>();
  Metrics metrics;
  auto reconciler =
      testing::reconciler_over(api, writes, view, metrics, at("2024-05-01T12:01:00Z"));

  const kube::Result<ReconcileResult> first = reconciler->reconcile("ns", "bot");
  ASSERT_TRUE(first.ok()) << first.error().describe();
  EXPECT_EQ(first.value().requeue_after, kRestOfPassAfter);
  std::vector<std::string> made;
  for (const WriteCall& c : writes->calls) made.push_back(c.call + " " + c.kind + " " + c.name);
  ASSERT_EQ(made.size(), 6u) << ::testing::PrintToString(made);
  EXPECT_TRUE(api->requests.empty()) << "nothing read";
  for (const char* kind :
       {kKindServiceAccounts, kKindRoles, kKindRoleBindings, kKindLeases, kKindConfigMaps}) {
    bool created = false;
    for (const WriteCall& c : writes->calls)
      created = created || (c.call == testing::kCallCreateAgentObject && c.kind == kind);
    EXPECT_TRUE(created) << kind;
  }
  EXPECT_TRUE(writes->first(testing::kCallMarkAgentObjectsMade, "bot-heartbeat"))
      << "the mark, once all five exist";
  EXPECT_FALSE(writes->first(testing::kCallReplaceAgentStatus))
      << "the status waits for the next pass";

  writes->calls.clear();
  const kube::Result<ReconcileResult> second = reconciler->reconcile("ns", "bot");
  ASSERT_TRUE(second.ok()) << second.error().describe();
  ASSERT_EQ(writes->calls.size(), 1u);
  EXPECT_TRUE(api->requests.empty());
  EXPECT_TRUE(writes->first(testing::kCallReplaceAgentStatus, "bot"));
  EXPECT_NE(second.value().requeue_after, kRestOfPassAfter);
}

}  // namespace
}  // namespace hb::controllers
