// The parts of a model request the stand-in model decides from, read from
// either wire format (OpenAI Chat Completions, Anthropic Messages).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hb::fake_model {

enum class Wire { kOpenAI, kAnthropic };

struct ModelRequest {
  Wire wire = Wire::kOpenAI;
  std::string model;
  // The system prompt and every user text (tool results excluded): where the
  // heartbeat prompt and its directives are.
  std::string prompt_text;
  std::vector<std::string> tools;  // offered tool names
  int tool_turns = 0;              // assistant turns that called tools so far
  std::string last_tool_result;    // content of the newest tool result
  std::size_t request_bytes = 0;   // body size, for the usage figures
  int max_tokens = 0;              // the output limit asked for (0: none)
};

// Throws std::invalid_argument naming what is wrong with the body.
ModelRequest parse_openai_request(const nlohmann::json& body, std::size_t body_bytes);
ModelRequest parse_anthropic_request(const nlohmann::json& body, std::size_t body_bytes);

}  // namespace hb::fake_model
