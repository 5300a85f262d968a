#include <gtest/gtest.h>

#include "runner/anthropic_wire.h"
#include "runner/errors.h"
#include "runner/openai_wire.h"

namespace hb::runner {
namespace {

using nlohmann::json;

ModelRequest conversation() {
  ModelRequest request;
  request.model = "m";
  request.system = "sys";
  request.max_tokens = 256;
  request.tools = {{"shell", "run", json{{"type", "object"}}}};
  request.messages.push_back({Message::Role::kUser, "wake up", {}, {}});
  request.messages.push_back({Message::Role::kAssistant,
                              "",
                              {{"c1", "shell", R"({"command":"ls"})"}, {"c2", "shell", "{bad"}},
                              {}});
  request.messages.push_back({Message::Role::kToolResults,
                              "",
                              {},
                              {{"c1", "shell", "a b", false}, {"c2", "shell", "bad json", true}}});
  return request;
}

TEST(OpenAIWire, EncodesToolsCallsAndResults) {
  json body = openai::encode_request(conversation());
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["max_tokens"], 256);
  ASSERT_EQ(body["messages"].size(), 5u);
  EXPECT_EQ(body["messages"][0], json({{"role", "system"}, {"content", "sys"}}));
  EXPECT_EQ(body["messages"][1]["role"], "user");
  const json& assistant = body["messages"][2];
  EXPECT_TRUE(assistant["content"].is_null());
  EXPECT_EQ(assistant["tool_calls"][0]["type"], "function");
  EXPECT_EQ(assistant["tool_calls"][0]["function"]["arguments"], R"({"command":"ls"})");
  EXPECT_EQ(assistant["tool_calls"][1]["function"]["arguments"], "{bad") << "echoed as sent";
  EXPECT_EQ(body["messages"][3],
            json({{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "a b"}}));
  EXPECT_EQ(body["messages"][4]["content"], "Error: bad json");
  EXPECT_EQ(body["tools"][0]["type"], "function");
  EXPECT_EQ(body["tools"][0]["function"]["name"], "shell");
  EXPECT_EQ(body["tools"][0]["function"]["parameters"]["type"], "object");
}

TEST(OpenAIWire, DecodesToolCallsFinishAndUsage) {
  auto reply =
      openai::decode_response(R"({"id":"x","choices":[{"index":0,"message":{"role":"assistant",
    "content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"shell",
    "arguments":"{\"command\": \"date\"}"}},{"type":"function","function":{"name":"x","arguments":{"a":1}}}]},
    "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":50,"completion_tokens":7,"total_tokens":57}})");
  EXPECT_EQ(reply.finish, ModelReply::Finish::kToolUse);
  EXPECT_EQ(reply.finish_raw, "tool_calls");
  ASSERT_EQ(reply.tool_calls.size(), 2u);
  EXPECT_EQ(reply.tool_calls[0].id, "call_9");
  EXPECT_EQ(reply.tool_calls[0].arguments, R"({"command": "date"})");
  EXPECT_EQ(reply.tool_calls[1].id, "call_2") << "missing ids are made up";
  EXPECT_EQ(reply.tool_calls[1].arguments, R"({"a":1})");
  EXPECT_EQ(reply.usage.input_tokens, 50);
  EXPECT_EQ(reply.usage.output_tokens, 7);
  EXPECT_TRUE(reply.text.empty());
}

TEST(OpenAIWire, TextLengthAndMissingUsage) {
  auto reply = openai::decode_response(
      R"({"choices":[{"message":{"content":"hello"},"finish_reason":"length"}]})");
  EXPECT_EQ(reply.text, "hello");
  EXPECT_EQ(reply.finish, ModelReply::Finish::kMaxTokens);
  EXPECT_FALSE(reply.usage_reported);
  EXPECT_THROW(openai::decode_response("not json"), ProviderError);
  EXPECT_THROW(openai::decode_response(R"({"choices":[]})"), ProviderError);
}

TEST(OpenAIWire, ErrorsAndQuota) {
  std::string quota =
      R"({"error":{"message":"You exceeded your current quota","type":"insufficient_quota",
    "param":null,"code":"insufficient_quota"}})";
  EXPECT_TRUE(openai::is_insufficient_quota(quota));
  EXPECT_FALSE(openai::is_insufficient_quota(
      R"({"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}})"));
  EXPECT_EQ(openai::error_message(R"({"error":{"message":"bad","type":"invalid_request_error"}})"),
            "bad (invalid_request_error)");
  EXPECT_EQ(openai::error_message("<html>oops</html>"), "<html>oops</html>");
}

TEST(AnthropicWire, EncodesToolUseAndAnswersEveryCallInTheNextMessage) {
  json body = anthropic::encode_request(conversation());
  EXPECT_EQ(body["system"], "sys");
  EXPECT_EQ(body["max_tokens"], 256);
  ASSERT_EQ(body["messages"].size(), 3u);
  const json& assistant = body["messages"][1];
  EXPECT_EQ(assistant["role"], "assistant");
  ASSERT_EQ(assistant["content"].size(), 2u) << "no empty text block";
  EXPECT_EQ(assistant["content"][0]["type"], "tool_use");
  EXPECT_EQ(assistant["content"][0]["input"], json({{"command", "ls"}}));
  EXPECT_EQ(assistant["content"][1]["input"], json::object()) << "malformed input becomes {}";
  const json& results = body["messages"][2];
  EXPECT_EQ(results["role"], "user");
  ASSERT_EQ(results["content"].size(), 2u);
  EXPECT_EQ(results["content"][0]["type"], "tool_result");
  EXPECT_EQ(results["content"][0]["tool_use_id"], "c1");
  EXPECT_FALSE(results["content"][0].contains("is_error"));
  EXPECT_EQ(results["content"][1]["tool_use_id"], "c2");
  EXPECT_EQ(results["content"][1]["is_error"], true);
  EXPECT_EQ(body["tools"][0]["input_schema"]["type"], "object");
}

TEST(AnthropicWire, DecodesTextToolUseStopReasonAndUsage) {
  auto reply = anthropic::decode_response(R"({"id":"msg_1","type":"message","role":"assistant",
    "content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_1","name":"shell",
    "input":{"command":"ls"}}],"stop_reason":"tool_use",
    "usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":3}})");
  EXPECT_EQ(reply.text, "Let me look.");
  EXPECT_EQ(reply.finish, ModelReply::Finish::kToolUse);
  ASSERT_EQ(reply.tool_calls.size(), 1u);
  EXPECT_EQ(reply.tool_calls[0].id, "toolu_1");
  EXPECT_EQ(reply.tool_calls[0].arguments, R"({"command":"ls"})");
  EXPECT_EQ(reply.usage.input_tokens, 15);
  EXPECT_EQ(reply.usage.output_tokens, 3);
  auto done = anthropic::decode_response(
      R"({"content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}})");
  EXPECT_EQ(done.finish, ModelReply::Finish::kEndTurn);
  EXPECT_THROW(anthropic::decode_response(R"({"type":"message"})"), ProviderError);
  EXPECT_EQ(anthropic::error_message(
                R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"),
            "Overloaded (overloaded_error)");
}

}  // namespace
}  // namespace hb::runner
