#include "runner/openai_wire.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "api/utf8.h"
#include "runner/errors.h"
#include "runner/limits.h"
#include "runner/wire_util.h"

namespace hb::runner::openai {
namespace {

using nlohmann::json;

constexpr std::size_t kErrorBodyBytesMax = 300;

ProviderError bad(const std::string& what) {
  return ProviderError(ProviderError::Kind::kBadResponse, 200,
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

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

std::string_view to_string(TokenLimitField field) {
  return field == TokenLimitField::kMaxCompletionTokens ? "max_completion_tokens" : "max_tokens";
}

TokenLimitField other_field(TokenLimitField field) {
  return field == TokenLimitField::kMaxTokens ? TokenLimitField::kMaxCompletionTokens
                                              : TokenLimitField::kMaxTokens;
}

bool is_official_openai(const std::string& base_url) {
  std::string url = lower(base_url);
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return false;
  std::string host = url.substr(scheme + 3);
  host = host.substr(0, host.find_first_of("/:?#"));
  std::string_view azure = ".openai.azure.com";
  return host == "api.openai.com" ||
         (host.size() > azure.size() &&
          host.compare(host.size() - azure.size(), azure.size(), azure) == 0);
}

bool is_reasoning_model(const std::string& model) {
  std::string name = lower(model);
  if (auto slash = name.rfind('/'); slash != std::string::npos) name.erase(0, slash + 1);
  auto is_digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  // o1, o3, o4-mini, o1-2024-12-17, ...
  if (name.size() >= 2 && name[0] == 'o' && is_digit(name[1])) {
    std::size_t end = 1;
    while (end < name.size() && is_digit(name[end])) ++end;
    return end == name.size() || name[end] == '-';
  }
  // gpt-5, gpt-5-mini, gpt-5.1, and later generations.
  if (name.rfind("gpt-", 0) == 0) {
    std::size_t end = 4;
    int generation = 0;
    while (end < name.size() && is_digit(name[end]) && generation < 1000) {
      generation = generation * 10 + (name[end] - '0');
      ++end;
    }
    if (end == 4) return false;
    return generation >= 5 && (end == name.size() || name[end] == '-' || name[end] == '.');
  }
  return false;
}

TokenLimitField token_limit_field_for(const std::string& base_url, const std::string& model) {
  return is_official_openai(base_url) && is_reasoning_model(model)
             ? TokenLimitField::kMaxCompletionTokens
             : TokenLimitField::kMaxTokens;
}

bool rejects_token_limit_field(int status, const std::string& body, TokenLimitField sent) {
  if (status != 400 && status != 422) return false;
  // The raw body covers message, param, code and validation "loc" arrays alike.
  std::string text = lower(body);
  std::string_view sent_name = to_string(sent);
  std::string_view other_name = to_string(other_field(sent));
  // Neither name is a substring of the other.
  if (contains(text, other_name) && contains(text, "instead")) return true;  // "Use X instead"
  if (!contains(text, sent_name)) return false;
  constexpr std::array<std::string_view, 8> kRejections = {
      "unsupported",   "not supported", "unrecognized",    "unknown",
      "not permitted", "not allowed",   "extra_forbidden", "extra fields"};
  return std::any_of(kRejections.begin(), kRejections.end(),
                     [&](std::string_view word) { return contains(text, word); });
}

json encode_request(const ModelRequest& request, TokenLimitField field) {
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
  json body = {{"model", request.model}, {"messages", std::move(messages)}};
  body[std::string(to_string(field))] = request.max_tokens;
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

ModelResult decode_response(const std::string& body) {
  json doc = parse_json_or_discarded(body);
  if (doc.is_discarded() || !doc.is_object()) return bad("body is not a JSON object");
  auto choices = doc.find("choices");
  if (choices == doc.end() || !choices->is_array() || choices->empty()) return bad("no choices");
  const json& choice = (*choices)[0];
  if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object()) {
    return bad("choices[0].message is missing");
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
  reply.model = api::truncate_utf8(json_string(doc, "model"), kResponseModelBytesMax);
  const json usage = doc.value("usage", json());
  reply.input_reported = json_has_number(usage, "prompt_tokens");
  reply.output_reported = json_has_number(usage, "completion_tokens");
  reply.usage.input_tokens = json_token_count(usage, "prompt_tokens");
  reply.usage.output_tokens = json_token_count(usage, "completion_tokens");
  // Cached prompt tokens are a part of prompt_tokens, never more.
  reply.cache_read_tokens = std::min(
      json_token_count(usage.is_object() ? usage.value("prompt_tokens_details", json()) : json(),
                       "cached_tokens"),
      reply.usage.input_tokens);
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
      return api::truncate_utf8(detail.empty() ? message : message + " (" + detail + ")",
                                kErrorBodyBytesMax);
    }
    if (error.is_string()) return api::truncate_utf8(error.get<std::string>(), kErrorBodyBytesMax);
  }
  return api::truncate_utf8(api::sanitize_utf8(body), kErrorBodyBytesMax);
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
