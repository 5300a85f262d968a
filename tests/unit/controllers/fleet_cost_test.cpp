// The fleet cost counter, heartbeat_cost_cents_total, is what the dashboard's
// spend panels read (spend in the last 24 h, spend rate). It must equal the
// sum of the charges the operator wrote on the runs (status.usage.costCents
// of each run it marked costRecorded), each counted once however many passes
// see the run, and the spend the Agent's status adds up. The real
// AgentReconciler runs passes over a fake cache that takes in each write the
// API accepted, with a new resourceVersion, as the informers would.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "controllers/model/names.h"
#include "controllers/pod/job_pods.h"
#include "controllers/runtime/metrics.h"
#include "controllers/shell/agent_reconciler.h"
#include "tests/unit/controllers/fixtures.h"
#include "tests/unit/controllers/scripted_reconciler.h"

namespace hb::controllers {
namespace {

using testing::at;

// The list of memory ConfigMaps answers empty (the rest as RecordingApi does).
std::shared_ptr<testing::RecordingApi> make_api() {
  auto api = std::make_shared<testing::RecordingApi>();
  api->get_answers["/configmaps?"] = {
      200, {}, R"({"kind":"ConfigMapList","metadata":{"resourceVersion":"1"},"items":[]})"};
  return api;
}

constexpr const char* kCostCounter = "heartbeat_cost_cents_total";
constexpr double kInputCentsPerMillionTokens = 1000;
constexpr double kOutputCentsPerMillionTokens = 10000;
// What every runner claims a run cost; the operator charges tokens x price.
constexpr double kRunnerClaimCents = 999;
// Cents are compared to a millionth, the spend ledger's resolution.
constexpr double kCentsTolerance = 1e-6;

// A merge patch's status onto the stored one (null deletes a field).
void merge_status(Json& run, const Json& patch_status) {
  for (auto it = patch_status.begin(); it != patch_status.end(); ++it) {
    if (it.value().is_null()) {
      run["status"].erase(it.key());
    } else {
      run["status"][it.key()] = it.value();
    }
  }
}

struct Fleet {
  testing::FakeView view;
  std::shared_ptr<testing::RecordingApi> api = make_api();
  std::shared_ptr<kube::Client> client = testing::client_over(api);
  ReconcilerConfig config;  // with_ledger(): the durable ledger, as the operator runs
  Metrics metrics;
  std::size_t seen = 0;  // requests already taken into the view
  int version = 1000;    // the resourceVersion of the next object the view takes in
  double charged = 0;    // the sum of the costs written on counted runs
  int counted = 0;

  Fleet() {
    Json a = testing::agent();
    a["spec"]["model"]["pricing"] = {{"inputCentsPerMillionTokens", kInputCentsPerMillionTokens},
                                     {"outputCentsPerMillionTokens", kOutputCentsPerMillionTokens}};
    a["spec"]["paused"] = true;  // no new slot: only the runs below
    view.agents_by_name["bot"] = a;
  }

  // Run NAME, started at `started`, whose runner ended with these tokens.
  void finished_run(const std::string& name, const char* started, const char* ended,
                    int64_t input_tokens, int64_t output_tokens) {
    const std::string job_uid = "uid-job-" + name;
    view.runs.push_back(testing::with_status(
        testing::run(name, "manual", std::nullopt, started),
        {{"phase", "Running"}, {"jobName", name}, {"jobUID", job_uid}, {"startedAt", started}}));
    Json job = testing::job(name, started);
    job["metadata"]["uid"] = job_uid;
    view.jobs[name] = job;
    Json pod = testing::terminated(
        testing::pod(name + "-x", started), 0,
        testing::result_json(kRunnerClaimCents, input_tokens, output_tokens), ended);
    pod["metadata"]["ownerReferences"] =
        Json::array({{{"kind", "Job"}, {"name", name}, {"uid", job_uid}, {"controller", true}}});
    pod["metadata"]["labels"] = {{kLabelBatchControllerUid, job_uid}};
    view.pods.push_back(pod);
  }

