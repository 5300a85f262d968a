// The stand-in model's pure parts: directive parsing, the step plan, the
// decision per turn, and round trips through the runner's own wire code.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runner/anthropic_wire.h"
#include "runner/openai_wire.h"
#include "tools/fake_model/decision.h"
#include "tools/fake_model/model_request.h"
#include "tools/fake_model/responder.h"

namespace hb::fake_model {
namespace {

using nlohmann::json;

const std::vector<std::string> kAllTools = {"shell", "core_memory_append", "pause_heartbeats"};
constexpr const char* kNow = "2026-01-02T03:04:05Z";

ModelRequest request_with(const std::string& prompt, int tool_turns = 0,
                          std::vector<std::string> tools = kAllTools) {
  ModelRequest r;
  r.prompt_text = prompt;
  r.tool_turns = tool_turns;
  r.tools = std::move(tools);
  r.request_bytes = 4000;
  return r;
}

TEST(Directives, ParsesEachKindAndKeepsToolOrder) {
  Directives d = parse_directives(
      "Heartbeat. [[memory likes tea]] then [[sleep 5]] and [[pause 7]] [[fail 503]] [[hang]]");
  EXPECT_EQ(d.memory_text, "likes tea");
  EXPECT_EQ(d.sleep_seconds, 5);
  EXPECT_EQ(d.pause_minutes, 7);
  EXPECT_EQ(d.fail_status, 503);
  EXPECT_TRUE(d.hang);
  EXPECT_EQ(d.order, (std::vector<std::string>{"memory", "sleep", "pause"}));
  EXPECT_TRUE(d.problems.empty());
}

TEST(Directives, FirstOfAKindWinsAndBadArgumentsAreReported) {
  Directives d = parse_directives("[[pause 2]] [[pause 9]] [[sleep x]] [[fail 200]] [[PAUSE 3]]");
  EXPECT_EQ(d.pause_minutes, 2);
  EXPECT_FALSE(d.sleep_seconds);
  EXPECT_FALSE(d.fail_status);
  ASSERT_EQ(d.problems.size(), 2u);
  EXPECT_NE(d.problems[0].find("sleep x"), std::string::npos);
  EXPECT_NE(d.problems[1].find("400..599"), std::string::npos);
}

TEST(Directives, OutOfRangePauseAndUnknownNamesAreNotDirectives) {
  Directives d = parse_directives("[[pause 61]] [[link to docs]] [[memory]] [[ unclosed");
  EXPECT_FALSE(d.pause_minutes);
  EXPECT_FALSE(d.memory_text);
  EXPECT_TRUE(d.order.empty());
  EXPECT_EQ(d.problems.size(), 2u);
}

TEST(Decide, DefaultIsOneShellCallThenAFinalText) {
  Decision first = decide(request_with("Heartbeat. Check things."), kNow);
  ASSERT_EQ(first.kind, Decision::Kind::kToolCall);
  EXPECT_EQ(first.call.tool, "shell");
  EXPECT_EQ(first.call.arguments, (json{{"command", "date -u"}}));

  ModelRequest after = request_with("Heartbeat. Check things.", 1);
  after.last_tool_result = "exit code 0\nFri Jan  2 03:04:05 UTC 2026\n";
  Decision second = decide(after, kNow);
  ASSERT_EQ(second.kind, Decision::Kind::kText);
  EXPECT_NE(second.text.find("Stand-in model (hb-fake-model)"), std::string::npos);
  EXPECT_NE(second.text.find(kNow), std::string::npos);
  EXPECT_NE(second.text.find("Fri Jan  2"), std::string::npos);
}

TEST(Decide, WithoutShellTheFirstAnswerIsText) {
  Decision d = decide(request_with("Heartbeat.", 0, {"pause_heartbeats"}), kNow);
  EXPECT_EQ(d.kind, Decision::Kind::kText);
}

TEST(Decide, StepsFollowDirectiveOrderWithPauseLast) {
  const std::string prompt = "[[pause 4]] [[memory the user is Ada]] [[sleep 90]]";
  std::vector<std::string> tools;
  for (int turn = 0; turn < 3; ++turn) {
    Decision d = decide(request_with(prompt, turn), kNow);
    ASSERT_EQ(d.kind, Decision::Kind::kToolCall) << turn;
    tools.push_back(d.call.tool);
    if (d.call.tool == "shell") {
      EXPECT_EQ(d.call.arguments, (json{{"command", "sleep 90"}, {"timeout_seconds", 120}}));
    }
    if (d.call.tool == "core_memory_append") {
      EXPECT_EQ(d.call.arguments, (json{{"label", "human"}, {"content", "the user is Ada"}}));
    }
    if (d.call.tool == "pause_heartbeats") {
      EXPECT_EQ(d.call.arguments, (json{{"minutes", 4}}));
    }
  }
  EXPECT_EQ(tools, (std::vector<std::string>{"core_memory_append", "shell", "pause_heartbeats"}));
  EXPECT_EQ(decide(request_with(prompt, 3), kNow).kind, Decision::Kind::kText);
}

TEST(Decide, ShellDirectivesRunTheirCommandsInOrder) {
  const std::string prompt =
      "[[shell cat /proc/1/environ | tr '\\0' '\\n']] then [[sleep 3]] and [[shell echo done]]";
  std::vector<std::string> commands;
  for (int turn = 0; turn < 3; ++turn) {
    Decision d = decide(request_with(prompt, turn), kNow);
    ASSERT_EQ(d.kind, Decision::Kind::kToolCall) << turn;
    ASSERT_EQ(d.call.tool, "shell");
    commands.push_back(d.call.arguments["command"].get<std::string>());
  }
  EXPECT_EQ(commands, (std::vector<std::string>{"cat /proc/1/environ | tr '\\0' '\\n'", "sleep 3",
                                                "echo done"}));
  EXPECT_EQ(decide(request_with(prompt, 3), kNow).kind, Decision::Kind::kText);
  EXPECT_EQ(parse_directives("[[shell]]").problems.size(), 1u);
}

TEST(Decide, ToolsNotOfferedAreSkippedAndSaidSo) {
  Decision d = decide(request_with("[[pause 5]]", 0, {"shell"}), kNow);
  ASSERT_EQ(d.kind, Decision::Kind::kText);
  EXPECT_NE(d.text.find("pause_heartbeats was not offered"), std::string::npos);
}

TEST(Decide, IdleCallsNoDefaultToolAndAnswersTheIdleToken) {
  Decision first = decide(request_with("Heartbeat. [[idle]]", 0, {"shell"}), kNow);
  ASSERT_EQ(first.kind, Decision::Kind::kText);
  EXPECT_EQ(first.text, "HEARTBEAT_OK");
  // Other directives still run first, then the idle answer.
  Decision searched =
      decide(request_with("[[idle]] [[memory x]]", 0, {"core_memory_append"}), kNow);
  EXPECT_EQ(searched.kind, Decision::Kind::kToolCall);
  EXPECT_EQ(decide(request_with("[[idle]] [[memory x]]", 1, {"core_memory_append"}), kNow).text,
            "HEARTBEAT_OK");
}

TEST(Decide, SayEndsWithTheGivenTextWithoutTheDefaultTool) {
  Decision d = decide(request_with("Play. [[say @pong your turn]]", 0, {"shell"}), kNow);
  ASSERT_EQ(d.kind, Decision::Kind::kText);
  EXPECT_EQ(d.text, "@pong your turn");
  EXPECT_EQ(parse_directives("[[say]]").problems.size(), 1u);
}

TEST(Decide, FailAndHangWinOverEverything) {
  Decision fail = decide(request_with("[[sleep 1]] [[fail 429]]", 1), kNow);
  EXPECT_EQ(fail.kind, Decision::Kind::kFail);
  EXPECT_EQ(fail.status, 429);
  EXPECT_EQ(decide(request_with("[[hang]]"), kNow).kind, Decision::Kind::kHang);
}

TEST(Decide, AnswersNeverCarryDirectives) {
  ModelRequest r = request_with("[[sleep x]]", 0, {});
  r.last_tool_result = "output with [[pause 3]] inside";
  Decision d = decide(r, kNow);
  ASSERT_EQ(d.kind, Decision::Kind::kText);
  EXPECT_EQ(d.text.find("[["), std::string::npos) << d.text;
}

// The request as heartbeat-runner encodes it after one shell call.
runner::ModelRequest runner_request(const std::string& prompt, bool with_tool_result) {
  runner::ModelRequest r;
  r.model = "gpt-4o-mini";
  r.system = "You are agent \"a\". [[memory from the persona]]";
  r.max_tokens = 256;
  r.messages.push_back({runner::Message::Role::kUser, prompt, {}, {}});
  for (const char* name : {"shell", "core_memory_append", "pause_heartbeats"}) {
    r.tools.push_back({name, "d", json{{"type", "object"}}});
  }
  if (with_tool_result) {
    r.messages.push_back({runner::Message::Role::kAssistant,
                          "",
                          {{"call_1", "core_memory_append", R"({"label":"human"})"}},
                          {}});
    runner::Message results;
    results.role = runner::Message::Role::kToolResults;
    results.tool_results.push_back({"call_1", "core_memory_append", "appended", false});
    r.messages.push_back(results);
  }
  return r;
}

TEST(Responder, OpenAIRoundTripThroughTheRunnersWireCode) {
  const std::string body =
      runner::openai::encode_request(runner_request("Heartbeat [[pause 3]]", false)).dump();
  HttpReply reply = respond("POST", "/v1/chat/completions", body, kNow, 1767323045);
  ASSERT_EQ(reply.status, 200) << reply.body;
  runner::ModelReply decoded = runner::openai::decode_response(reply.body).value();
  ASSERT_EQ(decoded.tool_calls.size(), 1u);
  EXPECT_EQ(decoded.tool_calls[0].name, "core_memory_append");  // the system's directive first
  EXPECT_EQ(decoded.finish, runner::ModelReply::Finish::kToolUse);
  EXPECT_EQ(decoded.usage.input_tokens, prompt_tokens_for(body.size()));
  EXPECT_GT(decoded.usage.output_tokens, 0);
  EXPECT_EQ(json::parse(reply.body)["model"], "hb-fake-model");

  const std::string second =
      runner::openai::encode_request(runner_request("Heartbeat [[pause 3]]", true)).dump();
  decoded = runner::openai::decode_response(
                respond("POST", "/v1/chat/completions", second, kNow, 1767323045).body)
                .value();
  ASSERT_EQ(decoded.tool_calls.size(), 1u);
  EXPECT_EQ(decoded.tool_calls[0].name, "pause_heartbeats");
  EXPECT_EQ(json::parse(decoded.tool_calls[0].arguments), (json{{"minutes", 3}}));
}

TEST(Responder, ExpensiveReportsTheWholeOutputLimit) {
  const std::string body =
      runner::openai::encode_request(runner_request("Spend. [[expensive]]", false)).dump();
  runner::ModelReply decoded =
      runner::openai::decode_response(
          respond("POST", "/v1/chat/completions", body, kNow, 1767323045).body)
          .value();
  EXPECT_EQ(decoded.usage.output_tokens, 256);  // runner_request's max_tokens
  EXPECT_TRUE(parse_directives("x [[expensive]]").expensive);
  EXPECT_FALSE(parse_directives("x").expensive);
}

TEST(Responder, AnthropicRoundTripThroughTheRunnersWireCode) {
  const std::string body =
      runner::anthropic::encode_request(runner_request("Heartbeat.", true)).dump();
  HttpReply reply = respond("POST", "/v1/messages", body, kNow, 1767323045);
  ASSERT_EQ(reply.status, 200) << reply.body;
  runner::ModelReply decoded = runner::anthropic::decode_response(reply.body).value();
  EXPECT_TRUE(decoded.tool_calls.empty());
  EXPECT_NE(decoded.text.find("appended"), std::string::npos);
  EXPECT_EQ(decoded.finish, runner::ModelReply::Finish::kEndTurn);
  EXPECT_GT(decoded.usage.input_tokens, 0);
}

TEST(Responder, FailHangErrorsAndRoutes) {
  const std::string failing =
      runner::openai::encode_request(runner_request("[[fail 503]]", false)).dump();
  HttpReply fail = respond("POST", "/v1/chat/completions", failing, kNow, 0);
  EXPECT_EQ(fail.status, 503);
  EXPECT_NE(runner::openai::error_message(fail.body).find("scripted failure"), std::string::npos);

  const std::string quota =
      runner::openai::encode_request(runner_request("[[quota 3600]]", false)).dump();
  HttpReply limited = respond("POST", "/v1/chat/completions", quota, kNow, 0);
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(limited.retry_after_seconds, 3600);
  EXPECT_EQ(parse_directives("[[quota 0]]").problems.size(), 1u) << "seconds 1..86400";

  const std::string hanging =
      runner::anthropic::encode_request(runner_request("[[hang]]", false)).dump();
  EXPECT_TRUE(respond("POST", "/v1/messages", hanging, kNow, 0).hang);

  EXPECT_EQ(respond("POST", "/v1/chat/completions", "not json", kNow, 0).status, 400);
  EXPECT_EQ(respond("GET", "/healthz", "", kNow, 0).status, 200);
  EXPECT_EQ(respond("GET", "/v1/models", "", kNow, 0).status, 200);
  EXPECT_EQ(respond("GET", "/nowhere", "", kNow, 0).status, 404);
}

}  // namespace
}  // namespace hb::fake_model
