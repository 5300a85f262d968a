// The HTTP providers against the scripted fake model server on 127.0.0.1.
#include <gtest/gtest.h>

#include "api/exit_codes.h"
#include "http/http.h"
#include "runner/agent_loop.h"
#include "runner/errors.h"
#include "runner/http_model_client.h"
#include "runner/limits.h"
#include "runner/stop_rules.h"
#include "runner/tool_specs.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_model_server.h"

namespace hb::runner {
namespace {

using fakes::FakeClock;
using fakes::FakeModelServer;
using namespace std::chrono_literals;
using nlohmann::json;

class RecordingTools final : public ToolRunner {
 public:
  ToolOutcome run(const std::string& name, const json& arguments, TimePoint) override {
    calls.push_back({name, arguments});
    return {"output of " + name, false};
  }
  std::vector<std::pair<std::string, json>> calls;
};

struct HttpHarness {
  FakeModelServer server;
  FakeClock clock;
  std::unique_ptr<http::Client> http = http::make_client({});
  MemoryTranscript transcript;

  HttpModelClient client(api::Provider provider, Millis timeout = 5s, int retries = 4,
                         std::optional<openai::TokenLimitField> field = std::nullopt) {
    HttpModelClientOptions options;
    options.token_limit_field = field;
    options.provider = provider;
    options.base_url = provider == api::Provider::kOpenAI ? server.url() + "/v1" : server.url();
    options.api_key = "sk-test-secret-key";
    options.call_timeout = timeout;
    options.retries_max = retries;
    options.jitter = [] { return 0.0; };
    return HttpModelClient(options, *http, clock, &transcript);
  }

  ModelRequest request() {
    ModelRequest r;
    r.model = "fake-model";
    r.system = "sys";
    r.max_tokens = 64;
    r.messages.push_back({Message::Role::kUser, "hello", {}, {}});
    r.tools = {*tool_spec("shell")};
    r.deadline = clock.now() + 10min;
    return r;
  }

  api::RunResult loop(api::Provider provider, api::AgentType type = api::AgentType::kMemgpt) {
    auto model = client(provider);
    Heartbeat heartbeat(clock);
    LoopConfig config;
    config.model = "fake-model";
    config.agent_type = type;
    config.tools = offered_tools(api::capabilities(type), false).tools;
    config.max_tokens = 64;
    config.pricing = {100, 200};
    config.wall_deadline = clock.now() + 10min;
    config.first_message = "heartbeat";
    config.system_prompt = [] { return std::string("system"); };
    return run_agent_loop(config, {model, tools, clock, heartbeat, transcript});
  }
  RecordingTools tools;
};

TEST(OpenAIProvider, SendsChatCompletionsWithBearerKey) {
  HttpHarness h;
  h.server.push(FakeModelServer::openai_text("hi there", 11, 3));
  auto reply = h.client(api::Provider::kOpenAI).complete(h.request()).value();
  EXPECT_EQ(reply.text, "hi there");
  EXPECT_EQ(reply.usage.input_tokens, 11);
  auto requests = h.server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].path, "/v1/chat/completions");
  EXPECT_EQ(requests[0].header("authorization"), "Bearer sk-test-secret-key");
  auto body = requests[0].json();
  EXPECT_EQ(body["model"], "fake-model");
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["tools"][0]["function"]["name"], "shell");
}

TEST(OpenAIProvider, MultiStepToolLoopOverHttp) {
  HttpHarness h;
  h.server.push(FakeModelServer::openai_tool_calls(
      {{"call_a", "shell", R"({"command":"uptime"})"},
       {"call_b", "core_memory_append", R"({"label":"x","content":"y"})"}}));
  h.server.push(FakeModelServer::openai_tool_calls({{"call_c", "shell", R"({"command":"df"})"}}));
  h.server.push(FakeModelServer::openai_text("Disk is fine."));
  auto result = h.loop(api::Provider::kOpenAI);
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kCompleted));
  EXPECT_EQ(result.output, "Disk is fine.");
  EXPECT_EQ(result.llm_calls, 3);
  EXPECT_EQ(h.tools.calls.size(), 3u);
  auto third = h.server.requests()[2].json();
  // system, user, assistant(2 calls), tool, tool, assistant(1 call), tool
  ASSERT_EQ(third["messages"].size(), 7u);
  EXPECT_EQ(third["messages"][3]["tool_call_id"], "call_a");
  EXPECT_EQ(third["messages"][4]["tool_call_id"], "call_b");
  EXPECT_EQ(third["messages"][6]["content"], "output of shell");
  EXPECT_NEAR(*result.cost_cents, (300 * 100 + 60 * 200) / 1e6, 1e-12);
}