  // The writes since the last call the API accepted, into the cache; the
  // charges of runs marked counted, into `charged`.
  void take_in_writes() {
    for (; seen < api->requests.size(); ++seen) {
      const http::Request& r = api->requests[seen];
      const Json body = Json::parse(r.body, nullptr, false);
      if (!body.is_object() || !body.contains("status")) continue;
      const std::string& refused = api->fail_url_part;
      if (!refused.empty() && r.url.find(refused) != std::string::npos) continue;
      if (r.url.find("/agents/bot/status") != std::string::npos) {
        view.agents_by_name["bot"]["status"] = body["status"];
        view.agents_by_name["bot"]["metadata"]["resourceVersion"] = std::to_string(++version);
        continue;
      }
      for (Json& run : view.runs) {
        const std::string path = "/heartbeatruns/" + string_at(run, "metadata/name") + "/status";
        if (!r.url.ends_with(path)) continue;
        const bool was_counted = bool_at(run["status"], "costRecorded");
        merge_status(run, body["status"]);
        run["metadata"]["resourceVersion"] = std::to_string(++version);
        if (!was_counted && bool_at(run["status"], "costRecorded")) {
          charged += number_at(run["status"], "usage/costCents").value_or(0);
          ++counted;
        }
      }
    }
  }

  void with_ledger() { config.ledger = std::make_shared<LedgerStore>(client, "heartbeat-system"); }

  // The last finished run's result carries `durations` as its
  // modelCallDurations, and `llm_calls` model calls (fixtures.h says 2).
  void with_durations(const Json& durations, int64_t llm_calls = 2) {
    Json& message = view.pods.back()["status"]["containerStatuses"][0]["state"]["terminated"];
    Json result = Json::parse(message["message"].get<std::string>());
    result["modelCallDurations"] = durations;
    result["usage"]["llmCalls"] = llm_calls;
    message["message"] = result.dump();
  }

  // A process started afresh: a ledger store that lists what the API server
  // holds (the ledger ConfigMap last written, when `keep_ledger`), and a
  // reconciler of its own (its memory of observed runs gone).
  void restart(bool keep_ledger) {
    Json items = Json::array();
    for (auto r = api->requests.rbegin(); keep_ledger && r != api->requests.rend(); ++r) {
      if (r->method == "GET" || r->url.find("/configmaps") == std::string::npos) continue;
      Json stored = Json::parse(r->body);
      stored["metadata"]["resourceVersion"] = std::to_string(++version);
      items.push_back(stored);
      break;
    }
    api->get_answers["/configmaps?"] = {
        200,
        {},
        Json{{"kind", "ConfigMapList"}, {"metadata", {{"resourceVersion", "1"}}}, {"items", items}}
            .dump()};
    with_ledger();
  }

  // One pass of a reconciler of its own; whether it went through.
  bool pass(const char* now) {
    auto reconciler = testing::reconciler_over(client, view, metrics, at(now), config);
    const bool ok = reconciler->reconcile("ns", "bot").ok();
    take_in_writes();
    return ok;
  }

  void passes(const char* now, int count) {
    auto reconciler = testing::reconciler_over(client, view, metrics, at(now), config);
    for (int i = 0; i < count; ++i) {
      const kube::Result<ReconcileResult> done = reconciler->reconcile("ns", "bot");
      ASSERT_TRUE(done.ok()) << done.error().describe();
      take_in_writes();
    }
  }

