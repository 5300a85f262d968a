#include "runner/agent_loop.h"

#include <gtest/gtest.h>

#include "api/rfc3339.h"
#include "runner/limits.h"
#include "runner/stop_rules.h"
#include "runner/tool_specs.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/scripted_model.h"

namespace hb::runner {
namespace {

using fakes::FakeClock;
using fakes::ScriptedModel;
using namespace std::chrono_literals;

class FakeTools final : public ToolRunner {
 public:
  explicit FakeTools(FakeClock& clock) : clock_(clock) {}
  ToolOutcome run(const std::string& name, const nlohmann::json& arguments, TimePoint) override {
    calls.push_back({name, arguments});
    clock_.jump(cost_per_call);
    if (tools_gone) return {"the tools container did not answer: gone", true, true};
    return {output.empty() ? "ran " + name : output, false};
  }
  std::vector<std::pair<std::string, nlohmann::json>> calls;
  std::string output;  // each call's output; empty: "ran NAME"
  std::chrono::milliseconds cost_per_call{0};
  bool tools_gone = false;

 private:
  FakeClock& clock_;
};

struct Harness {
  FakeClock clock;
  ScriptedModel model;
  FakeTools tools{clock};
  Heartbeat heartbeat{clock};
  MemoryTranscript transcript;
  LoopConfig config;
  int prompts_rendered = 0;

  explicit Harness(api::AgentType type = api::AgentType::kMemgpt) {
    config.model = "m";
    config.agent_type = type;
    config.tools = offered_tools(api::capabilities(type), true).tools;
    config.max_tokens = 100;
    config.pricing = {100, 100};
    config.wall_deadline = clock.now() + 10min;
    config.first_message = "heartbeat";
    config.system_prompt = [this] { return "system #" + std::to_string(++prompts_rendered); };
  }
  api::RunResult run() {
    return run_agent_loop(config, {model, tools, clock, heartbeat, transcript});
  }
};

TEST(AgentLoop, ToolsGoneForGoodStopsTheLoop) {
  Harness h;
  h.tools.tools_gone = true;
  h.model.push(ScriptedModel::call("shell", R"({"command":"ls"})", "c1"));
  h.model.push(ScriptedModel::text("never asked"));
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kToolsUnavailable));
  EXPECT_EQ(result.stop_reason, "tools_unavailable");
  EXPECT_EQ(result.llm_calls, 1);
  EXPECT_NE(result.error.find("did not answer"), std::string::npos);
}

TEST(AgentLoop, DeeplyNestedToolArgumentsAreRefusedNotParsed) {
  Harness h;
  h.model.push(ScriptedModel::call("shell", std::string(100000, '['), "c1"));
  h.model.push(ScriptedModel::text("ok"));
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kCompleted));
  EXPECT_TRUE(h.tools.calls.empty());
  EXPECT_NE(
      h.transcript.events("tool_result").back()["content"].get<std::string>().find("nested deeper"),
      std::string::npos);
}

TEST(AgentLoop, MultiStepToolLoopThenAnswer) {
  Harness h;
  h.model.push(ScriptedModel::call("shell", R"({"command":"ls"})", "c1"));
  h.model.push(
      ScriptedModel::call("core_memory_append", R"({"label":"human","content":"x"})", "c2"));
  h.model.push(ScriptedModel::text("All done."));
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kCompleted));
  EXPECT_EQ(result.output, "All done.");
  EXPECT_EQ(result.iterations, 3);
  EXPECT_EQ(result.llm_calls, 3);
  EXPECT_EQ(result.tool_calls, 2);
  EXPECT_EQ(result.input_tokens, 300);
  EXPECT_NEAR(*result.cost_cents, 360 * 100 / 1e6, 1e-12);
  ASSERT_EQ(h.tools.calls.size(), 2u);
  EXPECT_EQ(h.tools.calls[0].second["command"], "ls");
  // The third request carries the whole conversation, each call answered.
  const auto& third = h.model.requests()[2];
  ASSERT_EQ(third.messages.size(), 5u);
  EXPECT_EQ(third.messages[2].role, Message::Role::kToolResults);
  EXPECT_EQ(third.messages[2].tool_results[0].call_id, "c1");
  EXPECT_EQ(third.messages[2].tool_results[0].content, "ran shell");
  EXPECT_EQ(third.system, "system #3") << "system prompt re-rendered every call";
  EXPECT_EQ(third.tools.size(), 7u);
  // Beats: before and after each model call (and one more with its usage
  // report, so the Lease carries it at once) and each tool.
  EXPECT_EQ(h.heartbeat.beats(), 3 * 3 + 2 * 2);
  EXPECT_EQ(h.heartbeat.usage().llm_calls, 3);
  EXPECT_EQ(h.transcript.events("tool_result").size(), 2u);
  EXPECT_EQ(h.transcript.events("stop").back()["stopReason"], "completed");
}