TEST(OpenAIProvider, MalformedArgumentsGetAToolErrorNotACrash) {
  HttpHarness h;
  h.server.push(FakeModelServer::openai_tool_calls({{"call_bad", "shell", R"({"command": "ls)"}}));
  h.server.push(FakeModelServer::openai_text("oops"));
  auto result = h.loop(api::Provider::kOpenAI);
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kCompleted));
  EXPECT_TRUE(h.tools.calls.empty());
  auto second = h.server.requests()[1].json();
  EXPECT_EQ(second["messages"][2]["tool_calls"][0]["function"]["arguments"], R"({"command": "ls)");
  EXPECT_EQ(second["messages"][3]["tool_call_id"], "call_bad");
  EXPECT_NE(second["messages"][3]["content"].get<std::string>().find("not valid JSON"),
            std::string::npos);
}

TEST(OpenAIProvider, RetriesA429HonouringRetryAfter) {
  HttpHarness h;
  h.server.push(FakeModelServer::error(
      429, R"({"error":{"message":"Rate limit","type":"requests","code":"rate_limit_exceeded"}})",
      {{"retry-after", "7"}}));
  h.server.push(FakeModelServer::error(429, R"({"error":{"message":"Rate limit"}})",
                                       {{"retry-after-ms", "1250"}}));
  h.server.push(FakeModelServer::openai_text("finally"));
  auto reply = h.client(api::Provider::kOpenAI).complete(h.request()).value();
  EXPECT_EQ(reply.text, "finally");
  EXPECT_EQ(h.server.requests().size(), 3u);
  EXPECT_EQ(h.clock.sleeps(), (std::vector<Millis>{7000ms, 1250ms}));
  auto retries = h.transcript.events("model_retry");
  ASSERT_EQ(retries.size(), 2u);
  EXPECT_EQ(retries[0]["status"], 429);
}

TEST(OpenAIProvider, ServerErrorThenSuccessBacksOff) {
  HttpHarness h;
  h.server.push(
      FakeModelServer::error(500, R"({"error":{"message":"boom","type":"server_error"}})"));
  h.server.push(FakeModelServer::error(503, "<html>unavailable</html>"));
  h.server.push(FakeModelServer::openai_text("ok"));
  auto reply = h.client(api::Provider::kOpenAI).complete(h.request()).value();
  EXPECT_EQ(reply.text, "ok");
  EXPECT_EQ(h.clock.sleeps(), (std::vector<Millis>{500ms, 1000ms}));
}

TEST(OpenAIProvider, InsufficientQuotaIsNeverRetried) {
  HttpHarness h;
  h.server.push(FakeModelServer::error(
      429,
      R"({"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}})"));
  {
    const ModelResult failed = h.client(api::Provider::kOpenAI).complete(h.request());
    ASSERT_FALSE(failed.ok());
    const ProviderError& error = failed.error();
    EXPECT_EQ(error.kind(), ProviderError::Kind::kQuota);
    EXPECT_EQ(error.status(), 429);
    EXPECT_NE(std::string(error.what()).find("quota"), std::string::npos);
  }
  EXPECT_EQ(h.server.requests().size(), 1u);
  EXPECT_TRUE(h.clock.sleeps().empty());
}

