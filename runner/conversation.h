// The provider-neutral conversation the loop keeps; wire encoders turn it
// into OpenAI Chat Completions or Anthropic Messages requests.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/expected.h"
#include "runner/clock.h"
#include "runner/errors.h"

namespace hb::runner {

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text exactly as the model sent it; may be malformed
};

struct ToolResult {
  std::string call_id;
  std::string name;
  std::string content;
  bool is_error = false;
};

struct Message {
  enum class Role { kUser, kAssistant, kToolResults };
  Role role = Role::kUser;
  std::string text;                  // user text, or assistant text (may be empty)
  std::vector<ToolCall> tool_calls;  // assistant only
  std::vector<ToolResult>
      tool_results;  // kToolResults only: answers the previous assistant message
};

struct ToolSpec {
  std::string name;
  std::string description;
  nlohmann::json parameters;  // JSON Schema of the arguments object
};

struct ModelRequest {
  std::string model;
  std::string system;
  std::vector<Message> messages;
  std::vector<ToolSpec> tools;
  int max_tokens = 0;
  TimePoint deadline;  // no attempt (or retry wait) may run past it
};

struct Usage {
  long long input_tokens = 0;
  long long output_tokens = 0;
  Usage& operator+=(const Usage& other) {
    input_tokens += other.input_tokens;
    output_tokens += other.output_tokens;
    return *this;
  }
};

struct ModelReply {
  enum class Finish { kEndTurn, kToolUse, kMaxTokens, kOther };
  std::string text;
  std::vector<ToolCall> tool_calls;
  Finish finish = Finish::kEndTurn;
  std::string finish_raw;  // finish_reason / stop_reason as the provider wrote it
  std::string model;       // the model that answered, as the provider named it (may be empty)
  Usage usage;
  // Which counts the provider reported; a missing one (no usage object, an
  // empty one, a proxy's other field names) is estimated by the loop.
  bool input_reported = true;
  bool output_reported = true;
  // The parts of usage.input_tokens the provider reported as prompt-cache
  // reads and cache writes (billed apart by providers that cache).
  long long cache_read_tokens = 0;
  long long cache_write_tokens = 0;
};

// A model's reply, or why there is none.
using ModelResult = Expected<ModelReply, ProviderError>;

// The loop's only view of a model provider.
class ModelClient {
 public:
  virtual ~ModelClient() = default;
  virtual ModelResult complete(const ModelRequest& request) = 0;
};

}  // namespace hb::runner
