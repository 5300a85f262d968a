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
    "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":50,"completion_tokens":7,"total_tokens":57}})")
          .value();
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
                   R"({"choices":[{"message":{"content":"hello"},"finish_reason":"length"}]})")
                   .value();
  EXPECT_EQ(reply.text, "hello");
  EXPECT_EQ(reply.finish, ModelReply::Finish::kMaxTokens);
  EXPECT_FALSE(reply.input_reported);
  EXPECT_FALSE(reply.output_reported);
  EXPECT_FALSE(openai::decode_response("not json").ok());
  EXPECT_FALSE(openai::decode_response(R"({"choices":[]})").ok());
}

// An empty usage object, or a proxy naming the counts differently, reports
// nothing: each missing count is left for the loop to estimate.
TEST(OpenAIWire, EmptyOrRenamedUsageIsNotReported) {
  auto empty =
      openai::decode_response(
          R"({"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{}})")
          .value();
  EXPECT_FALSE(empty.input_reported);
  EXPECT_FALSE(empty.output_reported);
  auto renamed =
      openai::decode_response(
          R"({"choices":[{"message":{"content":"hi"}}],"usage":{"input_tokens":9,"completion_tokens":3}})")
          .value();
  EXPECT_FALSE(renamed.input_reported);
  EXPECT_TRUE(renamed.output_reported);
  EXPECT_EQ(renamed.usage.output_tokens, 3);
}

TEST(OpenAIWire, CachedPromptTokensAreAPartOfTheInput) {
  auto reply =
      openai::decode_response(
          R"({"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":100,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":60}}})")
          .value();
  EXPECT_EQ(reply.usage.input_tokens, 100);
  EXPECT_EQ(reply.cache_read_tokens, 60);
  auto hostile =
      openai::decode_response(
          R"({"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":60}}})")
          .value();
  EXPECT_EQ(hostile.cache_read_tokens, 10) << "never more than the prompt";
}

TEST(AnthropicWire, CacheWritesAndReadsAreReportedApart) {
  auto reply =
      anthropic::decode_response(
          R"({"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":50,"output_tokens":3}})")
          .value();
  EXPECT_EQ(reply.usage.input_tokens, 260);
  EXPECT_EQ(reply.cache_write_tokens, 200);
  EXPECT_EQ(reply.cache_read_tokens, 50);
}

TEST(AnthropicWire, EmptyUsageIsNotReported) {
  auto reply =
      anthropic::decode_response(
          R"({"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{}})")
          .value();
  EXPECT_FALSE(reply.input_reported);
  EXPECT_FALSE(reply.output_reported);
}

// Hostile replies: nesting that would overflow the parser's recursion, and
// numbers no integer holds, are provider errors or clamped, never a crash.
TEST(OpenAIWire, HostileRepliesNeverCrash) {
  EXPECT_FALSE(openai::decode_response(std::string(100000, '[')).ok());
  EXPECT_FALSE(openai::decode_response(R"({"choices":)" + std::string(50000, '[')).ok());
  EXPECT_FALSE(anthropic::decode_response(std::string(100000, '{')).ok());
  auto reply =
      openai::decode_response(R"({"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],)"
                              R"("usage":{"prompt_tokens":1e300,"completion_tokens":-1e300}})")
          .value();
  EXPECT_GE(reply.usage.input_tokens, 0);
  EXPECT_LE(reply.usage.input_tokens, 9'200'000'000'000'000'000LL);
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