// Each chat call is timed on the injected clock, into the result's fixed
// buckets (api/call_durations.h); a call that failed under its error type.
TEST(AgentLoop, ModelCallDurationsComeFromTheInjectedClock) {
  Harness h;
  // The reply, `took` after the request on the harness's clock.
  auto after = [](FakeClock& clock, std::chrono::milliseconds took, ModelReply reply) {
    return [&clock, took, reply](const ModelRequest&) -> ModelResult {
      clock.jump(took);
      return reply;
    };
  };
  h.model.push(after(h.clock, 5ms, ScriptedModel::call("shell", R"({"command":"ls"})", "c1")));
  h.model.push(after(h.clock, 1500ms, ScriptedModel::call("shell", R"({"command":"pwd"})", "c2")));
  h.model.push(after(h.clock, 100s, ScriptedModel::text("done")));
  h.tools.cost_per_call = 3s;  // tool time is not model time
  const api::RunResult result = h.run();
  ASSERT_TRUE(result.call_durations);
  const api::CallDurations& d = *result.call_durations;
  EXPECT_EQ(api::call_count(d), 3);
  EXPECT_EQ(api::all_calls(d), 3) << "no call failed";
  EXPECT_EQ(d.counts[0], 1);   // 5 ms: up to 10 ms
  EXPECT_EQ(d.counts[8], 1);   // 1.5 s: up to 2.56 s
  EXPECT_EQ(d.counts[14], 1);  // 100 s: past 81.92 s
  EXPECT_NEAR(d.sum_seconds, 101.505, 1e-9);
  EXPECT_EQ(api::call_durations_problem(d, result.llm_calls, 1e9), "");

  Harness failing;
  failing.model.push(
      after(failing.clock, 2s, ScriptedModel::call("shell", R"({"command":"ls"})", "c1")));
  const api::RunResult failed = failing.run();  // the script is exhausted: an error
  ASSERT_TRUE(failed.call_durations);
  EXPECT_EQ(failed.llm_calls, 2);
  EXPECT_EQ(api::call_count(*failed.call_durations), 1);
  // The exhausted script answers 500: the failed call is a 5xx, and only that.
  EXPECT_EQ(api::all_calls(*failed.call_durations), 2);
  const api::DurationBuckets& server_error =
      failed.call_durations->failed_of(api::CallErrorType::kServerError);
  EXPECT_EQ(api::call_count(server_error), 1);
  EXPECT_EQ(api::call_durations_problem(*failed.call_durations, failed.llm_calls, 1e9), "");

  Harness none;
  none.config.wall_deadline = none.clock.now() - 1s;  // no call made
  EXPECT_FALSE(none.run().call_durations);
}

