// The runner's result (docs/runner.md): one JSON object of at most 4 KiB in
// the container's termination message. Parsing is strict about types and
// bounds; anything else is "unreadable" and the run still finishes. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hb::controllers {

inline constexpr std::size_t kTerminationMessageBytesMax = 4096;
inline constexpr int kPauseMinutesMin = 1;
inline constexpr int kPauseMinutesMax = 60;

struct RunResult {
  std::string stop_reason;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost_cents = 0;
  int64_t llm_calls = 0;
  int64_t tool_calls = 0;
  int64_t iterations = 0;
  std::optional<int> pause_minutes;  // clamped to kPauseMinutesMin..kPauseMinutesMax
  std::string output;
  std::string error;
  std::string last_beat_time;  // RFC 3339 as the runner wrote it, or empty
};

struct ParsedResult {
  std::optional<RunResult> result;
  std::string problem;  // why it is unreadable; empty when result is set
};

ParsedResult parse_run_result(std::string_view termination_message);

}  // namespace hb::controllers