TEST(OpenAIWire, TokenLimitFieldIsChosenByEndpointAndModel) {
  using openai::TokenLimitField;
  json body = openai::encode_request(conversation(), TokenLimitField::kMaxCompletionTokens);
  EXPECT_EQ(body["max_completion_tokens"], 256);
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_FALSE(openai::encode_request(conversation()).contains("max_completion_tokens"));

  for (const char* model : {"o1", "o1-mini", "o1-2024-12-17", "o3", "o3-mini", "o4-mini", "O3-Pro",
                            "gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5.1", "gpt-6", "openai/o3"}) {
    EXPECT_TRUE(openai::is_reasoning_model(model)) << model;
  }
  for (const char* model : {"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4-turbo", "gpt-3.5-turbo",
                            "omni-moderation-latest", "o", "olmo2", "llama3.1:8b", "gpt-", "gpt-5o",
                            "chatgpt-4o-latest", "qwen3:4b"}) {
    EXPECT_FALSE(openai::is_reasoning_model(model)) << model;
  }
  EXPECT_TRUE(openai::is_official_openai("https://api.openai.com/v1"));
  EXPECT_TRUE(openai::is_official_openai("https://API.OpenAI.com:443/v1/"));
  EXPECT_TRUE(openai::is_official_openai("https://my-res.openai.azure.com/openai/v1"));
  EXPECT_FALSE(openai::is_official_openai("http://ollama:11434/v1"));
  EXPECT_FALSE(openai::is_official_openai("https://api.openai.com.evil.example/v1"));
  EXPECT_FALSE(openai::is_official_openai("https://litellm.internal/v1?x=api.openai.com"));
  EXPECT_FALSE(openai::is_official_openai("api.openai.com"));

  EXPECT_EQ(openai::token_limit_field_for("https://api.openai.com/v1", "o3-mini"),
            TokenLimitField::kMaxCompletionTokens);
  EXPECT_EQ(openai::token_limit_field_for("https://api.openai.com/v1", "gpt-5"),
            TokenLimitField::kMaxCompletionTokens);
  EXPECT_EQ(openai::token_limit_field_for("https://api.openai.com/v1", "gpt-4o-mini"),
            TokenLimitField::kMaxTokens);
  // Other OpenAI-compatible servers keep max_tokens, whatever the model is called.
  EXPECT_EQ(openai::token_limit_field_for("http://vllm:8000/v1", "o3-mini"),
            TokenLimitField::kMaxTokens);
  EXPECT_EQ(openai::token_limit_field_for("http://ollama:11434/v1", "gpt-5"),
            TokenLimitField::kMaxTokens);
}

TEST(OpenAIWire, RecognisesARejectedTokenLimitField) {
  using openai::TokenLimitField;
  const std::string openai_reasoning =
      R"({"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}})";
  EXPECT_TRUE(
      openai::rejects_token_limit_field(400, openai_reasoning, TokenLimitField::kMaxTokens));
  EXPECT_FALSE(
      openai::rejects_token_limit_field(500, openai_reasoning, TokenLimitField::kMaxTokens));
  const std::string unrecognized =
      R"({"error":{"message":"Unrecognized request argument supplied: max_completion_tokens","type":"invalid_request_error"}})";
  EXPECT_TRUE(
      openai::rejects_token_limit_field(400, unrecognized, TokenLimitField::kMaxCompletionTokens));
  EXPECT_FALSE(openai::rejects_token_limit_field(400, unrecognized, TokenLimitField::kMaxTokens))
      << "the field we did not send";
  const std::string pydantic =
      R"({"detail":[{"type":"extra_forbidden","loc":["body","max_completion_tokens"],"msg":"Extra inputs are not permitted"}]})";
  EXPECT_TRUE(
      openai::rejects_token_limit_field(422, pydantic, TokenLimitField::kMaxCompletionTokens));
  // Other 400s about the limit are not about the field's name: no second attempt.
  EXPECT_FALSE(openai::rejects_token_limit_field(
      400,
      R"({"error":{"message":"max_tokens is too large: 500000. This model supports at most 16384 completion tokens, whereas you provided 500000.","type":"invalid_request_error","param":"max_tokens","code":null}})",
      TokenLimitField::kMaxTokens));
  EXPECT_FALSE(openai::rejects_token_limit_field(
      400,
      R"({"object":"error","message":"'max_tokens' or 'max_completion_tokens' is too large: 9000. This model's maximum context length is 8192 tokens","type":"BadRequestError"})",
      TokenLimitField::kMaxCompletionTokens));
  EXPECT_FALSE(openai::rejects_token_limit_field(
      400, R"({"error":{"message":"Invalid schema for function 'shell'"}})",
      TokenLimitField::kMaxTokens));
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
    "usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":3}})")
                   .value();
  EXPECT_EQ(reply.text, "Let me look.");
  EXPECT_EQ(reply.finish, ModelReply::Finish::kToolUse);
  ASSERT_EQ(reply.tool_calls.size(), 1u);
  EXPECT_EQ(reply.tool_calls[0].id, "toolu_1");
  EXPECT_EQ(reply.tool_calls[0].arguments, R"({"command":"ls"})");
  EXPECT_EQ(reply.usage.input_tokens, 15);
  EXPECT_EQ(reply.usage.output_tokens, 3);
  EXPECT_EQ(reply.cache_read_tokens, 5);
  EXPECT_EQ(reply.cache_write_tokens, 0);
  auto done =
      anthropic::decode_response(
          R"({"content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}})")
          .value();
  EXPECT_EQ(done.finish, ModelReply::Finish::kEndTurn);
  EXPECT_FALSE(anthropic::decode_response(R"({"type":"message"})").ok());
  EXPECT_EQ(anthropic::error_message(
                R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"),
            "Overloaded (overloaded_error)");
}

}  // namespace
}  // namespace hb::runner
