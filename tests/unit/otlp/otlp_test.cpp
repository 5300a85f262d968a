// The OTLP export the operator and the runner share (otlp/): the OTEL_*
// variables, the byte-bounded batches, and the exporter against a good
// collector and hostile ones (5xx with garbage, bytes that are not HTTP, a
// slow drip, a hung reply): whoever offers spans never waits, the queue
// stays bounded, every span is either exported or counted as dropped, and
// shutdown waits at most the export timeout.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "otlp/encode.h"
#include "otlp/exporter.h"
#include "otlp/exporter_config.h"
#include "tests/fakes/fake_model_server.h"
#include "tests/unit/otlp/raw_collector.h"

namespace hb::otlp {
namespace {

using fakes::FakeModelServer;
using fakes::ScriptedResponse;
using nlohmann::json;
using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

EnvLookup env_of(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const char* name) -> std::optional<std::string> {
    auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

TEST(TraceConfig, OffWithoutAnEndpointOrWhenDisabled) {
  EXPECT_FALSE(config_from_env(env_of({}), "svc-default"));
  EXPECT_FALSE(config_from_env(
      env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_SDK_DISABLED", "TRUE"}}),
      "svc-default"));
}

TEST(TraceConfig, ReadsTheStandardVariables) {
  auto config = config_from_env(env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/"},
                                        {"OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b, x-org = 7"},
                                        {"OTEL_RESOURCE_ATTRIBUTES", "team=infra,service.name=r"},
                                        {"OTEL_SDK_DISABLED", "false"}}),
                                "svc-default");
  ASSERT_TRUE(config);
  EXPECT_EQ(config->traces_url, "http://c:4318/v1/traces");
  ASSERT_EQ(config->headers.size(), 2u);
  EXPECT_EQ(config->headers[0], std::make_pair(std::string("api-key"), std::string("a b")));
  EXPECT_EQ(config->headers[1], std::make_pair(std::string("x-org"), std::string("7")));
  EXPECT_EQ(config->service_name, "r");
  ASSERT_EQ(config->resource_attributes.size(), 1u);
  EXPECT_EQ(config->resource_attributes[0].first, "team");

