// The operator's own spans (operator/tracing.h): --otel-endpoint and the
// OTEL_* variables decide, spans only; what the exporter lost is on /metrics;
// and the real reconciler, handing its spans to a slow-drip collector, is
// not slowed by it.
#include "operator/tracing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "operator/config.h"
#include "tests/unit/controllers/fixtures.h"
#include "tests/unit/controllers/scripted_reconciler.h"
#include "tests/unit/otlp/raw_collector.h"

namespace hb::operator_ {
namespace {

otlp::EnvLookup env_of(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const char* name) -> std::optional<std::string> {
    auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

TEST(OperatorTracing, OffUnlessTheFlagOrTheStandardVariablesNameAnEndpoint) {
  EXPECT_FALSE(operator_trace_config("", env_of({})));
  const auto from_flag = operator_trace_config("http://collector.obs:4318/", env_of({}));
  ASSERT_TRUE(from_flag);
  EXPECT_EQ(from_flag->traces_url, "http://collector.obs:4318/v1/traces");
  EXPECT_EQ(from_flag->metrics_url, "") << "the operator's metrics are its /metrics";
  EXPECT_EQ(from_flag->service_name, kOperatorServiceName);
  const auto from_env =
      operator_trace_config("", env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"},
                                        {"OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20t"},
                                        {"OTEL_SERVICE_NAME", "hb-op"}}));
  ASSERT_TRUE(from_env);
  EXPECT_EQ(from_env->traces_url, "http://env:4318/v1/traces");
  EXPECT_EQ(from_env->service_name, "hb-op");
  ASSERT_EQ(from_env->headers.size(), 1u);
  const auto flag_wins = operator_trace_config(
      "http://flag:4318", env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"}}));
  ASSERT_TRUE(flag_wins);
  EXPECT_EQ(flag_wins->traces_url, "http://flag:4318/v1/traces");
  EXPECT_FALSE(operator_trace_config("http://flag:4318", env_of({{"OTEL_SDK_DISABLED", "true"}})));
}

// The span exporter behind --otel-endpoint reads the standard timeouts too.
TEST(OperatorTracing, TheStandardExportTimeoutsApplyBesideTheFlag) {
  const auto timed = operator_trace_config("http://flag:4318",
                                           env_of({{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "750"}}));
  ASSERT_TRUE(timed);
  EXPECT_EQ(timed->export_timeout, std::chrono::milliseconds(750));
  EXPECT_TRUE(timed->warnings.empty());
  const auto bad =
      operator_trace_config("http://flag:4318", env_of({{"OTEL_EXPORTER_OTLP_TIMEOUT", "ten"}}));
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->export_timeout, otlp::kExportTimeout);
  ASSERT_EQ(bad->warnings.size(), 1u);
  EXPECT_THAT(bad->warnings[0], ::testing::HasSubstr("OTEL_EXPORTER_OTLP_TIMEOUT"));
}

TEST(OperatorTracing, TheFlagTakesAnHttpUrl) {
  const auto none = [](const std::string&) { return std::optional<std::string>(); };
  ConfigResult r = parse_config({"--otel-endpoint=http://collector.obs:4318"}, none);
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->otel_endpoint, "http://collector.obs:4318");
  r = parse_config({"--otel-endpoint=collector:4317"}, none);
  EXPECT_FALSE(r.config);
  EXPECT_THAT(r.error, ::testing::HasSubstr("--otel-endpoint"));
}

