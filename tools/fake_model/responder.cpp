#include "tools/fake_model/responder.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tools/fake_model/decision.h"
#include "tools/fake_model/model_request.h"

namespace hb::fake_model {
namespace {

using nlohmann::json;

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string openai_error_type(int status) {
  if (status == 401) return "invalid_api_key";
  if (status == 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

std::string anthropic_error_type(int status) {
  if (status == 401) return "authentication_error";
  if (status == 429) return "rate_limit_error";
  if (status == 529) return "overloaded_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

std::string error_body(Wire wire, int status, const std::string& message) {
  if (wire == Wire::kAnthropic) {
    return json{{"type", "error"},
                {"error", {{"type", anthropic_error_type(status)}, {"message", message}}}}
        .dump();
  }
  return json{
      {"error", {{"message", message}, {"type", openai_error_type(status)}, {"code", nullptr}}}}
      .dump();
}

std::string encode_openai(const Decision& d, int prompt_tokens, int completion_tokens, int64_t now,
                          int turn) {
  json message = {{"role", "assistant"}};
  std::string finish = "stop";
  if (d.kind == Decision::Kind::kToolCall) {
    message["content"] = nullptr;
    message["tool_calls"] = json::array(
        {{{"id", "call_hb_fake_" + std::to_string(turn + 1)},
          {"type", "function"},
          {"function", {{"name", d.call.tool}, {"arguments", d.call.arguments.dump()}}}}});
    finish = "tool_calls";
  } else {
    message["content"] = d.text;
  }
  return json{
      {"id", "chatcmpl-hb-fake-" + std::to_string(now) + "-" + std::to_string(turn)},
      {"object", "chat.completion"},
      {"created", now},
      {"model", kModelName},
      {"choices", json::array({{{"index", 0}, {"message", message}, {"finish_reason", finish}}})},
      {"usage",
       {{"prompt_tokens", prompt_tokens},
        {"completion_tokens", completion_tokens},
        {"total_tokens", prompt_tokens + completion_tokens}}}}
      .dump();
}

std::string encode_anthropic(const Decision& d, int prompt_tokens, int completion_tokens,
                             int64_t now, int turn) {
  json content = json::array();
  std::string stop = "end_turn";
  if (d.kind == Decision::Kind::kToolCall) {
    content.push_back({{"type", "tool_use"},
                       {"id", "toolu_hb_fake_" + std::to_string(turn + 1)},
                       {"name", d.call.tool},
                       {"input", d.call.arguments}});
    stop = "tool_use";
  } else {
    content.push_back({{"type", "text"}, {"text", d.text}});
  }
  return json{{"id", "msg_hb_fake_" + std::to_string(now) + "_" + std::to_string(turn)},
              {"type", "message"},
              {"role", "assistant"},
              {"model", kModelName},
              {"content", content},
              {"stop_reason", stop},
              {"stop_sequence", nullptr},
              {"usage", {{"input_tokens", prompt_tokens}, {"output_tokens", completion_tokens}}}}
      .dump();
}

HttpReply model_call(Wire wire, const std::string& body, const std::string& now_text, int64_t now) {
  HttpReply out;
  ModelRequest request;
  try {
    const json parsed = json::parse(body);
    request = wire == Wire::kOpenAI ? parse_openai_request(parsed, body.size())
                                    : parse_anthropic_request(parsed, body.size());
  } catch (const std::exception& error) {
    out.status = 400;
    out.body = error_body(wire, 400, std::string("hb-fake-model: bad request: ") + error.what());
    out.summary = std::string("400 bad request: ") + error.what();
    return out;
  }
  const Decision d = decide(request, now_text);
  out.summary = d.summary;
  switch (d.kind) {
    case Decision::Kind::kFail:
      out.status = d.status;
      out.body = error_body(wire, d.status, d.text);
      out.retry_after_seconds = d.retry_after_seconds;
      return out;
    case Decision::Kind::kHang:
      out.hang = true;
      return out;
    case Decision::Kind::kToolCall:
    case Decision::Kind::kText:
      break;
  }
  const std::size_t reply_bytes = d.kind == Decision::Kind::kToolCall
                                      ? d.call.tool.size() + d.call.arguments.dump().size()
                                      : d.text.size();
  const int prompt_tokens = prompt_tokens_for(request.request_bytes);
  int completion_tokens = completion_tokens_for(reply_bytes);
  if (parse_directives(request.prompt_text).expensive && request.max_tokens > 0) {
    completion_tokens = request.max_tokens;
  }
  out.body = wire == Wire::kOpenAI
                 ? encode_openai(d, prompt_tokens, completion_tokens, now, request.tool_turns)
                 : encode_anthropic(d, prompt_tokens, completion_tokens, now, request.tool_turns);
  out.summary += ", usage " + std::to_string(prompt_tokens) + "+" +
                 std::to_string(completion_tokens) + " tokens";
  return out;
}

}  // namespace

int prompt_tokens_for(std::size_t request_bytes) {
  return std::max(1, static_cast<int>(request_bytes / kBytesPerToken));
}

int completion_tokens_for(std::size_t reply_bytes) {
  return kCompletionTokensBase + static_cast<int>(reply_bytes / kBytesPerToken);
}

HttpReply respond(const std::string& method, const std::string& raw_path, const std::string& body,
                  const std::string& now_text, int64_t now) {
  const std::string path = raw_path.substr(0, raw_path.find('?'));
  if (method == "POST" && ends_with(path, "/chat/completions")) {
    return model_call(Wire::kOpenAI, body, now_text, now);
  }
  if (method == "POST" && ends_with(path, "/messages")) {
    return model_call(Wire::kAnthropic, body, now_text, now);
  }
  if (method == "GET" && (path == "/healthz" || path == "/")) {
    return {200, R"({"status":"ok","model":"hb-fake-model"})", false, "health", std::nullopt};
  }
  if (method == "GET" && ends_with(path, "/models")) {
    return {200,
            json{{"object", "list"},
                 {"data", json::array({{{"id", kModelName},
                                        {"object", "model"},
                                        {"owned_by", "hb-fake-model (stand-in)"}}})}}
                .dump(),
            false, "models", std::nullopt};
  }
  return {404, error_body(Wire::kOpenAI, 404, "hb-fake-model: no route " + method + " " + path),
          false, "404", std::nullopt};
}

}  // namespace hb::fake_model
