#include "runner/anthropic_wire.h"

#include "api/utf8.h"
#include "runner/errors.h"
#include "runner/limits.h"
#include "runner/wire_util.h"

namespace hb::runner::anthropic {
namespace {

using nlohmann::json;

constexpr std::size_t kErrorBodyBytesMax = 300;

ProviderError bad(const std::string& what) {
  return ProviderError(ProviderError::Kind::kBadResponse, 200, "Anthropic response: " + what);
}

ModelReply::Finish map_finish(const std::string& reason, bool has_calls) {
  if (reason == "tool_use") return ModelReply::Finish::kToolUse;
  if (reason == "max_tokens") return ModelReply::Finish::kMaxTokens;
  if (has_calls) return ModelReply::Finish::kToolUse;
  if (reason == "end_turn" || reason == "stop_sequence" || reason.empty()) {
    return ModelReply::Finish::kEndTurn;
  }
  return ModelReply::Finish::kOther;  // refusal, pause_turn, …
}

json tool_input(const std::string& arguments) {
  json input = parse_json_or_discarded(arguments);
  return input.is_object() ? input : json::object();
}

}  // namespace

json encode_request(const ModelRequest& request) {
  json messages = json::array();
  for (const auto& message : request.messages) {
    switch (message.role) {
      case Message::Role::kUser:
        messages.push_back(
            {{"role", "user"},
             {"content", json::array({{{"type", "text"}, {"text", message.text}}})}});
        break;
      case Message::Role::kAssistant: {
        json content = json::array();
        // The API rejects empty text blocks.
        if (!message.text.empty()) content.push_back({{"type", "text"}, {"text", message.text}});
        for (const auto& call : message.tool_calls) {
          content.push_back({{"type", "tool_use"},
                             {"id", call.id},
                             {"name", call.name},
                             {"input", tool_input(call.arguments)}});
        }
        if (content.empty()) content.push_back({{"type", "text"}, {"text", "(no text)"}});
        messages.push_back({{"role", "assistant"}, {"content", std::move(content)}});
        break;
      }
      case Message::Role::kToolResults: {
        // Every tool_use of the previous assistant message is answered here,
        // tool_result blocks first, in one user message.
        json content = json::array();
        for (const auto& result : message.tool_results) {
          json block = {{"type", "tool_result"},
                        {"tool_use_id", result.call_id},
                        {"content", result.content}};
          if (result.is_error) block["is_error"] = true;
          content.push_back(std::move(block));
        }
        if (!message.text.empty()) content.push_back({{"type", "text"}, {"text", message.text}});
        messages.push_back({{"role", "user"}, {"content", std::move(content)}});
        break;
      }
    }
  }
  json body = {{"model", request.model},
               {"max_tokens", request.max_tokens},
               {"messages", std::move(messages)}};
  if (!request.system.empty()) body["system"] = request.system;
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const auto& tool : request.tools) {
      tools.push_back({{"name", tool.name},
                       {"description", tool.description},
                       {"input_schema", tool.parameters}});
    }
    body["tools"] = std::move(tools);
  }
  return body;
}

ModelResult decode_response(const std::string& body) {
  json doc = parse_json_or_discarded(body);
  if (doc.is_discarded() || !doc.is_object()) return bad("body is not a JSON object");
  auto content = doc.find("content");
  if (content == doc.end() || !content->is_array()) return bad("content is missing");
  ModelReply reply;
  int index = 0;
  for (const auto& block : *content) {
    ++index;
    if (!block.is_object()) continue;
    std::string type = json_string(block, "type");
    if (type == "text" && block.contains("text") && block["text"].is_string()) {
      if (!reply.text.empty()) reply.text += "\n";
      reply.text += block["text"].get<std::string>();
    } else if (type == "tool_use") {
      ToolCall call;
      call.id = json_string(block, "id");
      if (call.id.empty()) call.id = "toolu_" + std::to_string(index);
      call.name = json_string(block, "name");
      call.arguments = block.contains("input") ? dump_json(block["input"]) : "{}";
      reply.tool_calls.push_back(std::move(call));
    }
  }
  reply.finish_raw = doc.contains("stop_reason") && doc["stop_reason"].is_string()
                         ? doc["stop_reason"].get<std::string>()
                         : std::string();
  reply.finish = map_finish(reply.finish_raw, !reply.tool_calls.empty());
  reply.model = api::truncate_utf8(json_string(doc, "model"), kResponseModelBytesMax);
  const json usage = doc.value("usage", json());
  reply.input_reported = json_has_number(usage, "input_tokens");
  reply.output_reported = json_has_number(usage, "output_tokens");
  // Cache writes and reads are input too (billed at the input price here).
  reply.usage.input_tokens = json_token_count(usage, "input_tokens") +
                             json_token_count(usage, "cache_creation_input_tokens") +
                             json_token_count(usage, "cache_read_input_tokens");
  reply.usage.output_tokens = json_token_count(usage, "output_tokens");
  reply.cache_read_tokens = json_token_count(usage, "cache_read_input_tokens");
  reply.cache_write_tokens = json_token_count(usage, "cache_creation_input_tokens");
  return reply;
}

std::string error_message(const std::string& body) {
  json doc = parse_json_or_discarded(body);
  if (!doc.is_discarded() && doc.is_object() && doc.contains("error") && doc["error"].is_object()) {
    const json& error = doc["error"];
    std::string message = json_string(error, "message");
    std::string type = json_string(error, "type");
    return api::truncate_utf8(type.empty() ? message : message + " (" + type + ")",
                              kErrorBodyBytesMax);
  }
  return api::truncate_utf8(api::sanitize_utf8(body), kErrorBodyBytesMax);
}

}  // namespace hb::runner::anthropic
