// The cache keeps Jobs and Pods projected: what is dropped is large, and
// every reading of a Pod or Job decides the same on the projection as on
// the whole object the API server sent.
#include "controllers/run/cache_projection.h"

#include <gtest/gtest.h>

#include "controllers/model/run_view.h"
#include "controllers/pod/job_builder.h"
#include "controllers/pod/job_pods.h"
#include "controllers/run/pod_tombstones.h"
#include "controllers/run/run_pod_state.h"
#include "controllers/run/run_record.h"
#include "controllers/spend/budget_hold_ahead.h"

namespace hb::controllers {
namespace {

const std::string kContext(20000, 'c');  // the run's context document rides on both

Json metadata(const std::string& name) {
  return {{"name", name},
          {"namespace", "team-a"},
          {"uid", name + "-uid"},
          {"resourceVersion", "812"},
          {"creationTimestamp", "2026-03-10T08:00:01Z"},
          {"generation", 1},
          {"labels",
           {{"app.kubernetes.io/managed-by", "heartbeat-operator"},
            {"controller-uid", "job-uid"},
            {"batch.kubernetes.io/controller-uid", "job-uid"},
            {"job-name", "bot-1"}}},
          {"annotations",
           {{"heartbeat.dev/agent-name", "bot"},
            {"heartbeat.dev/run-name", "bot-1"},
            {"heartbeat.dev/context", kContext}}},
          {"ownerReferences", Json::array({{{"apiVersion", "batch/v1"},
                                            {"kind", "Job"},
                                            {"name", "bot-1"},
                                            {"uid", "job-uid"},
                                            {"controller", true},
                                            {"blockOwnerDeletion", true}}})},
          {"managedFields", Json::array({{{"manager", "kube-controller-manager"}}})}};
}

Json pod_spec() {
  Json env = Json::array();
  for (int i = 0; i < 20; ++i) env.push_back({{"name", "HB_" + std::to_string(i)}, {"value", "v"}});
  return {{"containers", Json::array({{{"name", "runner"}, {"image", "runner:1"}, {"env", env}},
                                      {{"name", "tools"}, {"image", "tools:1"}}})},
          {"volumes", Json::array({{{"name", "context"}, {"emptyDir", Json::object()}}})},
          {"restartPolicy", "Never"}};
}

Json container(const std::string& name, Json state) {
  return {{"name", name},
          {"image", name + ":1"},
          {"imageID", "sha256:0123"},
          {"containerID", "containerd://abc"},
          {"ready", false},
          {"restartCount", 0},
          {"lastState", Json::object()},
          {"state", std::move(state)}};
}

Json full_pod(Json runner_state, Json tools_state, const std::string& phase) {
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", metadata("bot-1-x7k2p")},
              {"spec", pod_spec()},
              {"status",
               {{"phase", phase},
                {"hostIP", "10.0.0.2"},
                {"podIP", "10.1.0.9"},
                {"qosClass", "Burstable"},
                {"startTime", "2026-03-10T08:00:02Z"},
                {"conditions", Json::array({{{"type", "PodScheduled"},
                                             {"status", "True"},
                                             {"lastTransitionTime", "2026-03-10T08:00:01Z"}}})},
                {"containerStatuses", Json::array({container("runner", std::move(runner_state)),
                                                   container("tools", std::move(tools_state))})}}}};
  return pod;
}

Json terminated_state(int exit_code, const std::string& message) {
  return {{"terminated",
           {{"exitCode", exit_code},
            {"reason", exit_code == 0 ? "Completed" : "Error"},
            {"message", message},
            {"startedAt", "2026-03-10T08:00:03Z"},
            {"finishedAt", "2026-03-10T08:01:03Z"},
            {"containerID", "containerd://abc"}}}};
}

Json projected_pod(Json pod) {
  project_pod(pod);
  return pod;
}

// Every state a runner's Pod reports in, as the cache sees it.
std::vector<Json> pods_in_every_state() {
  const Json running = {{"running", {{"startedAt", "2026-03-10T08:00:03Z"}}}};
  const Json config_error = {
      {"waiting",
       {{"reason", "CreateContainerConfigError"}, {"message", "secret \"llm\" not found"}}}};
  std::vector<Json> pods = {
      full_pod(running, running, "Running"),
      full_pod(terminated_state(0, R"({"version":1,"stopReason":"done"})"),
               terminated_state(0, "tools"), "Succeeded"),
      full_pod(terminated_state(137, ""), running, "Running"),
      full_pod(running, terminated_state(0, R"({"version":1,"usage":{"costCents":0}})"), "Running"),
      full_pod(config_error, running, "Pending"),
      full_pod({{"waiting", {{"reason", "ImagePullBackOff"}}}}, running, "Pending"),
  };
  Json unscheduled = full_pod(Json::object(), Json::object(), "Pending");
  unscheduled["status"]["conditions"][0]["status"] = "False";
  unscheduled["status"]["conditions"][0]["reason"] = "Unschedulable";
  unscheduled["status"]["conditions"][0]["message"] = "0/1 nodes are available";
  pods.push_back(unscheduled);
  Json deleting = full_pod(running, running, "Running");
  deleting["metadata"]["deletionTimestamp"] = "2026-03-10T08:02:00Z";
  pods.push_back(deleting);
  return pods;
}

TEST(CacheProjection, APodDecidesTheSameProjected) {
  const TimePoint now = *parse_rfc3339("2026-03-10T08:02:10Z");
  for (const Json& full : pods_in_every_state()) {
    const Json projected = projected_pod(full);
    SCOPED_TRACE(full["status"].dump());
    EXPECT_EQ(pod_finished(projected), pod_finished(full));
    const PodExit a = pod_exit(projected), b = pod_exit(full);
    EXPECT_EQ(a.pod_name, b.pod_name);
    EXPECT_EQ(a.exit_code, b.exit_code);
    EXPECT_EQ(a.signal, b.signal);
    EXPECT_EQ(a.terminated_reason, b.terminated_reason);
    EXPECT_EQ(a.message, b.message);
    EXPECT_EQ(a.finished_at, b.finished_at);
    EXPECT_EQ(container_config_error(&projected), container_config_error(&full));
    EXPECT_EQ(config_error_deadline(&projected, now), config_error_deadline(&full, now));
    EXPECT_EQ(stall_message(std::chrono::seconds(60), &projected),
              stall_message(std::chrono::seconds(60), &full));
    EXPECT_EQ(controlled_by_job(projected, "job-uid"), controlled_by_job(full, "job-uid"));
    EXPECT_EQ(tells_an_outcome(projected), tells_an_outcome(full));
    const PodsGoingAway x = pods_going_away({&projected}, now), y = pods_going_away({&full}, now);
    EXPECT_EQ(x.alive, y.alive);
    EXPECT_EQ(x.gone_by, y.gone_by);
  }
}

TEST(CacheProjection, APodKeepsOnlyWhatIsReadAndTheRunnersMessage) {
  const Json full = full_pod(terminated_state(0, "runner-result"),
                             terminated_state(0, "tools-note"), "Succeeded");
  const Json projected = projected_pod(full);
  EXPECT_FALSE(projected.contains("spec"));
  EXPECT_EQ(projected["metadata"]["annotations"],
            Json({{"heartbeat.dev/agent-name", "bot"}, {"heartbeat.dev/run-name", "bot-1"}}));
  EXPECT_FALSE(projected["metadata"].contains("managedFields"));
  EXPECT_EQ(projected["metadata"]["ownerReferences"], full["metadata"]["ownerReferences"]);
  EXPECT_EQ(projected["metadata"]["labels"], full["metadata"]["labels"]);
  EXPECT_FALSE(projected["status"].contains("hostIP"));
  const Json& statuses = projected["status"]["containerStatuses"];
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_EQ(statuses[0],
            Json({{"name", "runner"}, {"state", full["status"]["containerStatuses"][0]["state"]}}));
  EXPECT_EQ(statuses[1]["name"], "tools");
  EXPECT_FALSE(statuses[1]["state"]["terminated"].contains("message"));  // the agent's to write
  EXPECT_EQ(statuses[1]["state"]["terminated"]["exitCode"], 0);
  // The context document and the spec were nearly all of it.
  EXPECT_LT(projected.dump().size() * 20, full.dump().size());
}

TEST(CacheProjection, AJobKeepsItsIdentityOwnersAndConditions) {
  Json full = {{"apiVersion", "batch/v1"},
               {"kind", "Job"},
               {"metadata", metadata("bot-1")},
               {"spec",
                {{"backoffLimit", 0},
                 {"activeDeadlineSeconds", 630},
                 {"template", {{"metadata", metadata("bot-1")}, {"spec", pod_spec()}}}}},
               {"status",
                {{"startTime", "2026-03-10T08:00:01Z"},
                 {"failed", 1},
                 {"conditions",
                  Json::array({{{"type", "Failed"},
                                {"status", "True"},
                                {"reason", "DeadlineExceeded"},
                                {"message", "Job was active longer than specified deadline"}}})}}}};
  full["metadata"]["deletionTimestamp"] = "2026-03-10T08:11:00Z";
  Json projected = full;
  project_job(projected);
  EXPECT_FALSE(projected.contains("spec"));
  // Of the template, only the admitting policies' stamp and the cents held are kept.
  full["spec"]["template"]["metadata"]["annotations"][kAnnotationPolicies] = "team-a";
  full["spec"]["template"]["metadata"]["annotations"][kAnnotationBudgetHold] = "2.500000";
  Json stamped = full;
  project_job(stamped);
  const Json kept = {{kAnnotationPolicies, "team-a"}, {kAnnotationBudgetHold, "2.500000"}};
  EXPECT_EQ(stamped["spec"], Json({{"template", {{"metadata", {{"annotations", kept}}}}}}));
  EXPECT_EQ(projected["status"], Json({{"conditions", full["status"]["conditions"]}}));
  EXPECT_EQ(job_uid_of(&projected, ""), job_uid_of(&full, ""));
  const JobState a = job_state(&projected), b = job_state(&full);
  EXPECT_EQ(a.failed, b.failed);
  EXPECT_EQ(a.deadline, b.deadline);
  EXPECT_EQ(a.fail_message, b.fail_message);
  for (const char* kept : {"name", "namespace", "uid", "resourceVersion", "creationTimestamp",
                           "deletionTimestamp", "ownerReferences"}) {
    EXPECT_EQ(projected["metadata"][kept], full["metadata"][kept]) << kept;
  }
  EXPECT_LT(projected.dump().size() * 20, full.dump().size());
}

// The cache cuts a watched Pod's or Job's text before it parses it: what the
// projection keeps of the cut is what it keeps of the whole object.
TEST(CacheProjection, TheTextCutsKeepWhatTheProjectionsKeep) {
  for (const Json& full : pods_in_every_state()) {
    const std::string text = full.dump();
    const std::string cut = kube::cut_text(text, *pod_text_cut());
    EXPECT_EQ(projected_pod(Json::parse(cut)), projected_pod(full));
    EXPECT_LT(cut.size() * 10, text.size());
  }
  Json job = {
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata", metadata("bot-1")},
      {"spec",
       {{"backoffLimit", 0},
        {"template", {{"metadata", metadata("bot-1")}, {"spec", pod_spec()}}}}},
      {"status",
       {{"active", 1}, {"conditions", Json::array({{{"type", "Complete"}, {"status", "True"}}})}}}};
  for (int stamped = 0; stamped < 2; ++stamped) {
    if (stamped == 1) {
      job["spec"]["template"]["metadata"]["annotations"][kAnnotationPolicies] = "team-a";
      job["spec"]["template"]["metadata"]["annotations"][kAnnotationBudgetHold] = "2.500000";
    }
    const std::string text = job.dump();
    const std::string cut = kube::cut_text(text, *job_text_cut());
    Json a = Json::parse(cut), b = job;
    project_job(a);
    project_job(b);
    EXPECT_EQ(a, b);
    EXPECT_LT(cut.size() * 10, text.size());
  }
}

Json full_run(const std::string& phase, bool counted) {
  return {{"apiVersion", "heartbeat.dev/v1alpha1"},
          {"kind", "HeartbeatRun"},
          {"metadata",
           {{"name", "bot-1"},
            {"namespace", "team-a"},
            {"uid", "run-uid"},
            {"resourceVersion", "900"},
            {"generation", 1},
            {"creationTimestamp", "2026-03-10T08:00:00Z"},
            {"labels", {{"heartbeat.dev/agent", "bot"}, {"heartbeat.dev/phase", phase}}},
            {"annotations", {{"heartbeat.dev/requested-at", "2026-03-10T08:00:00.250000Z"}}},
            {"ownerReferences", Json::array({{{"apiVersion", "heartbeat.dev/v1alpha1"},
                                              {"kind", "Agent"},
                                              {"name", "bot"},
                                              {"uid", "agent-uid"},
                                              {"controller", true}}})}}},
          {"spec",
           {{"agentRef", {{"name", "bot"}}},
            {"invocationSource", "scheduler"},
            {"scheduledTime", "2026-03-10T08:00:00Z"},
            {"triggerDetail", "slot"}}},
          {"status",
           {{"phase", phase},
            {"costRecorded", counted},
            {"reason", "Completed"},
            {"message", "done"},
            {"exitCode", 0},
            {"stopReason", "completed"},
            {"output", "checked the queue"},
            {"jobName", "bot-1"},
            {"jobUID", "job-uid"},
            {"podName", "bot-1-x7k2p"},
            {"startedAt", "2026-03-10T08:00:01Z"},
            {"finishedAt", "2026-03-10T08:01:00Z"},
            {"pauseUntil", "2026-03-10T09:00:00Z"},
            {"durationSeconds", 59},
            {"idle", false},
            {"observedGeneration", 1},
            {"log", {{"ref", "pod/team-a/bot-1-x7k2p/runner"}}},
            {"conditions", Json::array({{{"type", "Complete"}, {"status", "True"}}})},
            {"usage",
             {{"inputTokens", 1200},
              {"outputTokens", 10},
              {"costCents", 0.25},
              {"llmCalls", 2},
              {"toolCalls", 1},
              {"iterations", 2},
              {"reportedCostCents", 0.25}}}}}};
}

// A settled run reads the same projected: its view and what the next runs'
// context takes from it.
TEST(CacheProjection, ASettledRunKeepsWhatItsHistoryIsReadFor) {
  for (const char* phase : {"Succeeded", "Failed", "Cancelled", "TimedOut"}) {
    const Json full = full_run(phase, true);
    Json projected = full;
    project_run(projected);
    // Every member the decisions read of a settled run. Its own UID and its
    // Job's name and UID find its Job and Pods, which the cache has let go.
    RunView expected = view_run(full);
    expected.uid.clear();
    expected.job_name.clear();
    expected.job_uid.clear();
    EXPECT_TRUE(expected == view_run(projected));
    const auto context_full = recent_runs_oldest_first(earlier_runs({&full}), "bot-2", 3);
    const auto context_projected = recent_runs_oldest_first(earlier_runs({&projected}), "bot-2", 3);
    ASSERT_EQ(context_full.size(), 1u);
    ASSERT_EQ(context_projected.size(), 1u);
    EXPECT_EQ(context_full, context_projected);
    for (const char* dropped :
         {"conditions", "log", "podName", "durationSeconds", "idle", "jobName", "jobUID"}) {
      EXPECT_FALSE(projected["status"].contains(dropped)) << dropped;
    }
    for (const char* dropped : {"uid", "ownerReferences", "labels", "generation"}) {
      EXPECT_FALSE(projected["metadata"].contains(dropped)) << dropped;
    }
    EXPECT_LT(projected.dump().size() * 5, full.dump().size() * 4) << projected.dump();
  }
}

// A run that is not settled is still decided and written from: kept whole.
TEST(CacheProjection, ARunNotSettledIsKeptWhole) {
  for (const auto& [phase, counted] : std::vector<std::pair<std::string, bool>>{
           {"Queued", false}, {"Running", false}, {"Succeeded", false}, {"Failed", false}}) {
    const Json full = full_run(phase, counted);
    Json projected = full;
    project_run(projected);
    EXPECT_EQ(projected, full) << phase;
  }
  Json odd = Json({{"status", "none"}});
  EXPECT_NO_THROW(project_run(odd));
}

TEST(CacheProjection, OddShapesAreLeftAlone) {
  for (Json odd : {Json(), Json("text"), Json::array(), Json({{"metadata", "x"}}),
                   Json({{"status", {{"containerStatuses", "none"}}}})}) {
    Json pod = odd, job = odd;  // a malformed object is cut as far as it has a shape
    EXPECT_NO_THROW(project_pod(pod)) << odd.dump();
    EXPECT_NO_THROW(project_job(job)) << odd.dump();
    Json run = odd;
    EXPECT_NO_THROW(project_run(run)) << odd.dump();
  }
}

}  // namespace
}  // namespace hb::controllers