// A 429 asking for an hour: no retry, no sleep; the quota is spent for
// this run and the provider's reset time goes to the result.
TEST(OpenAIProvider, A429WithALongRetryAfterEndsTheRunAsQuotaWithTheResetTime) {
  HttpHarness h;
  h.server.push(FakeModelServer::error(
      429, R"({"error":{"message":"Rate limit reached for requests per day"}})",
      {{"retry-after", "3600"}}));
  {
    const ModelResult failed = h.client(api::Provider::kOpenAI).complete(h.request());
    ASSERT_FALSE(failed.ok());
    const ProviderError& error = failed.error();
    EXPECT_EQ(error.kind(), ProviderError::Kind::kQuota);
    ASSERT_TRUE(error.reset_at().has_value());
    EXPECT_EQ(*error.reset_at(), h.clock.now() + 3600s);
    EXPECT_NE(std::string(error.what()).find("longer than this run may wait"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(h.server.requests().size(), 1u);
  EXPECT_TRUE(h.clock.sleeps().empty());
}

TEST(OpenAIProvider, InsufficientQuotaCarriesTheRetryAfterAsTheResetTime) {
  HttpHarness h;
  h.server.push(FakeModelServer::error(
      429, R"({"error":{"message":"You exceeded your current quota","code":"insufficient_quota"}})",
      {{"retry-after", "120"}}));
  {
    const ModelResult failed = h.client(api::Provider::kOpenAI).complete(h.request());
    ASSERT_FALSE(failed.ok());
    const ProviderError& error = failed.error();
    EXPECT_EQ(error.kind(), ProviderError::Kind::kQuota);
    ASSERT_TRUE(error.reset_at().has_value());
    EXPECT_EQ(*error.reset_at(), h.clock.now() + 120s);
  }
}

// Anthropic's rate limit with a long retry-after is the same quota stop,
// and the loop ends with stopReason provider_quota and the reset time.
TEST(AnthropicProvider, ALongRateLimitEndsTheLoopAsProviderQuota) {
  HttpHarness h;
  h.server.push(FakeModelServer::error(
      429, R"({"type":"error","error":{"type":"rate_limit_error","message":"slow down"}})",
      {{"retry-after", "900"}}));
  const auto started = h.clock.now();
  const api::RunResult result = h.loop(api::Provider::kAnthropic);
  EXPECT_EQ(result.stop_reason, "provider_quota");
  ASSERT_TRUE(result.provider_reset_at.has_value());
  EXPECT_EQ(*result.provider_reset_at, started + 900s);
  EXPECT_EQ(api::exit_code_for(api::StopReason::kProviderQuota), api::kExitProviderError);
}

TEST(OpenAIProvider, ClientErrorsAreNotRetriedAndNeverEchoTheKey) {
  HttpHarness h;
  h.server.push(FakeModelServer::error(
      401, R"({"error":{"message":"Incorrect API key provided: sk-test-secret-key"}})"));
  {
    const ModelResult failed = h.client(api::Provider::kOpenAI).complete(h.request());
    ASSERT_FALSE(failed.ok());
    const ProviderError& error = failed.error();
    std::string message = error.what();
    EXPECT_EQ(error.status(), 401);
    EXPECT_EQ(message.find("sk-test-secret-key"), std::string::npos) << message;
    EXPECT_NE(message.find("[redacted]"), std::string::npos);
  }
  EXPECT_EQ(h.server.requests().size(), 1u);
}

// An endpoint that answers without end: the runner stops reading at its
// bound and ends the call as a bad response, once (asking again would read,
// and may bill, the same again).
TEST(OpenAIProvider, AReplyPastItsBoundIsABadResponseReadOnce) {
  HttpHarness h;
  std::string endless = R"({"choices":[{"message":{"content":")";
  endless.append(kModelReplyBytesMax, 'x');
  endless += R"("}}]})";
  h.server.push(FakeModelServer::error(200, endless));
  {
    const ModelResult failed = h.client(api::Provider::kOpenAI).complete(h.request());
    ASSERT_FALSE(failed.ok());
    const ProviderError& error = failed.error();
    EXPECT_EQ(error.kind(), ProviderError::Kind::kBadResponse) << error.what();
    EXPECT_NE(std::string(error.what()).find(std::to_string(kModelReplyBytesMax) + " bytes"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(h.server.requests().size(), 1u);
}

TEST(OpenAIProvider, RetriesAreBounded) {
  HttpHarness h;
  for (int i = 0; i < 4; ++i) h.server.push(FakeModelServer::error(502, "bad gateway"));
  {
    const ModelResult failed = h.client(api::Provider::kOpenAI, 5s, 2).complete(h.request());
    ASSERT_FALSE(failed.ok());
    const ProviderError& error = failed.error();
    EXPECT_EQ(error.status(), 502);
    EXPECT_NE(std::string(error.what()).find("after 3 attempts"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(h.server.requests().size(), 3u);
}

TEST(OpenAIProvider, NoRetryWaitPastTheDeadline) {
  HttpHarness h;
  h.server.push(FakeModelServer::error(429, "{}", {{"retry-after", "50"}}));
  auto request = h.request();
  request.deadline = h.clock.now() + 30s;
  EXPECT_FALSE(h.client(api::Provider::kOpenAI).complete(request).ok());
  EXPECT_TRUE(h.clock.sleeps().empty());
}

TEST(OpenAIProvider, HungServerTimesOut) {
  HttpHarness h;
  h.server.push({200, {}, "", 0ms, true});
  h.server.push({200, {}, "", 0ms, true});
  auto started = std::chrono::steady_clock::now();
  {
    const ModelResult failed = h.client(api::Provider::kOpenAI, 300ms, 1).complete(h.request());
    ASSERT_FALSE(failed.ok());
    const ProviderError& error = failed.error();
    EXPECT_EQ(error.kind(), ProviderError::Kind::kTimeout) << error.what();
  }
  auto elapsed = std::chrono::steady_clock::now() - started;
  EXPECT_LT(elapsed, 5s);
  EXPECT_EQ(h.server.requests().size(), 2u) << "a timeout is retried";
}

TEST(OpenAIProvider, ConnectionRefusedIsAProviderError) {
  int port;
  {
    FakeModelServer closed;
    port = closed.port();
  }
  FakeClock clock;
  auto http = http::make_client({});
  HttpModelClientOptions options;
  options.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  options.retries_max = 1;
  options.jitter = [] { return 0.0; };
  HttpModelClient client(options, *http, clock);
  ModelRequest request;
  request.model = "m";
  request.deadline = clock.now() + 1min;
  {
    const ModelResult failed = client.complete(request);
    ASSERT_FALSE(failed.ok());
    const ProviderError& error = failed.error();
    EXPECT_EQ(error.kind(), ProviderError::Kind::kTransport);
  }
}

TEST(OpenAIProvider, OtherServersGetMaxTokens) {
  HttpHarness h;
  h.server.push(FakeModelServer::openai_text("hi"));
  auto request = h.request();
  request.model = "o3-mini";  // a reasoning model's name, but not api.openai.com
  ASSERT_TRUE(h.client(api::Provider::kOpenAI).complete(request).ok());
  auto body = h.server.requests().at(0).json();
  EXPECT_EQ(body["max_tokens"], 64);
  EXPECT_FALSE(body.contains("max_completion_tokens"));
}

const char* const kMaxTokensUnsupported =
    R"({"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}})";

TEST(OpenAIProvider, RejectedMaxTokensIsSentOnceMoreAsMaxCompletionTokens) {
  HttpHarness h;
  h.server.push(FakeModelServer::error(400, kMaxTokensUnsupported));
  h.server.push(FakeModelServer::openai_text("thought hard", 30, 9));
  h.server.push(FakeModelServer::openai_text("again", 5, 2));
  auto model = h.client(api::Provider::kOpenAI);
  auto reply = model.complete(h.request()).value();
  EXPECT_EQ(reply.text, "thought hard");
  // Usage is the answered request's only: the 400 carried none.
  EXPECT_EQ(reply.usage.input_tokens, 30);
  EXPECT_EQ(reply.usage.output_tokens, 9);
  auto requests = h.server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].json()["max_tokens"], 64);
  EXPECT_FALSE(requests[1].json().contains("max_tokens"));
  EXPECT_EQ(requests[1].json()["max_completion_tokens"], 64);
  EXPECT_TRUE(h.clock.sleeps().empty()) << "no backoff for a field switch";
  auto retries = h.transcript.events("model_retry");
  ASSERT_EQ(retries.size(), 1u);
  EXPECT_EQ(retries[0]["status"], 400);
  EXPECT_EQ(retries[0]["switchedTo"], "max_completion_tokens");
  // Later calls of the run send the field that worked straight away.
  ASSERT_TRUE(model.complete(h.request()).ok());
  requests = h.server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[2].json()["max_completion_tokens"], 64);
}