// A failed call's error type is its kind, an HTTP status by class: the
// fixed vocabulary the operator's error_type label takes.
TEST(AgentLoop, AFailedCallIsTimedUnderItsErrorType) {
  using Kind = ProviderError::Kind;
  struct Case {
    Kind kind;
    int status;
    api::CallErrorType type;
  };
  for (const Case& c : {Case{Kind::kTimeout, 0, api::CallErrorType::kTimeout},
                        Case{Kind::kTransport, 0, api::CallErrorType::kTransport},
                        Case{Kind::kHttpStatus, 404, api::CallErrorType::kClientError},
                        Case{Kind::kHttpStatus, 503, api::CallErrorType::kServerError},
                        Case{Kind::kHttpStatus, 302, api::CallErrorType::kOther},
                        Case{Kind::kQuota, 429, api::CallErrorType::kQuota},
                        Case{Kind::kBadResponse, 200, api::CallErrorType::kBadResponse},
                        Case{Kind::kCancelled, 0, api::CallErrorType::kCancelled}}) {
    Harness h;
    h.model.push([&h, c](const ModelRequest&) -> ModelResult {
      h.clock.jump(30s);
      return ProviderError(c.kind, c.status, "failed");
    });
    const api::RunResult result = h.run();
    const std::string name(api::call_error_type_name(c.type));
    ASSERT_TRUE(result.call_durations) << name;
    EXPECT_EQ(api::call_count(*result.call_durations), 0) << name;
    const api::DurationBuckets& failed = result.call_durations->failed_of(c.type);
    EXPECT_EQ(api::call_count(failed), 1) << name;
    EXPECT_EQ(failed.counts[12], 1) << name;  // 30 s: up to 40.96 s
    EXPECT_NEAR(failed.sum_seconds, 30.0, 1e-9) << name;
    EXPECT_EQ(api::all_calls(*result.call_durations), 1) << name;
  }
}

// usage.actionToolCalls: the calls that could change something. Memory
// searches and pause_heartbeats read; a refused tool never ran.
TEST(AgentLoop, ActionToolCallsLeaveOutReadsAndRefusedTools) {
  Harness h;
  h.model.push(ScriptedModel::call("archival_memory_search", R"({"query":"x"})", "c1"));
  h.model.push(ScriptedModel::call("conversation_search", R"({"query":"y"})", "c2"));
  h.model.push(ScriptedModel::call("no_such_tool", R"({})", "c3"));
  h.model.push(ScriptedModel::text("HEARTBEAT_OK"));
  auto quiet = h.run();
  EXPECT_EQ(quiet.tool_calls, 3);
  EXPECT_EQ(quiet.action_tool_calls, 0);

  Harness busy;
  busy.model.push(ScriptedModel::call("conversation_search", R"({"query":"y"})", "c1"));
  busy.model.push(ScriptedModel::call("shell", R"({"command":"ls"})", "c2"));
  busy.model.push(
      ScriptedModel::call("core_memory_append", R"({"label":"human","content":"x"})", "c3"));
  busy.model.push(ScriptedModel::text("done"));
  auto acted = busy.run();
  EXPECT_EQ(acted.tool_calls, 3);
  EXPECT_EQ(acted.action_tool_calls, 2);

  Harness none;
  none.model.push(ScriptedModel::text("nothing to do"));
  EXPECT_EQ(none.run().action_tool_calls, 0) << "counted from the start, so present";
}

TEST(AgentLoop, PauseHeartbeatsEndsTheLoopAtOnce) {
  Harness h;
  ScriptedModel::Step step = [](const ModelRequest&) {
    auto reply = ScriptedModel::call("pause_heartbeats", R"({"minutes": 15})");
    reply.tool_calls.push_back({"after", "shell", R"({"command":"never"})"});
    return reply;
  };
  h.model.push(step);
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kPauseHeartbeats));
  EXPECT_EQ(result.pause_minutes, 15);
  EXPECT_EQ(result.pause_until, h.clock.now() + 15min);
  EXPECT_TRUE(h.tools.calls.empty()) << "calls after pause_heartbeats are not run";
  EXPECT_EQ(h.model.requests().size(), 1u);
}

TEST(AgentLoop, PauseMinutesClampedAndDefaulted) {
  using nlohmann::json;
  EXPECT_EQ(pause_minutes_from_arguments(json::object()), 2);
  EXPECT_EQ(pause_minutes_from_arguments({{"minutes", 0}}), 1);
  EXPECT_EQ(pause_minutes_from_arguments({{"minutes", -5}}), 1);
  EXPECT_EQ(pause_minutes_from_arguments({{"minutes", 600}}), 60);
  EXPECT_EQ(pause_minutes_from_arguments({{"minutes", 7.4}}), 7);
  EXPECT_EQ(pause_minutes_from_arguments({{"minutes", "9"}}), 9);
  EXPECT_EQ(pause_minutes_from_arguments({{"minutes", "soon"}}), 2);
  EXPECT_EQ(pause_minutes_from_arguments({{"minutes", nullptr}}), 2);
}

