// The runner's result (docs/runner.md): one JSON object of at most 4 KiB in
// the container's termination message. Parsing is strict about types and
// bounds: a message that is not a JSON object with a usage object is
// "unreadable" (the run still finishes, charged what its beats reported); a
// usage object with a malformed count is read, with usage_problem set (the
// run is charged its bound). Pure.
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
  // The runner's own cost figure: a cross-check only, never money
  // (controllers/run_cost.h). Unset when absent; NaN when not a
  // non-negative finite number.
  std::optional<double> cost_cents;
  // The usage object was there but a count in it was not a non-negative
  // 64-bit integer: the run is charged its bound (run_cost.h).
  std::string usage_problem;
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