TEST(OpenAIProvider, RejectedMaxCompletionTokensFallsBackToMaxTokens) {
  HttpHarness h;
  h.server.push(FakeModelServer::error(
      400,
      R"({"error":{"message":"Unrecognized request argument supplied: max_completion_tokens","type":"invalid_request_error"}})"));
  h.server.push(FakeModelServer::openai_text("ok"));
  auto reply =
      h.client(api::Provider::kOpenAI, 5s, 4, openai::TokenLimitField::kMaxCompletionTokens)
          .complete(h.request())
          .value();
  EXPECT_EQ(reply.text, "ok");
  auto requests = h.server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].json()["max_completion_tokens"], 64);
  EXPECT_EQ(requests[1].json()["max_tokens"], 64);
  EXPECT_FALSE(requests[1].json().contains("max_completion_tokens"));
}

TEST(OpenAIProvider, TokenLimitFieldIsSwitchedOnlyOnce) {
  HttpHarness h;
  h.server.push(FakeModelServer::error(400, kMaxTokensUnsupported));
  h.server.push(FakeModelServer::error(
      400,
      R"({"error":{"message":"Unsupported parameter: 'max_completion_tokens' is not supported with this model.","code":"unsupported_parameter"}})"));
  h.server.push(FakeModelServer::openai_text("never asked for"));
  {
    const ModelResult failed = h.client(api::Provider::kOpenAI).complete(h.request());
    ASSERT_FALSE(failed.ok());
    const ProviderError& error = failed.error();
    EXPECT_EQ(error.kind(), ProviderError::Kind::kHttpStatus);
    EXPECT_EQ(error.status(), 400);
    EXPECT_NE(std::string(error.what()).find("max_completion_tokens"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(h.server.requests().size(), 2u);
}

TEST(OpenAIProvider, SwitchingTheFieldDoesNotUseARetry) {
  HttpHarness h;
  h.server.push(FakeModelServer::error(502, "bad gateway"));
  h.server.push(FakeModelServer::error(400, kMaxTokensUnsupported));
  h.server.push(FakeModelServer::openai_text("ok"));
  auto reply = h.client(api::Provider::kOpenAI, 5s, 1).complete(h.request()).value();
  EXPECT_EQ(reply.text, "ok");
  EXPECT_EQ(h.server.requests().size(), 3u);
  EXPECT_EQ(h.clock.sleeps(), (std::vector<Millis>{500ms}));
}

TEST(AnthropicProvider, SendsMessagesWithVersionHeaderAndKey) {
  HttpHarness h;
  h.server.push(FakeModelServer::anthropic_text("hello", 9, 2));
  auto reply = h.client(api::Provider::kAnthropic).complete(h.request()).value();
  EXPECT_EQ(reply.text, "hello");
  EXPECT_EQ(reply.usage.output_tokens, 2);
  auto requests = h.server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/v1/messages");
  EXPECT_EQ(requests[0].header("x-api-key"), "sk-test-secret-key");
  EXPECT_EQ(requests[0].header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(requests[0].header("authorization"), "");
  auto body = requests[0].json();
  EXPECT_EQ(body["system"], "sys");
  EXPECT_EQ(body["max_tokens"], 64);
  EXPECT_EQ(body["tools"][0]["input_schema"]["type"], "object");
}

TEST(AnthropicProvider, EveryToolUseAnsweredInTheNextMessage) {
  HttpHarness h;
  h.server.push(FakeModelServer::anthropic_tool_use(
      {{"toolu_1", "shell", R"({"command":"id"})"}, {"toolu_2", "not_a_tool", R"({})"}}));
  h.server.push(
      FakeModelServer::anthropic_tool_use({{"toolu_3", "pause_heartbeats", R"({"minutes":90})"}}));
  auto result = h.loop(api::Provider::kAnthropic);
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kPauseHeartbeats));
  EXPECT_EQ(result.pause_minutes, 60) << "clamped";
  ASSERT_EQ(h.server.requests().size(), 2u);
  auto second = h.server.requests()[1].json();
  const auto& messages = second["messages"];
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[1]["role"], "assistant");
  const auto& answers = messages[2]["content"];
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0]["tool_use_id"], "toolu_1");
  EXPECT_EQ(answers[1]["tool_use_id"], "toolu_2");
  EXPECT_EQ(answers[1]["is_error"], true);
  EXPECT_EQ(h.tools.calls.size(), 1u);
}

