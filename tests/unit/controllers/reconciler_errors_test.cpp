// The reconciler branches on errors as values (kube/errors.h): a transient
// failure while reading the prompt stops the pass and leaves the run alone
// for the retry; only a definite NotFound fails it as PromptNotFound (and
// skips a due slot without a run or a Job, prompt_skip.h). The
// real AgentReconciler runs against a fake ClusterView, reads through a real
// kube::Client whose transport is scripted per request (the errors are
// mapped from HTTP answers) and writes through a recording fake.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "controllers/shell/agent_reconciler.h"
#include "kube/client.h"
#include "tests/unit/controllers/fake_agent_api_writes.h"
#include "tests/unit/controllers/fixtures.h"
#include "tests/unit/controllers/scripted_reconciler.h"

namespace hb::controllers {
namespace {

using testing::at;
using testing::FakeAgentApiWrites;
using testing::WriteCall;

// The reads: the prompt ConfigMap's GET answers what the test says; every
// request is recorded.
class ScriptedApi final : public http::Client {
 public:
  std::function<http::Response()> prompt_answer;
  std::function<http::Response()> run_answer;  // GET of any HeartbeatRun
  std::vector<http::Request> requests;
  http::Response send(const http::Request& r) override {
    requests.push_back(r);
    if (r.method == "GET" && r.url.find("/configmaps/prompts") != std::string::npos) {
      return prompt_answer();
    }
    if (r.method == "GET" && run_answer && r.url.find("/heartbeatruns/") != std::string::npos) {
      return run_answer();
    }
    return {404, {}, R"({"kind":"Status","code":404,"reason":"NotFound"})"};
  }
  http::Response stream(const http::Request&, const http::ChunkHandler&) override {
    return {200, {}, ""};
  }
};

// A call of `call` (kCall*) was made on the object named `name` ("": any)
// with `object_part` in what it sent.
bool sent(const FakeAgentApiWrites& writes, const std::string& call, const std::string& name = "",
          const std::string& object_part = "") {
  for (const WriteCall& c : writes.calls) {
    if (c.call == call && (name.empty() || c.name == name) &&
        c.object.dump().find(object_part) != std::string::npos) {
      return true;
    }
  }
  return false;
}

bool failed_a_run_for_want_of_a_prompt(const FakeAgentApiWrites& writes) {
  return sent(writes, testing::kCallPatchRunStatus, "", "PromptNotFound");
}

struct Harness {
  testing::FakeView view;
  std::shared_ptr<ScriptedApi> api = std::make_shared<ScriptedApi>();  // the reads
  std::shared_ptr<FakeAgentApiWrites> writes = std::make_shared<FakeAgentApiWrites>();
  Metrics metrics;
  std::unique_ptr<AgentReconciler> reconciler;
  Harness() {
    Json agent = testing::agent();
    agent["spec"]["heartbeat"].erase("prompt");
    agent["spec"]["heartbeat"]["promptFrom"] = {
        {"configMapKeyRef", {{"name", "prompts"}, {"key", "heartbeat.md"}}}};
    view.agents_by_name["bot"] = agent;
    view.runs.push_back(testing::run("bot-manual-1", "manual"));
    reconciler = testing::reconciler_over(api, writes, view, metrics, at("2024-05-01T12:06:00Z"));
  }
};

http::Response status_answer(int code, const std::string& reason) {
  return {code, {}, Json{{"kind", "Status"}, {"code", code}, {"reason", reason}}.dump()};
}

TEST(ReconcilerErrors, ATransientPromptReadFailureRetriesAndFailsNoRun) {
  for (const auto& [answer, kind] :
       std::vector<std::pair<std::function<http::Response()>, kube::ErrorKind>>{
           {[] { return status_answer(500, "InternalError"); }, kube::ErrorKind::kServerError},
           {[] { return status_answer(429, "TooManyRequests"); },
            kube::ErrorKind::kTooManyRequests},
           {[]() -> http::Response {
              throw http::TransportError(http::TransportError::Kind::kTimeout, "timed out");
            },
            kube::ErrorKind::kTransport}}) {
    Harness h;
    h.api->prompt_answer = answer;
    const kube::Result<ReconcileResult> result = h.reconciler->reconcile("ns", "bot");
    ASSERT_FALSE(result.ok()) << "the pass stops at the failed read";
    EXPECT_EQ(result.error().kind, kind) << result.error().describe();
    EXPECT_FALSE(failed_a_run_for_want_of_a_prompt(*h.writes));
  }
}

TEST(ReconcilerErrors, ADefiniteNotFoundFailsTheRunAsPromptNotFound) {
  Harness h;
  h.api->prompt_answer = [] { return status_answer(404, "NotFound"); };
  const kube::Result<ReconcileResult> result = h.reconciler->reconcile("ns", "bot");
  ASSERT_TRUE(result.ok()) << result.error().describe();
  EXPECT_TRUE(failed_a_run_for_want_of_a_prompt(*h.writes));
}

// The 12:05 slot is due and the prompt ConfigMap is gone: the slot is
// skipped without a run or a Job, the status and an Event say so.
TEST(ReconcilerErrors, AMissingPromptSkipsTheDueSlotWithoutARunOrJob) {
  Harness h;
  h.view.runs.clear();
  h.api->prompt_answer = [] { return status_answer(404, "NotFound"); };
  // The first pass makes the per-agent objects only (nothing it writes is a
  // heartbeat's): the status comes in the pass the worker queues at once.
  const kube::Result<ReconcileResult> objects = h.reconciler->reconcile("ns", "bot");
  ASSERT_TRUE(objects.ok()) << objects.error().describe();
  EXPECT_EQ(objects.value().requeue_after, kRestOfPassAfter);
  EXPECT_FALSE(sent(*h.writes, testing::kCallReplaceAgentStatus, "bot"));
  const kube::Result<ReconcileResult> result = h.reconciler->reconcile("ns", "bot");
  ASSERT_TRUE(result.ok()) << result.error().describe();
  EXPECT_FALSE(sent(*h.writes, testing::kCallCreateRun));
  EXPECT_FALSE(sent(*h.writes, testing::kCallCreateJob));
  EXPECT_TRUE(sent(*h.writes, testing::kCallReplaceAgentStatus, "bot", "lastSkippedHeartbeat"));
  EXPECT_TRUE(sent(*h.writes, testing::kCallCreateEvent, "", "HeartbeatSkipped"));
  ASSERT_TRUE(result.value().requeue_after);
  EXPECT_LE(*result.value().requeue_after, std::chrono::seconds(kPromptRecheckSeconds));
}

// A run someone asked for with an empty prompt ends at once, saying so,
// without a Job.
TEST(ReconcilerErrors, AManualRunWithAnEmptyPromptFailsWithoutAJob) {
  Harness h;
  h.api->prompt_answer = [] {
    return http::Response{200, {}, R"({"data":{"heartbeat.md":"  \n"}})"};
  };
  const kube::Result<ReconcileResult> result = h.reconciler->reconcile("ns", "bot");
  ASSERT_TRUE(result.ok()) << result.error().describe();
  EXPECT_TRUE(sent(*h.writes, testing::kCallPatchRunStatus, "bot-manual-1", "PromptEmpty"));
  EXPECT_FALSE(sent(*h.writes, testing::kCallCreateJob));
  EXPECT_FALSE(sent(*h.writes, testing::kCallCreateRun));  // the slot is skipped too
}

// A prompt ConfigMap near 1 MiB makes a context document no heartbeat Pod
// can carry: the run ends as ContextTooLarge naming the prompt's source and
// size, without a Job, and the pass succeeds (no "a bug" net, no retry).
TEST(ReconcilerErrors, AContextTooLargeFailsTheRunNamingThePrompt) {
  Harness h;
  h.api->prompt_answer = [] {
    Json object = {{"data", {{"heartbeat.md", std::string(1024 * 1024 - 10, 'x')}}}};
    return http::Response{200, {}, object.dump()};
  };
  const kube::Result<ReconcileResult> result = h.reconciler->reconcile("ns", "bot");
  ASSERT_TRUE(result.ok()) << result.error().describe();
  EXPECT_TRUE(sent(*h.writes, testing::kCallPatchRunStatus, "bot-manual-1", "ContextTooLarge"));
  EXPECT_TRUE(sent(*h.writes, testing::kCallPatchRunStatus, "bot-manual-1",
                   "ConfigMap \\\"prompts\\\" key \\\"heartbeat.md\\\""));
  EXPECT_TRUE(sent(*h.writes, testing::kCallPatchRunStatus, "bot-manual-1", "1048566 bytes"));
  EXPECT_FALSE(sent(*h.writes, testing::kCallCreateJob));
}

// A run counted at its last beat's figure (1 cent) whose mark was written,
// though this pass's copy is older and shows it unmarked with its result
// (2.5 cents): raising the charge would count the difference twice. The
// pass reads the run first and, finding a newer copy, writes nothing.
struct RaisedCharge : Harness {
  RaisedCharge() {
    Json& agent = view.agents_by_name["bot"];
    agent["status"] = {
        {"spend", {{"period", "2024-05"}, {"cents", 1.0}}},
        {"recentRuns", {{{"name", "bot-1714565100"}, {"phase", "TimedOut"}, {"costCents", 1.0}}}}};
    view.runs = {testing::with_status(
        testing::run("bot-1714565100", "scheduler", at("2024-05-01T12:05:00Z")),
        {{"phase", "TimedOut"},
         {"startedAt", "2024-05-01T12:05:00Z"},
         {"finishedAt", "2024-05-01T12:05:50Z"},
         {"usage", {{"costCents", 2.5}, {"inputTokens", 10}, {"outputTokens", 10}}}})};
    api->prompt_answer = [] {
      return http::Response{200, {}, R"({"data":{"heartbeat.md":"Check the farm."}})"};
    };
  }
  http::Response run_copy(const std::string& rv, bool marked) const {
    Json fresh = view.runs[0];
    fresh["metadata"]["resourceVersion"] = rv;
    fresh["status"]["costRecorded"] = marked;
    if (marked) fresh["status"]["usage"]["costCents"] = 1.0;
    return {200, {}, fresh.dump()};
  }
};

TEST(ReconcilerErrors, ARaisedChargeOnAStaleRunCopyWritesNothing) {
  RaisedCharge h;
  h.api->run_answer = [&h] { return h.run_copy("201", true); };
  const kube::Result<ReconcileResult> result = h.reconciler->reconcile("ns", "bot");
  ASSERT_TRUE(result.ok()) << result.error().describe();
  for (const WriteCall& c : h.writes->calls) ADD_FAILURE() << c.call << " " << c.name;
  for (const http::Request& r : h.api->requests) {
    EXPECT_EQ(r.method, "GET") << r.method << " " << r.url << " " << r.body;
  }
  ASSERT_TRUE(result.value().requeue_after);
  EXPECT_EQ(*result.value().requeue_after, std::chrono::milliseconds(1));
}

TEST(ReconcilerErrors, ARaisedChargeOnACurrentCopyIsWrittenThenMarkedConditionally) {
  RaisedCharge h;
  h.api->run_answer = [&h] { return h.run_copy("200", false); };
  const kube::Result<ReconcileResult> result = h.reconciler->reconcile("ns", "bot");
  ASSERT_TRUE(result.ok()) << result.error().describe();
  EXPECT_TRUE(sent(*h.writes, testing::kCallReplaceAgentStatus, "bot", R"("cents":2.5)"));
  // The mark carries the resourceVersion it was decided on: a newer copy
  // would answer 409 instead of being overwritten.
  EXPECT_TRUE(sent(*h.writes, testing::kCallPatchRunStatus, "bot-1714565100",
                   R"("resourceVersion":"200")"));
}

TEST(ReconcilerErrors, APromptThatReadsStartsTheRun) {
  Harness h;
  h.api->prompt_answer = [] {
    return http::Response{200, {}, R"({"data":{"heartbeat.md":"Check the farm."}})"};
  };
  const kube::Result<ReconcileResult> result = h.reconciler->reconcile("ns", "bot");
  ASSERT_TRUE(result.ok()) << result.error().describe();
  EXPECT_FALSE(failed_a_run_for_want_of_a_prompt(*h.writes));
  EXPECT_TRUE(sent(*h.writes, testing::kCallCreateJob));
}

}  // namespace
}  // namespace hb::controllers