TEST(AgentLoop, PauseUsesTheInjectedClockAfterAJump) {
  Harness h;
  h.clock.jump(-3h);  // skewed clock: the pause is relative to it
  h.config.wall_deadline = h.clock.now() + 10min;
  h.model.push(ScriptedModel::call("pause_heartbeats", "{}"));
  auto result = h.run();
  EXPECT_EQ(result.pause_until, h.clock.now() + 2min);
}

// A number past double's range made nlohmann::json throw out_of_range (not
// parse_error), which escaped the loop instead of answering the model.
TEST(AgentLoop, ArgumentsWithAnOutOfRangeNumberAreAnsweredWithAToolError) {
  Harness h;
  h.model.push(ScriptedModel::call("shell", R"({"command": "ls", "x": 1e999})", "big"));
  h.model.push(ScriptedModel::text("sorry"));
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kCompleted));
  EXPECT_TRUE(h.tools.calls.empty());
  const auto& answer = h.model.requests()[1].messages[2].tool_results[0];
  EXPECT_TRUE(answer.is_error);
  EXPECT_NE(answer.content.find("not valid JSON"), std::string::npos);
}

TEST(AgentLoop, MalformedArgumentsAreAnsweredWithAToolError) {
  Harness h;
  h.model.push(ScriptedModel::call("shell", R"({"command": "ls")", "bad"));
  h.model.push(ScriptedModel::call("shell", R"([1,2])", "array"));
  h.model.push(ScriptedModel::text("sorry"));
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kCompleted));
  EXPECT_TRUE(h.tools.calls.empty());
  const auto& answer = h.model.requests()[1].messages[2].tool_results[0];
  EXPECT_TRUE(answer.is_error);
  EXPECT_NE(answer.content.find("not valid JSON"), std::string::npos);
  const auto& second = h.model.requests()[2].messages[4].tool_results[0];
  EXPECT_NE(second.content.find("must be a JSON object"), std::string::npos);
}

TEST(AgentLoop, ForbiddenToolIsRefusedLoggedAndNeverRun) {
  Harness h(api::AgentType::kReact);
  std::vector<std::string> warnings;
  h.config.log_warning = [&](const std::string& w) { warnings.push_back(w); };
  h.model.push(ScriptedModel::call("core_memory_append", R"({"label":"a","content":"b"})"));
  h.model.push(ScriptedModel::call("pause_heartbeats", R"({"minutes":5})"));
  h.model.push(ScriptedModel::text("ok"));
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kCompleted));
  EXPECT_FALSE(result.pause_minutes.has_value()) << "react agents cannot pause";
  EXPECT_TRUE(h.tools.calls.empty());
  EXPECT_EQ(h.model.requests()[0].tools.size(), 1u) << "only shell offered";
  const auto& answer = h.model.requests()[1].messages[2].tool_results[0];
  EXPECT_TRUE(answer.is_error);
  EXPECT_NE(answer.content.find("not available"), std::string::npos);
  EXPECT_NE(answer.content.find("react_agent"), std::string::npos);
  EXPECT_EQ(h.transcript.events("forbidden_tool").size(), 2u);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("core_memory_append"), std::string::npos);
}

TEST(AgentLoop, UnavailableArchivalToolIsRefused) {
  Harness h;
  h.config.tools = offered_tools(api::capabilities(api::AgentType::kMemgpt), false).tools;
  h.model.push(ScriptedModel::call("archival_memory_insert", R"({"content":"x"})"));
  h.model.push(ScriptedModel::text("ok"));
  h.run();
  EXPECT_TRUE(h.tools.calls.empty());
  EXPECT_TRUE(h.model.requests()[1].messages[2].tool_results[0].is_error);
}

