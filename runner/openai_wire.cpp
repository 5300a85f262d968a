#include "runner/openai_wire.h"

#include "runner/errors.h"
#include "runner/text.h"
#include "runner/wire_util.h"

namespace hb::runner::openai {
namespace {

using nlohmann::json;

constexpr std::size_t kErrorBodyBytesMax = 300;

[[noreturn]] void bad(const std::string& what) {
  throw ProviderError(ProviderError::Kind::kBadResponse, 200,
                      "OpenAI-compatible response: " + what);
}

ModelReply::Finish map_finish(const std::string& reason, bool has_calls) {
  if (reason == "tool_calls" || reason == "function_call") return ModelReply::Finish::kToolUse;
  if (reason == "length") return ModelReply::Finish::kMaxTokens;
  if (reason == "stop" || reason.empty()) {
    return has_calls ? ModelReply::Finish::kToolUse : ModelReply::Finish::kEndTurn;
  }
  return has_calls ? ModelReply::Finish::kToolUse : ModelReply::Finish::kOther;
}

}  // namespace

json encode_request(const ModelRequest& request) {
  json messages = json::array();
  if (!request.system.empty())
    messages.push_back({{"role", "system"}, {"content", request.system}});
  for (const auto& message : request.messages) {
    switch (message.role) {
      case Message::Role::kUser:
        messages.push_back({{"role", "user"}, {"content", message.text}});
        break;
      case Message::Role::kAssistant: {
        json out = {{"role", "assistant"}};
        out["content"] = message.text.empty() ? json(nullptr) : json(message.text);
        if (!message.tool_calls.empty()) {
          json calls = json::array();
          for (const auto& call : message.tool_calls) {
            // arguments go back exactly as the model wrote them, malformed or not.
            calls.push_back({{"id", call.id},
                             {"type", "function"},
                             {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
          }
          out["tool_calls"] = std::move(calls);
        }
        messages.push_back(std::move(out));
        break;
      }
      case Message::Role::kToolResults:
        for (const auto& result : message.tool_results) {
          messages.push_back(
              {{"role", "tool"},
               {"tool_call_id", result.call_id},
               {"content", result.is_error ? "Error: " + result.content : result.content}});
        }
        break;
    }
  }
  json body = {{"model", request.model},
               {"messages", std::move(messages)},
               {"max_tokens", request.max_tokens}};
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const auto& tool : request.tools) {
      tools.push_back({{"type", "function"},
                       {"function",
                        {{"name", tool.name},
                         {"description", tool.description},
                         {"parameters", tool.parameters}}}});
    }
    body["tools"] = std::move(tools);
  }
  return body;
}

ModelReply decode_response(const std::string& body) {
  json doc = parse_json_or_discarded(body);
  if (doc.is_discarded() || !doc.is_object()) bad("body is not a JSON object");
  auto choices = doc.find("choices");
  if (choices == doc.end() || !choices->is_array() || choices->empty()) bad("no choices");
  const json& choice = (*choices)[0];
  if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object()) {
    bad("choices[0].message is missing");
  }
  const json& message = choice["message"];
  ModelReply reply;
  if (message.contains("content") && message["content"].is_string()) {
    reply.text = message["content"].get<std::string>();
  }
  if (message.contains("tool_calls") && message["tool_calls"].is_array()) {
    int index = 0;
    for (const auto& call : message["tool_calls"]) {
      ++index;
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
        continue;
      const json& function = call["function"];
      ToolCall parsed;
      parsed.id = json_string(call, "id");
      if (parsed.id.empty()) parsed.id = "call_" + std::to_string(index);
      parsed.name = json_string(function, "name");
      auto arguments = function.find("arguments");
      if (arguments == function.end() || arguments->is_null()) {
        parsed.arguments = "{}";
      } else if (arguments->is_string()) {
        parsed.arguments = arguments->get<std::string>();
      } else {
        parsed.arguments = dump_json(*arguments);  // some servers send an object
      }
      reply.tool_calls.push_back(std::move(parsed));
    }
  }
  reply.finish_raw = choice.contains("finish_reason") && choice["finish_reason"].is_string()
                         ? choice["finish_reason"].get<std::string>()
                         : std::string();
  reply.finish = map_finish(reply.finish_raw, !reply.tool_calls.empty());
  auto usage = doc.find("usage");
  if (usage != doc.end() && usage->is_object()) {
    reply.usage.input_tokens = json_int(*usage, "prompt_tokens");
    reply.usage.output_tokens = json_int(*usage, "completion_tokens");
  } else {
    reply.usage_reported = false;
  }
  return reply;
}

std::string error_message(const std::string& body) {
  json doc = parse_json_or_discarded(body);
  if (!doc.is_discarded() && doc.is_object() && doc.contains("error")) {
    const json& error = doc["error"];
    if (error.is_object()) {
      std::string message = json_string(error, "message");
      std::string detail;
      if (error.contains("type") && error["type"].is_string())
        detail = error["type"].get<std::string>();
      if (error.contains("code") && error["code"].is_string()) {
        detail += (detail.empty() ? "" : ", ") + error["code"].get<std::string>();
      }
      return truncate_utf8(detail.empty() ? message : message + " (" + detail + ")",
                           kErrorBodyBytesMax);
    }
    if (error.is_string()) return truncate_utf8(error.get<std::string>(), kErrorBodyBytesMax);
  }
  return truncate_utf8(sanitize_utf8(body), kErrorBodyBytesMax);
}

bool is_insufficient_quota(const std::string& body) {
  json doc = parse_json_or_discarded(body);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("error") ||
      !doc["error"].is_object()) {
    return false;
  }
  const json& error = doc["error"];
  auto is = [&](const char* key) {
    return error.contains(key) && error[key].is_string() && error[key] == "insufficient_quota";
  };
  return is("code") || is("type");
}

}  // namespace hb::runner::openai