TEST(AnthropicProvider, OverloadedIsRetried) {
  HttpHarness h;
  h.server.push(FakeModelServer::error(
      529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"));
  h.server.push(FakeModelServer::anthropic_text("back"));
  EXPECT_EQ(h.client(api::Provider::kAnthropic).complete(h.request()).value().text, "back");
  EXPECT_EQ(h.server.requests().size(), 2u);
}

}  // namespace
}  // namespace hb::runner

namespace hb::runner {
namespace {

TEST(Cancellation, SigtermAbortsACallInFlight) {
  fakes::FakeModelServer server;
  server.push({200, {}, "", std::chrono::milliseconds(0), true});
  fakes::FakeClock clock;
  auto http = http::make_client({});
  auto cancel = std::make_shared<http::CancelSource>();
  HttpModelClientOptions options;
  options.base_url = server.url() + "/v1";
  options.call_timeout = std::chrono::seconds(30);
  options.cancel = cancel;
  HttpModelClient client(options, *http, clock);
  ModelRequest request;
  request.model = "m";
  request.deadline = clock.now() + std::chrono::minutes(5);
  // Cancelled once the request reached the server (the call is in flight),
  // or after 10 s at most if it never does.
  std::thread canceller([&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (server.requests().empty() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    cancel->cancel();
  });
  auto started = std::chrono::steady_clock::now();
  {
    const ModelResult failed = client.complete(request);
    EXPECT_FALSE(failed.ok());  // not ASSERT: the canceller is joined below
    if (!failed.ok()) {
      EXPECT_EQ(failed.error().kind(), ProviderError::Kind::kCancelled) << failed.error().what();
    }
  }
  canceller.join();
  EXPECT_EQ(server.requests().size(), 1u) << "cancelled in flight, not before sending";
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

}  // namespace
}  // namespace hb::runner