TEST(AgentLoop, IterationLimitOfTheType) {
  Harness h(api::AgentType::kMemgpt);
  for (int i = 0; i < 10; ++i)
    h.model.push(
        ScriptedModel::call("shell", R"({"command":"echo )" + std::to_string(i) + R"("})"));
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kMaxIterations));
  EXPECT_EQ(result.iterations, 5);
  EXPECT_EQ(h.model.requests().size(), 5u);

  Harness react(api::AgentType::kReact);
  for (int i = 0; i < 20; ++i)
    react.model.push(
        ScriptedModel::call("shell", R"({"command":"echo )" + std::to_string(i) + R"("})"));
  EXPECT_EQ(react.run().iterations, 10);
}

TEST(AgentLoop, BudgetStopsBeforeACallThatCouldPassIt) {
  Harness h;
  h.config.pricing = {1'000'000, 1'000'000};  // 1 cent per token
  h.config.max_tokens = 10;
  // First call's worst case: ~ (system 9 + "heartbeat" 9+16 + tools) / 3 + 10 output tokens.
  h.config.budget_cents = 1200;
  h.model.push(ScriptedModel::call("shell", R"({"command":"ls"})", "c1", 900, 10));
  h.model.push(ScriptedModel::text("unreached"));
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kBudget));
  EXPECT_EQ(result.llm_calls, 1);
  EXPECT_DOUBLE_EQ(*result.cost_cents, 910);
  auto stop = h.transcript.events("budget_stop");
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_GT(stop[0]["spentCents"].get<double>() + stop[0]["nextCallWorstCents"].get<double>(),
            1200);
}

TEST(AgentLoop, BudgetTooSmallForTheFirstCallMakesNoCall) {
  Harness h;
  h.config.budget_cents = 0.0001;
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kBudget));
  EXPECT_EQ(result.llm_calls, 0);
  EXPECT_TRUE(h.model.requests().empty());
}

// A zero-priced model: the cents budget never stops it, the token cap does.
TEST(AgentLoop, PerRunTokensStopsBeforeACallThatCouldPassIt) {
  Harness h;
  h.config.pricing = {0, 0};
  h.config.budget_cents = 0;  // 0 against 0: never reached
  h.config.max_tokens = 10;
  // The first call's worst case is well under 1,200 tokens; after it used
  // 910, the second call's estimated input plus 10 output tokens is over.
  h.config.budget_tokens = 1200;
  h.model.push(ScriptedModel::call("shell", R"({"command":"ls"})", "c1", 900, 10));
  h.model.push(ScriptedModel::text("unreached"));
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kPerRunTokenBudget));
  EXPECT_EQ(result.llm_calls, 1);
  EXPECT_EQ(h.model.requests().size(), 1u);
  EXPECT_EQ(result.input_tokens + result.output_tokens, 910);
  auto stop = h.transcript.events("token_budget_stop");
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_EQ(stop[0]["tokensUsed"].get<long long>(), 910);
  EXPECT_GT(910 + stop[0]["nextCallWorstTokens"].get<long long>(), 1200);
  EXPECT_EQ(stop[0]["budgetTokens"].get<long long>(), 1200);
}

// The positive control: the same script with no cap, or a large one, makes the second call.
TEST(AgentLoop, WithoutATokenCapOrUnderALargeOneTheSecondCallIsMade) {
  for (std::optional<long long> cap :
       {std::optional<long long>(), std::optional<long long>(100000)}) {
    Harness h;
    h.config.pricing = {0, 0};
    h.config.budget_cents = 0;
    h.config.max_tokens = 10;
    h.config.budget_tokens = cap;
    h.model.push(ScriptedModel::call("shell", R"({"command":"ls"})", "c1", 900, 10));
    h.model.push(ScriptedModel::text("done"));
    auto result = h.run();
    EXPECT_EQ(result.stop_reason, to_string(StopReason::kCompleted));
    EXPECT_EQ(result.llm_calls, 2);
    EXPECT_TRUE(h.transcript.events("token_budget_stop").empty());
  }
}

TEST(AgentLoop, TokenCapBelowTheFirstCallMakesNoCall) {
  Harness h;
  h.config.budget_tokens = 10;  // less than max_tokens (100) alone
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kPerRunTokenBudget));
  EXPECT_EQ(result.llm_calls, 0);
  EXPECT_TRUE(h.model.requests().empty());
}