  auto traces = config_from_env(env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"},
                                        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t/x"},
                                        {"OTEL_SERVICE_NAME", "svc"}}),
                                "svc-default");
  ASSERT_TRUE(traces);
  EXPECT_EQ(traces->traces_url, "http://t/x");
  EXPECT_EQ(traces->metrics_url, "http://c:4318/v1/metrics");
  EXPECT_EQ(config->metrics_url, "http://c:4318/v1/metrics");
  auto only_traces = config_from_env(env_of({{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t/x"}}),
                                     "svc-default");
  ASSERT_TRUE(only_traces);
  EXPECT_EQ(only_traces->metrics_url, "");
  auto no_metrics = config_from_env(
      env_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_METRICS_EXPORTER", "none"}}),
      "svc-default");
  ASSERT_TRUE(no_metrics);
  EXPECT_EQ(no_metrics->metrics_url, "");
  EXPECT_EQ(traces->service_name, "svc");
  EXPECT_EQ(only_traces->service_name, "svc-default");
  EXPECT_TRUE(parse_key_values("bad,=x,k=v%0D%0Ax").empty());
}

TEST(OtlpBatches, EveryRequestStaysWithinTheByteBound) {
  Resource resource{{{"service.name", std::string("s")}}};
  std::vector<Span> spans(200);
  for (auto& span : spans) {
    span.trace_id = random_hex_id(16);
    span.span_id = random_hex_id(8);
    span.name = "execute_tool shell";
    span.attributes = {{"gen_ai.tool.name", std::string(200, 'x')}};
  }
  std::size_t dropped = 0;
  constexpr std::size_t kBytes = 4096;
  auto batches = encode_batches(resource, "scope", spans, kBytes, &dropped);
  std::size_t total = 0;
  for (const auto& batch : batches) {
    EXPECT_LE(batch.body.size(), kBytes);
    auto doc = json::parse(batch.body);
    EXPECT_EQ(doc["resourceSpans"][0]["scopeSpans"][0]["spans"].size(), batch.spans);
    total += batch.spans;
  }
  EXPECT_EQ(total, spans.size());
  EXPECT_EQ(dropped, 0u);
  EXPECT_GT(batches.size(), 1u);
}

// OTEL_EXPORTER_OTLP_TIMEOUT and the per-signal ones, in milliseconds:
// the signal's own wins, a bad value is a warning and the default, a large
// one is clamped; a warning never repeats the value.
TEST(TraceConfig, ExportTimeoutsFromTheStandardVariables) {
  const std::map<std::string, std::string> endpoint = {
      {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}};
  auto with = [&](std::map<std::string, std::string> more) {
    more.insert(endpoint.begin(), endpoint.end());
    auto config = config_from_env(env_of(std::move(more)), "svc");
    EXPECT_TRUE(config);
    return config.value_or(ExporterConfig{});
  };
  EXPECT_EQ(with({}).export_timeout, kExportTimeout);
  EXPECT_EQ(with({}).metrics_export_timeout, kExportTimeout);
  EXPECT_TRUE(with({}).warnings.empty());

  const ExporterConfig general = with({{"OTEL_EXPORTER_OTLP_TIMEOUT", " 5000 "}});
  EXPECT_EQ(general.export_timeout, 5000ms);
  EXPECT_EQ(general.metrics_export_timeout, 5000ms);
  const ExporterConfig own = with({{"OTEL_EXPORTER_OTLP_TIMEOUT", "5000"},
                                   {"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "700"},
                                   {"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "900"}});
  EXPECT_EQ(own.export_timeout, 700ms);
  EXPECT_EQ(own.metrics_export_timeout, 900ms);
  EXPECT_TRUE(own.warnings.empty());

  const ExporterConfig clamped = with({{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "600000"}});
  EXPECT_EQ(clamped.export_timeout, kExportTimeoutMax);
  ASSERT_EQ(clamped.warnings.size(), 1u);
  EXPECT_NE(clamped.warnings[0].find("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"), std::string::npos);

  EXPECT_EQ(with({{"OTEL_EXPORTER_OTLP_TIMEOUT", "99999999999999999999"}}).export_timeout,
            kExportTimeoutMax);
  for (const char* bad : {"10s", "-5", "0", "1.5", "s3cret"}) {
    const ExporterConfig c =
        with({{"OTEL_EXPORTER_OTLP_TIMEOUT", "3000"}, {"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", bad}});
    EXPECT_EQ(c.export_timeout, 3000ms) << bad;
    ASSERT_EQ(c.warnings.size(), 1u) << bad;
    EXPECT_NE(c.warnings[0].find("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"), std::string::npos);
    EXPECT_EQ(c.warnings[0].find("s3cret"), std::string::npos) << "the value is never repeated";
  }
  const ExporterConfig bad_general = with({{"OTEL_EXPORTER_OTLP_TIMEOUT", "soon"}});
  EXPECT_EQ(bad_general.export_timeout, kExportTimeout);
  EXPECT_EQ(bad_general.warnings.size(), 1u) << "warned once, though both signals read it";
}

// --- the exporter ---

// Short enough for a test, long enough that a blocked offer would show.
constexpr auto kTestExportTimeout = 1000ms;
constexpr auto kTestExportInterval = 50ms;
constexpr std::size_t kTestQueueSpans = 64;
constexpr int kOffers = 3000;
constexpr auto kBetweenOffers = 200us;
// An offer that took this long waited for something it must not wait for.
constexpr auto kOfferLatencyMax = 200ms;

ExporterConfig test_config(const std::string& url) {
  ExporterConfig config;
  config.traces_url = url + "/v1/traces";
  config.service_name = "otlp-test";
  config.export_timeout = kTestExportTimeout;
  config.export_interval = kTestExportInterval;
  config.queue_spans_max = kTestQueueSpans;
  return config;
}

Span test_span(int i) {
  Span span;
  span.trace_id = random_hex_id(kTraceIdBytes);
  span.span_id = random_hex_id(kSpanIdBytes);
  span.name = "schedule_heartbeat";
  span.start = std::chrono::system_clock::now();
  span.end = span.start;
  span.attributes = {{"i", static_cast<long long>(i)}};
  return span;
}

struct Offered {
  Steady::duration slowest{0};
  Steady::duration shutdown{0};
  ExporterStats stats;
  std::vector<std::string> warnings;
};

// A reconcile worker's view: offers kOffers spans at a steady pace, then
// the operator stops.
Offered offer_many(const std::string& url) {
  auto http = http::make_client({});
  Offered out;
  std::mutex mutex;
  {
    Exporter exporter(test_config(url), make_resource(test_config(url), {}), "otlp-test", *http,
                      [&](const std::string& message) {
                        std::lock_guard lock(mutex);
                        out.warnings.push_back(message);
                      });
    std::thread worker([&] {
      for (int i = 0; i < kOffers; ++i) {
        const auto begin = Steady::now();
        exporter.offer(test_span(i));
        out.slowest = std::max(out.slowest, Steady::now() - begin);
        std::this_thread::sleep_for(kBetweenOffers);
      }
    });
    worker.join();
    const auto begin = Steady::now();
    exporter.shutdown();
    out.shutdown = Steady::now() - begin;
    out.stats = exporter.stats();
  }
  return out;
}

void expect_never_waited(const Offered& offered) {
  EXPECT_LT(offered.slowest, kOfferLatencyMax);
  EXPECT_LT(offered.shutdown, kTestExportTimeout + 500ms);
  // Every span is accounted for, exported or dropped.
  EXPECT_EQ(offered.stats.exported + offered.stats.lost(), static_cast<std::uint64_t>(kOffers));
}

TEST(Exporter, AGoodCollectorGetsEverySpanInValidRequests) {
  FakeModelServer collector;
  collector.set_responder([](const fakes::RecordedRequest&) {
    return ScriptedResponse{200, {{"Content-Type", "application/json"}}, "{}"};
  });
  const Offered offered = offer_many(collector.url());
  expect_never_waited(offered);
  // A slow build (sanitizers) may offer faster than the exporter sends: what
  // it drops then is dropped at the queue, never by a failed request.
  EXPECT_EQ(offered.stats.failed + offered.stats.too_large, 0u);
  EXPECT_GT(offered.stats.exported, 0u);
  EXPECT_TRUE(offered.warnings.empty());
  std::size_t spans = 0;
  for (const auto& request : collector.requests()) {
    EXPECT_EQ(request.path, "/v1/traces");
    EXPECT_EQ(request.header("content-type"), "application/json");
    const json body = request.json();
    EXPECT_EQ(body["resourceSpans"][0]["scopeSpans"][0]["scope"]["name"], "otlp-test");
    spans += body["resourceSpans"][0]["scopeSpans"][0]["spans"].size();
  }
  EXPECT_EQ(spans, offered.stats.exported) << "every span exported reached the collector";
  EXPECT_EQ(spans + offered.stats.queue_full, static_cast<std::size_t>(kOffers));
}

TEST(Exporter, ServerErrorsWithGarbageAreCountedAndLoggedOnce) {
  FakeModelServer collector;
  collector.set_responder([](const fakes::RecordedRequest&) {
    return ScriptedResponse{503, {}, "\x01\xff garbage"};
  });
  const Offered offered = offer_many(collector.url());
  expect_never_waited(offered);
  EXPECT_EQ(offered.stats.exported, 0u);
  EXPECT_GT(offered.stats.failed, 0u);
  ASSERT_EQ(offered.warnings.size(), 1u);
  EXPECT_NE(offered.warnings[0].find("HTTP 503"), std::string::npos) << offered.warnings[0];
  EXPECT_EQ(offered.warnings[0].find("garbage"), std::string::npos) << "a reply is never logged";
}

TEST(Exporter, BytesThatAreNotHttpAreCountedAsFailures) {
  testing::RawCollector collector(testing::RawCollector::Mode::kGarbage);
  const Offered offered = offer_many(collector.url());
  expect_never_waited(offered);
  EXPECT_EQ(offered.stats.exported, 0u);
  EXPECT_GT(offered.stats.failed, 0u);
  EXPECT_GT(collector.connections(), 0);
}

TEST(Exporter, ASlowDripCostsOneTimeoutPerPassAndTheQueueBounds) {
  testing::RawCollector collector(testing::RawCollector::Mode::kSlowDrip);
  const Offered offered = offer_many(collector.url());
  expect_never_waited(offered);
  EXPECT_EQ(offered.stats.exported, 0u);
  // Held up by the drip, the exporter takes at most a queue per timeout.
  EXPECT_GT(offered.stats.queue_full, 0u);
  EXPECT_GT(collector.connections(), 0);
}

void hang_every_request(FakeModelServer& collector) {
  collector.set_responder([](const fakes::RecordedRequest&) {
    ScriptedResponse hung;
    hung.hang = true;
    return hung;
  });
}

TEST(Exporter, AHungCollectorNeverHoldsAnOfferOrTheShutdown) {
  FakeModelServer collector;
  hang_every_request(collector);
  const Offered offered = offer_many(collector.url());
  expect_never_waited(offered);
  EXPECT_EQ(offered.stats.exported, 0u);
  EXPECT_GT(offered.stats.queue_full, 0u);
  collector.stop();
}

// Positive control: the same collector holds a caller that posts itself
// for the whole timeout, which the checks above would have seen.
TEST(Exporter, ControlASynchronousPostToTheDripWaitsTheTimeout) {
  testing::RawCollector collector(testing::RawCollector::Mode::kSlowDrip);
  auto http = http::make_client({});
  http::Request request;
  request.method = "POST";
  request.url = collector.url() + "/v1/traces";
  request.body = encode_traces({}, "otlp-test", {test_span(0)});
  request.timeout = kTestExportTimeout;
  const auto begin = Steady::now();
  EXPECT_THROW(http->send(request), http::TransportError);
  EXPECT_GE(Steady::now() - begin, kTestExportTimeout);
  EXPECT_GT(Steady::now() - begin, kOfferLatencyMax);
}

// The export timeout the variables set is the one a request and the
// shutdown wait: far below the default, a hung collector holds it no longer.
TEST(Exporter, AHungCollectorHoldsTheShutdownTheConfiguredTimeout) {
  FakeModelServer collector;
  hang_every_request(collector);
  auto config = config_from_env(
      env_of({{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", collector.url() + "/v1/traces"},
              {"OTEL_EXPORTER_OTLP_TIMEOUT", "150"}}),
      "otlp-test");
  ASSERT_TRUE(config);
  auto http = http::make_client({});
  Exporter exporter(*config, {}, "otlp-test", *http, nullptr);
  exporter.offer(test_span(0));
  const auto begin = Steady::now();
  exporter.shutdown();
  EXPECT_LT(Steady::now() - begin, kExportTimeout - 500ms);
  EXPECT_EQ(exporter.stats().exported, 0u);
  collector.stop();
}

TEST(Exporter, OffersAfterShutdownAreDroppedAndCounted) {
  FakeModelServer collector;
  auto http = http::make_client({});
  Exporter exporter(test_config(collector.url()), {}, "otlp-test", *http, nullptr);
  exporter.shutdown();
  EXPECT_FALSE(exporter.offer(test_span(1)));
  EXPECT_EQ(exporter.stats().queue_full, 1u);
}

}  // namespace
}  // namespace hb::otlp
