#include "tools/fake_model/model_request.h"

#include <stdexcept>

namespace hb::fake_model {
namespace {

using nlohmann::json;

// max_tokens, or max_completion_tokens (OpenAI reasoning models).
int output_limit(const json& body) {
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    auto it = body.find(key);
    if (it != body.end() && it->is_number_integer()) return it->get<int>();
  }
  return 0;
}

const json& messages_of(const json& body) {
  if (!body.is_object()) throw std::invalid_argument("the body is not a JSON object");
  auto it = body.find("messages");
  if (it == body.end() || !it->is_array()) throw std::invalid_argument("no messages array");
  return *it;
}

void append(std::string& out, const std::string& text) {
  if (text.empty()) return;
  if (!out.empty()) out += "\n";
  out += text;
}

// Anthropic content: a string or an array of blocks.
std::string block_text(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (!content.is_array()) return out;
  for (const json& block : content) {
    if (block.is_object() && block.value("type", "") == "text")
      append(out, block.value("text", ""));
  }
  return out;
}

// What both wire formats carry alike.
ModelRequest request_header(const json& body, Wire wire, std::size_t body_bytes) {
  ModelRequest out;
  out.wire = wire;
  out.request_bytes = body_bytes;
  out.model = body.value("model", "");
  out.max_tokens = output_limit(body);
  return out;
}

}  // namespace

ModelRequest parse_openai_request(const json& body, std::size_t body_bytes) {
  const json& messages = messages_of(body);
  ModelRequest out = request_header(body, Wire::kOpenAI, body_bytes);
  for (const json& message : messages) {
    if (!message.is_object()) continue;
    const std::string role = message.value("role", "");
    const json content = message.value("content", json());
    if (role == "system" || role == "user") {
      // content is a string or an array of {type: text, text} parts.
      append(out.prompt_text, block_text(content));
    } else if (role == "assistant") {
      auto calls = message.find("tool_calls");
      if (calls != message.end() && calls->is_array() && !calls->empty()) ++out.tool_turns;
    } else if (role == "tool") {
      out.last_tool_result = content.is_string() ? content.get<std::string>() : content.dump();
    }
  }
  if (auto tools = body.find("tools"); tools != body.end() && tools->is_array()) {
    for (const json& tool : *tools) {
      if (tool.is_object() && tool.contains("function") && tool["function"].is_object()) {
        out.tools.push_back(tool["function"].value("name", ""));
      }
    }
  }
  return out;
}

ModelRequest parse_anthropic_request(const json& body, std::size_t body_bytes) {
  const json& messages = messages_of(body);
  ModelRequest out = request_header(body, Wire::kAnthropic, body_bytes);
  if (auto system = body.find("system"); system != body.end()) {
    append(out.prompt_text, block_text(*system));
  }
  for (const json& message : messages) {
    if (!message.is_object()) continue;
    const std::string role = message.value("role", "");
    const json content = message.value("content", json());
    if (role == "user") {
      append(out.prompt_text, block_text(content));
      if (!content.is_array()) continue;
      for (const json& block : content) {
        if (block.is_object() && block.value("type", "") == "tool_result") {
          const json result = block.value("content", json(""));
          out.last_tool_result =
              result.is_string() ? result.get<std::string>() : block_text(result);
        }
      }
    } else if (role == "assistant" && content.is_array()) {
      for (const json& block : content) {
        if (block.is_object() && block.value("type", "") == "tool_use") {
          ++out.tool_turns;
          break;
        }
      }
    }
  }
  if (auto tools = body.find("tools"); tools != body.end() && tools->is_array()) {
    for (const json& tool : *tools) {
      if (tool.is_object()) out.tools.push_back(tool.value("name", ""));
    }
  }
  return out;
}

}  // namespace hb::fake_model
