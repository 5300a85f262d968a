// The operator's span of a heartbeat (controllers/pod/scheduling_span.h): its
// times, names and ids, and, through the real AgentReconciler over a
// scripted API, that the span a started run's Job yields is the parent its
// runner's TRACEPARENT names.
#include "controllers/pod/scheduling_span.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "api/trace_context.h"
#include "controllers/shell/agent_reconciler.h"
#include "tests/unit/controllers/fixtures.h"
#include "tests/unit/controllers/scripted_reconciler.h"

namespace hb::controllers {
namespace {

using testing::at;

constexpr const char* kRunUid = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
constexpr const char* kTraceId = "7c9e6679742540de944be07fc1f90ae7";

std::string attribute(const otlp::Span& span, const std::string& key) {
  for (const auto& [name, value] : span.attributes) {
    if (name == key) return std::get<std::string>(value);
  }
  return "<absent>";
}

Json run_with_uid(const std::string& source, std::optional<TimePoint> slot) {
  Json run = testing::run("bot-1", source, slot, "2024-05-01T12:00:02Z");
  run["metadata"]["uid"] = kRunUid;
  return run;
}

TEST(SchedulingSpan, AScheduledRunsSpanRunsFromItsSlotToItsJob) {
  const Json run = run_with_uid("scheduler", at("2024-05-01T12:00:00Z"));
  const auto span = scheduling_span(run, {"bot-1", "uid-job", at("2024-05-01T12:00:03Z")});
  ASSERT_TRUE(span);
  const auto parent = api::run_trace_parent(kRunUid);
  ASSERT_TRUE(parent);
  EXPECT_EQ(span->trace_id, kTraceId);
  EXPECT_EQ(span->span_id, parent->parent_span_id) << "the runner's TRACEPARENT names it";
  EXPECT_EQ(span->parent_span_id, "");
  EXPECT_EQ(span->name, kSchedulingSpanName);
  EXPECT_EQ(span->kind, otlp::SpanKind::kProducer);
  EXPECT_EQ(span->start, at("2024-05-01T12:00:00Z"));
  EXPECT_EQ(span->end, at("2024-05-01T12:00:03Z"));
  EXPECT_EQ(attribute(*span, "heartbeat.agent.name"), "bot");
  EXPECT_EQ(attribute(*span, "heartbeat.run.name"), "bot-1");
  EXPECT_EQ(attribute(*span, "k8s.namespace.name"), "ns");
  EXPECT_EQ(attribute(*span, "heartbeat.invocation_source"), "scheduler");
  EXPECT_EQ(attribute(*span, "k8s.job.name"), "bot-1");
  EXPECT_EQ(attribute(*span, "k8s.job.uid"), "uid-job");
}

TEST(SchedulingSpan, AManualRunsSpanStartsAtTheRunsCreationAndNeverAfterItsEnd) {
  const auto manual =
      scheduling_span(run_with_uid("manual", std::nullopt), {"j", "u", at("2024-05-01T12:00:05Z")});
  ASSERT_TRUE(manual);
  EXPECT_EQ(manual->start, at("2024-05-01T12:00:02Z"));
  // A creation stamp ahead of the operator's clock: an empty span, not a negative one.
  const auto early =
      scheduling_span(run_with_uid("manual", std::nullopt), {"j", "u", at("2024-05-01T12:00:01Z")});
  ASSERT_TRUE(early);
  EXPECT_EQ(early->start, early->end);
}

TEST(SchedulingSpan, NoSpanForARunWhoseUidIsNoUuid) {
  EXPECT_FALSE(scheduling_span(testing::run("bot-1"), {"j", "u", at("2024-05-01T12:00:05Z")}));
}

std::string traceparent_of_job(const Json& job) {
  for (const auto& container : job["spec"]["template"]["spec"]["containers"]) {
    for (const auto& env : container.value("env", Json::array())) {
      if (env.value("name", "") == api::kEnvTraceParent) return env.value("value", "");
    }
  }
  return "";
}

TEST(SchedulingSpan, TheReconcilerHandsOverOneSpanPerJobItMakesParentOfTheRunnersTrace) {
  testing::FakeView view;
  view.agents_by_name["bot"] = testing::agent();
  view.runs.push_back(run_with_uid("manual", std::nullopt));
  auto api = std::make_shared<testing::RecordingApi>();
  Metrics metrics;
  ReconcilerConfig config;
  std::vector<otlp::Span> spans;
  config.export_span = [&spans](otlp::Span span) { spans.push_back(std::move(span)); };
  auto reconciler = testing::reconciler_over(testing::client_over(api), view, metrics,
                                             at("2024-05-01T12:03:00Z"), std::move(config));
  const auto result = reconciler->reconcile("ns", "bot");
  ASSERT_TRUE(result.ok()) << result.error().describe();
  const auto job = std::find_if(api->requests.begin(), api->requests.end(), [](const auto& r) {
    return r.method == "POST" && r.url.ends_with("/jobs");
  });
  ASSERT_NE(job, api->requests.end());
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(traceparent_of_job(Json::parse(job->body)),
            api::format_traceparent(spans[0].trace_id, spans[0].span_id));
  EXPECT_EQ(spans[0].start, at("2024-05-01T12:00:02Z"));
  EXPECT_EQ(spans[0].end, at("2024-05-01T12:03:00Z"));
  EXPECT_EQ(attribute(spans[0], "k8s.job.uid"), "uid-made");
}

}  // namespace
}  // namespace hb::controllers
