// What the stand-in model answers, decided from the request alone (no state
// between requests), so e2e tests steer it through the agent's prompts:
//
//   [[pause N]]     call pause_heartbeats {"minutes": N}       (if offered)
//   [[sleep N]]     call shell {"command": "sleep N"}          (if offered)
//   [[shell CMD]]   call shell {"command": CMD}                (if offered; repeatable,
//                   e.g. the attacks the e2e suite tries from inside the Pod)
//   [[memory TEXT]] call core_memory_append {"label": "human", "content": TEXT}
//   [[fail STATUS]] answer every request with HTTP STATUS and an error body
//   [[quota SECS]]  answer every request with 429 and retry-after: SECS (a
//                   rate limit that resets later than a run may wait)
//   [[hang]]        never answer (until the client disconnects or the server stops)
//   [[expensive]]   report the request's whole output limit (max_tokens) as
//                   completion tokens, so a reply costs its worst case
//   [[idle]]        call no tool (not even the default shell) and answer just
//                   kIdleAnswer, as a model with nothing to do is told to
//   [[say TEXT]]    end with TEXT as the final answer (e.g. "@other look"),
//                   after any tool directives (no default shell call)
//
// Tool directives run in the order they appear, one per model turn, pause
// last (it ends the heartbeat). Without any tool directive the first turn
// calls shell with `date -u`. Once every step has a tool result, the answer
// is a final text. Directives are read from the system prompt and the user
// messages (the heartbeat prompt, persona); tool results are ignored.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/fake_model/model_request.h"

namespace hb::fake_model {

inline constexpr const char* kModelName = "hb-fake-model";
inline constexpr const char* kDefaultShellCommand = "date -u";
inline constexpr const char* kMemoryBlockLabel = "human";
// A sleep's shell timeout: the sleep plus this slack, capped at the runner's 600 s.
inline constexpr int kSleepTimeoutSlackSeconds = 30;
inline constexpr int kShellTimeoutSecondsMax = 600;
inline constexpr std::size_t kToolResultEchoBytesMax = 200;
inline constexpr std::size_t kShellDirectivesMax = 8;
// The [[idle]] answer: the operator's default idle token.
inline constexpr const char* kIdleAnswer = "HEARTBEAT_OK";

struct Directives {
  std::optional<int> pause_minutes;
  std::optional<int> sleep_seconds;
  std::optional<std::string> memory_text;
  std::vector<std::string> shell_commands;  // [[shell CMD]], in order
  std::optional<int> fail_status;           // 400..599
  std::optional<int> quota_seconds;         // [[quota SECS]]: 1..86400
  bool hang = false;
  bool expensive = false;
  bool idle = false;  // [[idle]]: only the other tool directives' calls, then kIdleAnswer
  std::optional<std::string> say;  // [[say TEXT]]: the final answer
  // Tool directives in order of appearance: "memory", "sleep", "pause",
  // "shell:N" (the Nth of shell_commands).
  std::vector<std::string> order;
  std::vector<std::string> problems;  // directives that could not be read
};

Directives parse_directives(std::string_view text);

struct ToolStep {
  std::string tool;
  nlohmann::json arguments;
};

struct Decision {
  enum class Kind { kToolCall, kText, kFail, kHang };
  Kind kind = Kind::kText;
  ToolStep call;                           // kToolCall
  std::string text;                        // kText; the error message for kFail
  int status = 200;                        // kFail
  std::optional<int> retry_after_seconds;  // kFail: the retry-after header
  std::string summary;                     // one line for the log
};

// The tool calls a heartbeat with these directives makes, in order.
std::vector<ToolStep> plan_steps(const Directives& directives,
                                 const std::vector<std::string>& offered_tools,
                                 std::vector<std::string>* skipped = nullptr);

// `now` is an RFC 3339 time for the final text.
Decision decide(const ModelRequest& request, const std::string& now);

}  // namespace hb::fake_model
