// The heartbeat's OpenTelemetry trace: the pure parts (traceparent, the
// recorder's bound), then run_heartbeat end to end against a scripted model
// server and a scripted OTLP collector that records POSTs. The shared
// encoder and exporter have their own tests (tests/unit/otlp).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "api/exit_codes.h"
#include "api/rfc3339.h"
#include "otlp/exporter.h"
#include "runner/otel_trace.h"
#include "runner/runner_app.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_model_server.h"

namespace hb::runner::otel {
namespace {

using fakes::FakeClock;
using fakes::FakeModelServer;
using fakes::ScriptedResponse;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kParentTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr const char* kParentSpan = "00f067aa0ba902b7";

TEST(TraceParent, AcceptsVersionZeroAndRefusesMalformedOrZeroIds) {
  auto parent = parse_traceparent(std::string("00-") + kParentTrace + "-" + kParentSpan + "-01");
  ASSERT_TRUE(parent);
  EXPECT_EQ(parent->trace_id, kParentTrace);
  EXPECT_EQ(parent->parent_span_id, kParentSpan);
  EXPECT_FALSE(parse_traceparent(""));
  EXPECT_FALSE(
      parse_traceparent(std::string("00-") + std::string(32, '0') + "-" + kParentSpan + "-01"));
  EXPECT_FALSE(
      parse_traceparent(std::string("00-") + kParentTrace + "-" + std::string(16, '0') + "-01"));
  EXPECT_FALSE(parse_traceparent(std::string("ff-") + kParentTrace + "-" + kParentSpan + "-01"));
  EXPECT_FALSE(parse_traceparent(std::string("00-") + "4BF92F3577B34DA6A3CE929D0E0E4736" + "-" +
                                 kParentSpan + "-01"));
  EXPECT_FALSE(
      parse_traceparent(std::string("00-") + kParentTrace + "-" + kParentSpan + "-01-extra"));
}

class NullTranscript final : public Transcript {
 public:
  void emit(json) override {}
};

TEST(SpanRecorderBounds, KeepsAtMostTheSpansPerRunAndCountsTheRest) {
  NullTranscript inner;
  FakeClock clock;
  std::vector<Span> spans;
  SpanRecorder recorder(inner, clock, {"a", "ns", "run-1", "openai", "m"}, clock.now(),
                        std::nullopt, [&spans](Span span) { spans.push_back(std::move(span)); });
  for (std::size_t i = 0; i < kSpansPerRunMax + 10; ++i) {
    recorder.emit({{"event", "tool_call"}, {"id", "c"}, {"name", "shell"}});
    recorder.emit({{"event", "tool_result"}, {"id", "c"}, {"isError", false}});
  }
  recorder.finish("finished", "", 1, 2, clock.now());
  EXPECT_EQ(spans.size(), kSpansPerRunMax);
  EXPECT_EQ(recorder.dropped(), 11u);
  EXPECT_EQ(spans.back().name, "invoke_agent a");
  // No traceparent: a trace of its own, the root without a parent.
  EXPECT_EQ(spans.back().trace_id.size(), 32u);
  EXPECT_EQ(spans.back().parent_span_id, "");
  EXPECT_EQ(spans.front().parent_span_id, spans.back().span_id);
}

// --- run_heartbeat with a scripted collector ---

std::string attribute(const json& span, const std::string& key) {
  for (const auto& item : span["attributes"]) {
    if (item["key"] != key) continue;
    const json& value = item["value"];
    if (value.contains("stringValue")) return value["stringValue"];
    if (value.contains("intValue")) return value["intValue"];
  }
  return "<absent>";
}

class TracedRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("hb-otel-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    options_.context_path = (dir_ / "context.json").string();
    options_.termination_path = (dir_ / "termination-log").string();
    options_.api_key = "sk-otel-test-key-123";
    options_.model_call_timeout = 5s;
    options_.tools_local = true;
    options_.traceparent = std::string("00-") + kParentTrace + "-" + kParentSpan + "-01";
    otlp::ExporterConfig config;
    config.traces_url = collector_.url() + "/v1/traces";
    config.metrics_url = collector_.url() + "/v1/metrics";
    config.headers = {{"authorization", "Bearer collector-token"}};
    options_.otel = config;
    collector_.set_responder([](const fakes::RecordedRequest&) {
      return ScriptedResponse{200, {{"Content-Type", "application/json"}}, "{}"};
    });
    json context = json::parse(R"({
      "agent": {"name": "scout", "namespace": "agents", "type": "memgpt_agent"},
      "model": {"provider": "openai", "model": "fake", "maxTokens": 256,
                "pricing": {"inputCentsPerMillionTokens": 100, "outputCentsPerMillionTokens": 200}},
      "persona": "You are Scout.",
      "memory": {"blocks": [{"label": "notes", "value": "", "limit": 100}]},
      "heartbeat": {"prompt": "Check the disk, secret-prompt-words."},
      "run": {"name": "scout-7"}
    })");
    context["model"]["baseURL"] = model_.url() + "/v1";
    context["run"]["deadline"] = api::format_rfc3339_millis(clock_.now() + 10min);
    std::ofstream(options_.context_path) << context.dump();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  AppOutcome run() {
    AppDeps deps{clock_,
                 stdout_,
                 *http_,
                 nullptr,
                 nullptr,
                 nullptr,
                 nullptr,
                 [this](const std::string& message) {
                   std::lock_guard lock(mutex_);
                   warnings_.push_back(message);
                 },
                 nullptr,
                 nullptr};
    return run_heartbeat(options_, deps);
  }