TEST(OperatorTracing, SpansACollectorRefusedAreCountedOnTheMetricsEndpoint) {
  // Nothing listens on port 1 of the loopback: every export fails at once.
  auto config = operator_trace_config("http://127.0.0.1:1", env_of({}));
  ASSERT_TRUE(config);
  controllers::Metrics metrics;
  controllers::describe_operator_metrics(metrics);
  OperatorTracing tracing(*config, "heartbeat-system");
  otlp::Span span;
  span.trace_id = otlp::random_hex_id(otlp::kTraceIdBytes);
  span.span_id = otlp::random_hex_id(otlp::kSpanIdBytes);
  span.name = "schedule_heartbeat";
  tracing.offer(span);
  tracing.offer(span);
  tracing.shutdown();
  tracing.export_metrics(metrics);
  EXPECT_EQ(metrics.value("heartbeat_otlp_spans_dropped_total", {{"reason", "export_failed"}}), 2);
  EXPECT_EQ(metrics.value("heartbeat_otlp_spans_exported_total", {}), 0);
  EXPECT_THAT(metrics.render(),
              ::testing::HasSubstr("# TYPE heartbeat_otlp_spans_dropped_total counter"));
}

// Every write succeeds, the body echoed with a uid.
class EchoApi final : public http::Client {
 public:
  http::Response send(const http::Request& r) override {
    if (r.method == "GET") return {404, {}, R"({"kind":"Status","code":404,"reason":"NotFound"})"};
    controllers::Json body = controllers::Json::parse(r.body, nullptr, false);
    if (body.is_object()) {
      body["metadata"]["uid"] = "uid-made";
      body["metadata"]["resourceVersion"] = "300";
    }
    return {r.method == "POST" ? 201 : 200, {}, body.dump()};
  }
  http::Response stream(const http::Request&, const http::ChunkHandler&) override {
    return {200, {}, ""};
  }
};

TEST(OperatorTracing, ASlowDripCollectorNeverSlowsAReconcile) {
  constexpr int kStarts = 40;
  constexpr auto kReconcileMax = std::chrono::milliseconds(500);  // the export timeout is 2 s
  otlp::testing::RawCollector collector(otlp::testing::RawCollector::Mode::kSlowDrip);
  auto config = operator_trace_config(collector.url(), env_of({}));
  ASSERT_TRUE(config);
  config->export_interval = std::chrono::milliseconds(10);  // always sending, always stuck
  config->queue_spans_max = 8;
  OperatorTracing tracing(*config, "heartbeat-system");
  auto api = std::make_shared<EchoApi>();
  std::chrono::steady_clock::duration slowest{0};
  for (int i = 0; i < kStarts; ++i) {
    controllers::testing::FakeView view;
    view.agents_by_name["bot"] = controllers::testing::agent();
    controllers::Json run = controllers::testing::run("bot-1", "manual");
    char uid[37];
    std::snprintf(uid, sizeof uid, "7c9e6679-7425-40de-944b-%012d", i + 1);
    run["metadata"]["uid"] = uid;
    view.runs.push_back(run);
    controllers::Metrics metrics;
    controllers::ReconcilerConfig reconciler_config;
    reconciler_config.export_span = [&tracing](otlp::Span span) { tracing.offer(std::move(span)); };
    auto reconciler = controllers::testing::reconciler_over(
        controllers::testing::client_over(api), view, metrics,
        controllers::testing::at("2024-05-01T12:03:00Z"), std::move(reconciler_config));
    const auto begin = std::chrono::steady_clock::now();
    const auto result = reconciler->reconcile("ns", "bot");
    slowest = std::max(slowest, std::chrono::steady_clock::now() - begin);
    ASSERT_TRUE(result.ok()) << result.error().describe();
  }
  tracing.shutdown();
  controllers::Metrics metrics;
  tracing.export_metrics(metrics);
  EXPECT_LT(slowest, kReconcileMax);
  EXPECT_GT(collector.connections(), 0);
  EXPECT_EQ(metrics.value("heartbeat_otlp_spans_exported_total", {}), 0);
  EXPECT_EQ(metrics.value("heartbeat_otlp_spans_dropped_total", {{"reason", "queue_full"}}) +
                metrics.value("heartbeat_otlp_spans_dropped_total", {{"reason", "export_failed"}}),
            kStarts);
}

}  // namespace
}  // namespace hb::operator_
