// The termination-message result: one JSON object of at most kResultBytesMax
// bytes. Shaping shortens the output excerpt first, then drops notes, then
// shortens the error; the JSON itself is never cut.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "runner/clock.h"
#include "runner/conversation.h"
#include "runner/limits.h"
#include "runner/stop_rules.h"

namespace hb::runner {

inline constexpr int kResultSchemaVersion = 1;

struct RunResult {
  StopReason stop_reason = StopReason::kCompleted;
  Usage usage;
  double cost_cents = 0;
  int llm_calls = 0;
  int tool_calls = 0;
  int iterations = 0;
  std::optional<int> pause_minutes;
  std::optional<TimePoint> pause_until;
  std::string output;              // the model's last text; excerpted when shaped
  std::string error;               // empty unless the run failed
  std::vector<std::string> notes;  // e.g. why archival tools were not offered
  std::optional<TimePoint> started_at;
  std::optional<TimePoint> finished_at;
  std::optional<TimePoint> last_beat;
};

// The full object (output not shortened); see docs/runner.md for the schema.
nlohmann::json result_to_json(const RunResult& result);

// Serialized and shaped to at most max_bytes (never less than 256 accepted).
std::string render_result(const RunResult& result, std::size_t max_bytes = kResultBytesMax);

}  // namespace hb::runner