  std::vector<json> spans() {
    std::vector<json> out;
    for (const auto& request : collector_.requests()) {
      if (request.path != "/v1/traces") continue;
      const json doc = request.json();
      for (const auto& span : doc["resourceSpans"][0]["scopeSpans"][0]["spans"]) {
        out.push_back(span);
      }
    }
    return out;
  }

  FakeModelServer model_;
  FakeModelServer collector_;
  FakeClock clock_;
  std::unique_ptr<http::Client> http_ = http::make_client({});
  std::ostringstream stdout_;
  std::filesystem::path dir_;
  AppOptions options_;
  std::mutex mutex_;
  std::vector<std::string> warnings_;
};

TEST_F(TracedRunTest, OneTraceWithTheConventionsSpansNamesAndParents) {
  model_.push(FakeModelServer::openai_tool_calls(
      {{"c1", "core_memory_append", R"({"label":"notes","content":"tool-secret-content"})"}}, 120,
      30));
  model_.push(FakeModelServer::openai_text("All fine, reply-secret-text.", 150, 10));
  auto outcome = run();
  ASSERT_EQ(outcome.exit_code, api::kExitFinished);

  auto requests = collector_.requests();
  ASSERT_FALSE(requests.empty()) << testing::PrintToString(warnings_);
  for (const auto& request : requests) {
    EXPECT_EQ(request.method, "POST");
    EXPECT_TRUE(request.path == "/v1/traces" || request.path == "/v1/metrics") << request.path;
    EXPECT_EQ(request.header("content-type"), "application/json");
    EXPECT_EQ(request.header("authorization"), "Bearer collector-token");
    for (const char* secret : {"secret-prompt-words", "tool-secret-content", "reply-secret-text",
                               "sk-otel-test-key-123", "collector-token", "You are Scout"}) {
      EXPECT_EQ(request.body.find(secret), std::string::npos) << secret;
    }
  }
  ASSERT_EQ(requests[0].path, "/v1/traces");
  const json resource = requests[0].json()["resourceSpans"][0]["resource"];
  EXPECT_EQ(attribute(resource, "service.name"), kServiceNameDefault);
  EXPECT_EQ(attribute(resource, "k8s.namespace.name"), "agents");
  EXPECT_EQ(attribute(resource, "heartbeat.run.name"), "scout-7");

  auto all = spans();
  ASSERT_EQ(all.size(), 4u);  // invoke_agent, 2 chat, 1 execute_tool
  std::map<std::string, std::vector<json>> by_operation;
  for (const auto& span : all) {
    EXPECT_EQ(span["traceId"], kParentTrace);
    by_operation[attribute(span, "gen_ai.operation.name")].push_back(span);
  }
  ASSERT_EQ(by_operation["invoke_agent"].size(), 1u);
  const json root = by_operation["invoke_agent"][0];
  EXPECT_EQ(root["name"], "invoke_agent scout");
  EXPECT_EQ(root["parentSpanId"], kParentSpan);
  EXPECT_EQ(root["spanId"].get<std::string>().size(), 16u);
  EXPECT_EQ(attribute(root, "gen_ai.agent.name"), "scout");
  EXPECT_EQ(attribute(root, "gen_ai.conversation.id"), "scout-7");
  EXPECT_EQ(attribute(root, "gen_ai.provider.name"), "openai");
  EXPECT_EQ(attribute(root, "gen_ai.usage.input_tokens"), "270");
  EXPECT_EQ(attribute(root, "gen_ai.usage.output_tokens"), "40");
  EXPECT_EQ(root["status"]["code"], 0);

  ASSERT_EQ(by_operation["chat"].size(), 2u);
  const json chat = by_operation["chat"][0];
  EXPECT_EQ(chat["name"], "chat fake");
  EXPECT_EQ(chat["kind"], 3);
  EXPECT_EQ(chat["parentSpanId"], root["spanId"]);
  EXPECT_EQ(attribute(chat, "gen_ai.request.model"), "fake");
  EXPECT_EQ(attribute(chat, "gen_ai.response.model"), "<absent>") << "the reply named none";
  EXPECT_EQ(attribute(by_operation["chat"][1], "gen_ai.response.model"), "fake");
  EXPECT_EQ(attribute(chat, "gen_ai.usage.input_tokens"), "120");
  EXPECT_EQ(attribute(chat, "gen_ai.usage.output_tokens"), "30");
  EXPECT_EQ(attribute(chat, "gen_ai.conversation.id"), "scout-7");

  ASSERT_EQ(by_operation["execute_tool"].size(), 1u);
  const json tool = by_operation["execute_tool"][0];
  EXPECT_EQ(tool["name"], "execute_tool core_memory_append");
  EXPECT_EQ(tool["parentSpanId"], root["spanId"]);
  EXPECT_EQ(attribute(tool, "gen_ai.tool.name"), "core_memory_append");
  EXPECT_EQ(attribute(tool, "gen_ai.tool.call.id"), "c1");
  EXPECT_NE(tool["spanId"], chat["spanId"]);
  // The provider request carries the chat span as its W3C parent.
  EXPECT_EQ(model_.requests()[0].header("traceparent"),
            std::string("00-") + kParentTrace + "-" + chat["spanId"].get<std::string>() + "-01");
  EXPECT_EQ(model_.requests()[1].header("traceparent"),
            std::string("00-") + kParentTrace + "-" +
                by_operation["chat"][1]["spanId"].get<std::string>() + "-01");
  EXPECT_LE(std::stoll(root["startTimeUnixNano"].get<std::string>()),
            std::stoll(chat["startTimeUnixNano"].get<std::string>()));
  std::lock_guard lock(mutex_);
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(TracedRunTest, TheRunsChatCallsBecomeTheGenAiClientHistograms) {
  model_.push(FakeModelServer::openai_tool_calls(
      {{"c1", "core_memory_append", R"({"label":"notes","content":"x"})"}}, 120, 30));
  model_.push(FakeModelServer::openai_text("done", 150, 10));
  ASSERT_EQ(run().exit_code, api::kExitFinished);
  auto requests = collector_.requests();
  ASSERT_EQ(requests.back().path, "/v1/metrics");
  const json doc = requests.back().json();
  const json& metrics = doc["resourceMetrics"][0]["scopeMetrics"][0]["metrics"];
  ASSERT_EQ(metrics.size(), 2u);
  const json& usage = metrics[0];
  EXPECT_EQ(usage["name"], "gen_ai.client.token.usage");
  EXPECT_EQ(usage["unit"], "{token}");
  EXPECT_EQ(usage["histogram"]["aggregationTemporality"], 1);
  std::map<std::string, json> by_type;
  for (const auto& point : usage["histogram"]["dataPoints"]) {
    by_type[attribute(point, "gen_ai.token.type") + "/" +
            attribute(point, "gen_ai.response.model")] = point;
  }
  // The first reply named no model, the second "fake": two sets per type.
  ASSERT_EQ(by_type.size(), 4u) << usage.dump();
  EXPECT_EQ(by_type["input/<absent>"]["sum"], 120.0);
  EXPECT_EQ(by_type["input/fake"]["sum"], 150.0);
  EXPECT_EQ(by_type["output/fake"]["count"], "1");
  EXPECT_EQ(attribute(by_type["input/fake"], "gen_ai.provider.name"), "openai");
  EXPECT_EQ(attribute(by_type["input/fake"], "gen_ai.operation.name"), "chat");
  const json& point = by_type["input/fake"];
  EXPECT_EQ(point["bucketCounts"].size(), point["explicitBounds"].size() + 1);
  const json& duration = metrics[1];
  EXPECT_EQ(duration["name"], "gen_ai.client.operation.duration");
  EXPECT_EQ(duration["unit"], "s");
  long long calls = 0;
  for (const auto& p : duration["histogram"]["dataPoints"])
    calls += std::stoll(p["count"].get<std::string>());
  EXPECT_EQ(calls, 2);
}

// A reply whose prompt was partly served from the provider's cache.
ScriptedResponse cached_reply(int prompt_tokens, int cached_tokens) {
  ScriptedResponse reply = FakeModelServer::openai_text("done", prompt_tokens, 10);
  json body = json::parse(reply.body);
  body["usage"]["prompt_tokens_details"] = {{"cached_tokens", cached_tokens}};
  reply.body = body.dump();
  return reply;
}

long long sum_of(const json& metric) {
  long long total = 0;
  for (const auto& point : metric["sum"]["dataPoints"]) {
    total += std::stoll(point["asInt"].get<std::string>());
  }
  return total;
}

TEST_F(TracedRunTest, OptedInTheLatestConventionsSuccessorsReplaceTheV136Metrics) {
  options_.otel->gen_ai_latest = true;
  model_.push(FakeModelServer::openai_tool_calls(
      {{"c1", "core_memory_append", R"({"label":"notes","content":"x"})"}}, 120, 30));
  model_.push(cached_reply(150, 40));
  ASSERT_EQ(run().exit_code, api::kExitFinished);
  auto requests = collector_.requests();
  ASSERT_EQ(requests.back().path, "/v1/metrics");
  const json doc = requests.back().json();
  std::map<std::string, json> by_name;
  for (const auto& metric : doc["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]) {
    by_name[metric["name"].get<std::string>()] = metric;
  }
  std::set<std::string> names;
  for (const auto& [name, metric] : by_name) names.insert(name);
  EXPECT_EQ(names,
            (std::set<std::string>{"gen_ai.client.inference.duration",
                                   "gen_ai.client.inference.operation.input_tokens",
                                   "gen_ai.client.inference.operation.output_tokens",
                                   "gen_ai.client.inference.usage.input_tokens",
                                   "gen_ai.client.inference.usage.output_tokens",
                                   "gen_ai.client.inference.usage.cache_read.input_tokens"}));
  const json& input = by_name["gen_ai.client.inference.usage.input_tokens"];
  EXPECT_EQ(input["unit"], "{token}");
  EXPECT_EQ(input["sum"]["isMonotonic"], true);
  EXPECT_EQ(input["sum"]["aggregationTemporality"], 1);
  EXPECT_EQ(sum_of(input), 270);
  EXPECT_EQ(attribute(input["sum"]["dataPoints"][0], "gen_ai.token.modality"), "text");
  EXPECT_EQ(sum_of(by_name["gen_ai.client.inference.usage.output_tokens"]), 40);
  EXPECT_EQ(sum_of(by_name["gen_ai.client.inference.usage.cache_read.input_tokens"]), 40);
  long long operations = 0;
  for (const auto& p :
       by_name["gen_ai.client.inference.operation.input_tokens"]["histogram"]["dataPoints"]) {
    operations += std::stoll(p["count"].get<std::string>());
  }
  EXPECT_EQ(operations, 2);
  int cached_spans = 0;
  for (const auto& span : spans()) {
    if (attribute(span, "gen_ai.usage.cache_read.input_tokens") == "40") ++cached_spans;
  }
  EXPECT_EQ(cached_spans, 1);
}

TEST_F(TracedRunTest, ByDefaultSpansKeepTheV136AttributesOnly) {
  model_.push(cached_reply(150, 40));
  ASSERT_EQ(run().exit_code, api::kExitFinished);
  for (const auto& span : spans()) {
    EXPECT_EQ(attribute(span, "gen_ai.usage.cache_read.input_tokens"), "<absent>") << span.dump();
  }
}

TEST_F(TracedRunTest, AFailedRunMarksItsSpansAsErrors) {
  model_.push(FakeModelServer::error(400, R"({"error":{"message":"bad request"}})"));
  auto outcome = run();
  ASSERT_EQ(outcome.exit_code, api::kExitProviderError);
  auto all = spans();
  ASSERT_EQ(all.size(), 2u);
  for (const auto& span : all) {
    EXPECT_EQ(span["status"]["code"], 2) << span.dump();
    EXPECT_EQ(attribute(span, "error.type"), "provider_error");
  }
}

TEST_F(TracedRunTest, ADeadCollectorIsLoggedOnceAndTheRunSucceeds) {
  collector_.stop();
  model_.push(FakeModelServer::openai_text("done"));
  auto outcome = run();
  EXPECT_EQ(outcome.exit_code, api::kExitFinished);
  std::lock_guard lock(mutex_);
  ASSERT_EQ(warnings_.size(), 2u);
  EXPECT_NE(warnings_[0].find("OTLP export to"), std::string::npos) << warnings_[0];
  EXPECT_NE(warnings_[1].find("2 spans of this run were not exported"), std::string::npos)
      << warnings_[1];
}

TEST_F(TracedRunTest, AHostileCollectorsRepliesNeverReachTheRun) {
  collector_.set_responder([](const fakes::RecordedRequest& request) {
    if (request.path == "/v1/traces") return ScriptedResponse{503, {}, "\x01garbage"};
    return ScriptedResponse{200, {}, std::string(otlp::kExportReplyBytesMax + 1, 'x')};
  });
  model_.push(FakeModelServer::openai_text("done"));
  auto outcome = run();
  EXPECT_EQ(outcome.exit_code, api::kExitFinished);
  EXPECT_EQ(json::parse(outcome.result_json)["stopReason"], "completed");
  std::lock_guard lock(mutex_);
  ASSERT_EQ(warnings_.size(), 2u) << testing::PrintToString(warnings_);
  EXPECT_NE(warnings_[0].find("HTTP 503"), std::string::npos) << warnings_[0];
  EXPECT_EQ(warnings_[0].find("garbage"), std::string::npos) << "a reply body is never logged";
}

void hang_every_request(FakeModelServer& collector) {
  collector.set_responder([](const fakes::RecordedRequest&) {
    ScriptedResponse hung;
    hung.hang = true;
    return hung;
  });
}

// OTEL_EXPORTER_OTLP_TIMEOUT, read into the runner's exporter settings:
// far below the default, the run ends that much sooner.
TEST_F(TracedRunTest, AHungCollectorDelaysTheRunByAtMostTheConfiguredTimeout) {
  hang_every_request(collector_);
  const auto configured = otlp::config_from_env(
      [this](const char* name) -> std::optional<std::string> {
        if (std::string_view(name) == "OTEL_EXPORTER_OTLP_ENDPOINT") return collector_.url();
        if (std::string_view(name) == "OTEL_EXPORTER_OTLP_TIMEOUT") return "100";
        return std::nullopt;
      },
      "runner-test");
  ASSERT_TRUE(configured);
  options_.otel = configured;
  model_.push(FakeModelServer::openai_text("done"));
  const auto begin = std::chrono::steady_clock::now();
  auto outcome = run();
  const auto took = std::chrono::steady_clock::now() - begin;
  EXPECT_EQ(outcome.exit_code, api::kExitFinished);
  EXPECT_LT(took, otlp::kExportTimeout - 500ms) << "the default would have been waited";
  collector_.stop();
}

TEST_F(TracedRunTest, AHungCollectorDelaysTheRunByAtMostTheExportTimeout) {
  hang_every_request(collector_);
  model_.push(FakeModelServer::openai_text("done"));
  const auto begin = std::chrono::steady_clock::now();
  auto outcome = run();
  const auto took = std::chrono::steady_clock::now() - begin;
  EXPECT_EQ(outcome.exit_code, api::kExitFinished);
  EXPECT_LT(took, otlp::kExportTimeout + 1s);
  collector_.stop();
}

}  // namespace
}  // namespace hb::runner::otel