  double counter() const { return metrics.value(kCostCounter, {}); }
  double agent_spend() const {
    return number_at(view.agents_by_name.at("bot"), "status/spend/cents").value_or(0);
  }
};

double cents_for(int64_t input_tokens, int64_t output_tokens) {
  return (input_tokens * kInputCentsPerMillionTokens +
          output_tokens * kOutputCentsPerMillionTokens) /
         1e6;
}

TEST(FleetCost, TheCounterIsTheSumOfTheRunsChargesCountedOnce) {
  Fleet f;
  f.finished_run("bot-1", "2024-05-01T12:01:00Z", "2024-05-01T12:02:00Z", 12000, 3000);
  f.passes("2024-05-01T12:03:00Z", 3);
  ASSERT_EQ(f.counted, 1);
  EXPECT_NEAR(f.charged, cents_for(12000, 3000), kCentsTolerance);  // the operator's price
  EXPECT_NEAR(f.counter(), f.charged, kCentsTolerance);

  f.finished_run("bot-2", "2024-05-01T12:04:00Z", "2024-05-01T12:05:00Z", 70000, 2000);
  f.finished_run("bot-3", "2024-05-01T12:04:30Z", "2024-05-01T12:05:30Z", 500, 40);
  f.passes("2024-05-01T12:06:00Z", 4);
  ASSERT_EQ(f.counted, 3);
  const double expected = cents_for(12000, 3000) + cents_for(70000, 2000) + cents_for(500, 40);
  EXPECT_NEAR(f.charged, expected, kCentsTolerance);
  EXPECT_NEAR(f.counter(), f.charged, kCentsTolerance);
  EXPECT_NEAR(f.agent_spend(), f.charged, kCentsTolerance);

  // More passes over runs already counted add nothing.
  f.passes("2024-05-01T12:07:00Z", 3);
  EXPECT_EQ(f.counted, 3);
  EXPECT_NEAR(f.counter(), expected, kCentsTolerance);
  EXPECT_GT(f.counter(), 0);
}

// gen_ai_client_token_usage is observed where the ledger charges: once per
// run, the tokens the operator charged (never the runner's claim).
TEST(FleetCost, TheGenAiTokenHistogramHoldsEachChargedRunOnce) {
  Fleet f;
  f.with_ledger();
  f.finished_run("bot-1", "2024-05-01T12:01:00Z", "2024-05-01T12:02:00Z", 12000, 3000);
  f.finished_run("bot-2", "2024-05-01T12:01:30Z", "2024-05-01T12:02:30Z", 500, 40);
  f.passes("2024-05-01T12:03:00Z", 3);
  f.passes("2024-05-01T12:04:00Z", 2);
  ASSERT_EQ(f.counted, 2);
  EXPECT_NEAR(f.counter(), cents_for(12000, 3000) + cents_for(500, 40), kCentsTolerance);
  const std::string text = f.metrics.render();
  const std::string series =
      R"({gen_ai_operation_name="invoke_agent",gen_ai_provider_name="openai",)"
      R"(gen_ai_request_model="gpt-4o-mini",gen_ai_token_type=)";
  for (const auto& [type, sum] : {std::pair{"input", "12500"}, std::pair{"output", "3040"}}) {
    const std::string labels = series + "\"" + type + "\"}";
    EXPECT_NE(text.find("gen_ai_client_token_usage_count" + labels + " 2\n"), std::string::npos)
        << text;
    EXPECT_NE(text.find("gen_ai_client_token_usage_sum" + labels + " " + sum + "\n"),
              std::string::npos)
        << text;
  }
}

// A call summary of two answered calls (0.5 s and 4 s) and, with
// `failed_timeout`, one that timed out after 30 s.
Json two_calls(bool failed_timeout = false) {
  Json counts = Json::array({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  Json durations = {{"bucketCounts", counts}, {"sumSeconds", 4.5}};
  durations["bucketCounts"][6] = 1;  // 0.5 s
  durations["bucketCounts"][9] = 1;  // 4 s
  if (failed_timeout) {
    counts[12] = 1;  // 30 s
    durations["failed"] = {{"timeout", {{"bucketCounts", counts}, {"sumSeconds", 30}}}};
  }
  return durations;
}

// The duration histogram's `part` (count, sum) in the series of `labels`
// as /metrics shows it (0 when there is none).
double duration(Metrics& metrics, const Labels& labels, const std::string& part = "count") {
  const std::string text = metrics.render();
  const std::string line = "\ngen_ai_client_operation_duration_seconds_" + part + "{" +
                           Metrics::label_text(labels) + "} ";
  const std::size_t at = text.find(line);
  return at == std::string::npos ? 0 : std::strtod(text.c_str() + at + line.size(), nullptr);
}

double duration_count(Metrics& metrics, const Labels& labels) {
  return duration(metrics, labels);
}

const Labels kChatLabels = {{"gen_ai_operation_name", "chat"},
                            {"gen_ai_provider_name", "openai"},
                            {"gen_ai_request_model", "gpt-4o-mini"}};

Labels with_error_type(Labels labels, const std::string& type) {
  labels.emplace_back("error_type", type);
  return labels;
}

// gen_ai_client_operation_duration_seconds comes from the runner's
// summary, believed when the run finished and kept on it, and is observed
// with the charge: once per run, however many passes see the run.
TEST(FleetCost, TheGenAiDurationHistogramHoldsEachChargedRunOnce) {
  Fleet f;
  f.with_ledger();
  for (const char* name : {"bot-1", "bot-2"}) {
    f.finished_run(name, "2024-05-01T12:01:00Z", "2024-05-01T12:02:00Z", 500, 40);
    f.with_durations(two_calls());
  }
  f.passes("2024-05-01T12:03:00Z", 3);
  f.passes("2024-05-01T12:04:00Z", 2);
  ASSERT_EQ(f.counted, 2);
  const std::string text = f.metrics.render();
  const std::string labels = R"({gen_ai_operation_name="chat",gen_ai_provider_name="openai",)"
                             R"(gen_ai_request_model="gpt-4o-mini"})";
  EXPECT_NE(text.find("gen_ai_client_operation_duration_seconds_count" + labels + " 4\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gen_ai_client_operation_duration_seconds_sum" + labels + " 9\n"),
            std::string::npos)
      << text;
}

// A call that failed reaches the histogram from the run's result, under
// its error type, once; the answered calls' series stays without one.
TEST(FleetCost, AFailedCallsDurationReachesTheHistogramWithItsErrorType) {
  Fleet f;
  f.with_ledger();
  f.finished_run("bot-1", "2024-05-01T12:01:00Z", "2024-05-01T12:02:00Z", 500, 40);
  const Json durations = two_calls(true);
  f.with_durations(durations, 3);  // three model calls: two answered, one failed
  f.passes("2024-05-01T12:03:00Z", 3);
  ASSERT_EQ(f.counted, 1);
  const Json& run = f.view.runs.back();
  EXPECT_EQ(run["status"]["usage"]["modelCallDurations"], durations) << run.dump();
  EXPECT_EQ(duration_count(f.metrics, kChatLabels), 2) << f.metrics.render();
  EXPECT_EQ(duration_count(f.metrics, with_error_type(kChatLabels, "timeout")), 1)
      << f.metrics.render();
  EXPECT_EQ(duration(f.metrics, with_error_type(kChatLabels, "timeout"), "sum"), 30);
}

// The Agent is gone when run bot-1 finishes (orphan_plan.h): its model
// calls, two answered and one timed out, are charged without it.
void orphan_run(Fleet& f) {
  f.with_ledger();
  f.finished_run("bot-1", "2024-05-01T12:01:00Z", "2024-05-01T12:02:00Z", 500, 40);
  f.with_durations(two_calls(true), 3);
  f.view.agents_by_name.erase("bot");
}

// Without its Agent the run's series share _OTHER for provider and model.
const Labels kOrphanLabels = {{"gen_ai_operation_name", "chat"},
                              {"gen_ai_provider_name", "_OTHER"},
                              {"gen_ai_request_model", "_OTHER"}};

TEST(FleetCost, AnOrphanedRunsDurationsAreObservedOnce) {
  Fleet f;
  orphan_run(f);
  ASSERT_TRUE(f.pass("2024-05-01T12:03:00Z"));
  ASSERT_TRUE(bool_at(f.view.runs.back()["status"], "costRecorded")) << f.view.runs.back().dump();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(f.pass("2024-05-01T12:04:00Z"));
  EXPECT_EQ(duration_count(f.metrics, kOrphanLabels), 2) << f.metrics.render();
  EXPECT_EQ(duration_count(f.metrics, with_error_type(kOrphanLabels, "timeout")), 1)
      << f.metrics.render();
}

// The orphan pass charges the ledger, then its mark fails and the process
// dies. The next process charges the run again (the ledger counts it once)
// and must not observe its calls again. The control: a process whose ledger
// never counted the run observes them a second time, which the same check
// sees.
TEST(FleetCost, AnOrphanedRunRechargedAfterACrashIsNotObservedTwice) {
  for (const bool ledger_kept : {true, false}) {
    Fleet f;
    orphan_run(f);
    f.api->fail_url_part = "/heartbeatruns/bot-1/status";
    ASSERT_FALSE(f.pass("2024-05-01T12:03:00Z")) << "the mark fails";
    ASSERT_TRUE(f.api->first("POST", "/configmaps")) << "the ledger was charged";
    ASSERT_FALSE(bool_at(f.view.runs.back()["status"], "costRecorded"));
    ASSERT_EQ(duration_count(f.metrics, kOrphanLabels), 2) << f.metrics.render();

    f.api->fail_url_part.clear();
    f.restart(ledger_kept);
    const std::size_t before = f.api->requests.size();
    ASSERT_TRUE(f.pass("2024-05-01T12:04:00Z"));
    ASSERT_TRUE(bool_at(f.view.runs.back()["status"], "costRecorded"));
    bool charged_again = false;
    for (std::size_t i = before; i < f.api->requests.size(); ++i) {
      charged_again =
          charged_again || (f.api->requests[i].method != "GET" &&
                            f.api->requests[i].url.find("/configmaps") != std::string::npos);
    }
    EXPECT_TRUE(charged_again) << "the second process wrote the ledger with the run's charge";
    const double calls = ledger_kept ? 2 : 4;
    EXPECT_EQ(duration_count(f.metrics, kOrphanLabels), calls)
        << "ledger kept: " << ledger_kept << "\n"
        << f.metrics.render();
    EXPECT_EQ(duration_count(f.metrics, with_error_type(kOrphanLabels, "timeout")), calls / 2)
        << "ledger kept: " << ledger_kept;
  }
}

}  // namespace
}  // namespace hb::controllers