TEST(AgentLoop, RepeatedIdenticalCallStops) {
  Harness h;
  for (int i = 0; i < 3; ++i) h.model.push(ScriptedModel::call("shell", R"({"command":"ls"})"));
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kRepeatedToolCall));
  EXPECT_EQ(h.tools.calls.size(), 2u) << "the third identical call is not run";
  EXPECT_NE(result.error.find("3 times in a row"), std::string::npos);
}

TEST(AgentLoop, WallDeadlineStopsBeforeTheNextCall) {
  Harness h;
  h.tools.cost_per_call = 6min;  // the clock jumps while the tool runs
  h.model.push(ScriptedModel::call("shell", R"({"command":"a"})"));
  h.model.push(ScriptedModel::call("shell", R"({"command":"b"})"));
  h.model.push(ScriptedModel::text("unreached"));
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kDeadline));
  EXPECT_EQ(result.llm_calls, 2);
}

TEST(AgentLoop, ProviderErrorEndsTheRunWithUsageSoFar) {
  Harness h;
  h.model.push(ScriptedModel::call("shell", R"({"command":"a"})"));
  h.model.push([](const ModelRequest&) -> ModelResult {
    return ProviderError(ProviderError::Kind::kHttpStatus, 401, "HTTP 401: invalid x-api-key");
  });
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kProviderError));
  EXPECT_NE(result.error.find("401"), std::string::npos);
  EXPECT_EQ(result.input_tokens, 100);
}

TEST(AgentLoop, MaxTokensAnswerIsReported) {
  Harness h;
  auto reply = ScriptedModel::text("cut off");
  reply.finish = ModelReply::Finish::kMaxTokens;
  h.model.push(reply);
  EXPECT_EQ(h.run().stop_reason, to_string(StopReason::kMaxTokens));
}

TEST(AgentLoop, CancelledBetweenSteps) {
  Harness h;
  int polls = 0;
  h.config.cancelled = [&] { return ++polls > 1; };
  h.model.push(ScriptedModel::call("shell", R"({"command":"a"})"));
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kCancelled));
  EXPECT_EQ(result.llm_calls, 1);
}

TEST(AgentLoop, MissingUsageIsEstimatedAndNoted) {
  Harness h;
  auto reply = ScriptedModel::text("hi");
  reply.usage = {};
  reply.input_reported = false;
  reply.output_reported = false;
  h.model.push(reply);
  auto result = h.run();
  EXPECT_GT(result.input_tokens, 0);
  EXPECT_GT(result.output_tokens, 0);
  EXPECT_EQ(result.estimated_usage, (std::vector<std::string>{"inputTokens", "outputTokens"}));
  ASSERT_EQ(result.notes.size(), 2u);
}

TEST(AgentLoop, CacheCountsAreSummedIntoTheResult) {
  Harness h;
  auto first = ScriptedModel::call("shell", R"({"command":"a"})");
  first.cache_write_tokens = 80;
  auto second = ScriptedModel::text("done");
  second.cache_read_tokens = 70;
  h.model.push(first);
  h.model.push(second);
  auto result = h.run();
  EXPECT_EQ(result.cache_write_input_tokens, 80);
  EXPECT_EQ(result.cache_read_input_tokens, 70);
  EXPECT_EQ(result.input_tokens, 200) << "still all of the input";
  const auto usage = api::result_to_json(result)["usage"];
  EXPECT_EQ(usage["cacheReadInputTokens"], 70);
  EXPECT_EQ(usage["cacheWriteInputTokens"], 80);
  // On the Lease too, so a runner killed after the call is charged them.
  EXPECT_EQ(h.heartbeat.usage().cache_read_input_tokens, 70);
  EXPECT_EQ(h.heartbeat.usage().cache_write_input_tokens, 80);
}

// Only the missing count is estimated; the reported one is charged as sent.
TEST(AgentLoop, EachMissingUsageFieldIsEstimatedAlone) {
  Harness h;
  auto reply = ScriptedModel::text("hi");
  reply.usage = {0, 7};
  reply.input_reported = false;
  h.model.push(reply);
  auto result = h.run();
  EXPECT_GT(result.input_tokens, 0);
  EXPECT_EQ(result.output_tokens, 7);
  EXPECT_EQ(result.estimated_usage, (std::vector<std::string>{"inputTokens"}));
  const auto rendered = api::result_to_json(result);
  EXPECT_EQ(rendered["usage"]["estimated"], nlohmann::json::array({"inputTokens"}));
}

// `count` shell calls with distinct arguments in one reply.
ModelReply many_calls(std::size_t count, const std::string& text = "") {
  ModelReply reply = ScriptedModel::call("shell", R"({"command":"echo 0"})");
  reply.text = text;
  for (std::size_t i = 1; i < count; ++i) {
    reply.tool_calls.push_back(
        {"c" + std::to_string(i), "shell", R"({"command":"echo )" + std::to_string(i) + R"("})"});
  }
  return reply;
}

TEST(AgentLoop, AReplyAskingForTooManyToolCallsRunsTheBoundAndStops) {
  Harness h;
  h.model.push(many_calls(1000));
  h.model.push(ScriptedModel::text("never asked"));
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, "tool_calls_per_reply");
  EXPECT_EQ(h.tools.calls.size(), kToolCallsPerReplyMax);
  EXPECT_EQ(result.tool_calls, static_cast<int64_t>(kToolCallsPerReplyMax));
  EXPECT_EQ(result.llm_calls, 1);
  EXPECT_NE(result.error.find("at most 32"), std::string::npos) << result.error;
  const auto not_run = h.transcript.events("tool_calls_not_run");
  ASSERT_EQ(not_run.size(), 1u);
  EXPECT_EQ(not_run[0]["count"], 1000 - kToolCallsPerReplyMax);
}

TEST(AgentLoop, AReplyAtTheToolCallBoundRunsThemAllAndGoesOn) {
  Harness h;
  h.model.push(many_calls(kToolCallsPerReplyMax));
  h.model.push(ScriptedModel::text("done"));
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, "completed");
  EXPECT_EQ(h.tools.calls.size(), kToolCallsPerReplyMax);
}

// Control bytes grow six-fold once escaped: the bound counts them that way,
// so no later request can carry more than it.
TEST(AgentLoop, ToolOutputPastTheRunBoundIsWithheldAndTheRunStops) {
  Harness h;
  h.tools.output = std::string(16 * 1024, '\x01');
  for (int i = 0; i < 5; ++i) h.model.push(many_calls(kToolCallsPerReplyMax));
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, "tool_output_bytes");
  EXPECT_EQ(result.llm_calls, 2) << "32 x 96 KiB fit the first reply; the second passes 4 MiB";
  for (const auto& request : h.model.requests()) {
    EXPECT_LE(request_content_bytes(request), kModelRequestBytesMax);
  }
  const auto results = h.transcript.events("tool_result");
  EXPECT_EQ(results.back()["content"].get<std::string>().rfind("output withheld", 0), 0u);
}

TEST(AgentLoop, ARequestPastTheBytesBoundIsNotSent) {
  Harness h;
  h.model.push(many_calls(1, std::string(kModelRequestBytesMax, 'x')));
  h.model.push(ScriptedModel::text("never asked"));
  auto result = h.run();
  EXPECT_EQ(result.stop_reason, "request_bytes");
  EXPECT_EQ(result.llm_calls, 1);
  EXPECT_EQ(h.model.requests().size(), 1u);
  EXPECT_EQ(h.transcript.events("request_bytes_stop").size(), 1u);
}

TEST(StopRules, RequestBytesCountEscapes) {
  EXPECT_EQ(json_escaped_bytes("ab"), 2u);
  EXPECT_EQ(json_escaped_bytes("\"\n"), 4u);
  EXPECT_EQ(json_escaped_bytes(std::string(1, '\x01')), 6u);
  ModelRequest request;
  request.system = "s";
  request.messages.push_back({Message::Role::kUser, "hi", {}, {}});
  EXPECT_EQ(request_content_bytes(request), 1 + kRequestItemOverheadBytes + 2);
}

}  // namespace
}  // namespace hb::runner
