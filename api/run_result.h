// The run's result (docs/runner.md): one JSON object of at most
// kTerminationMessageBytesMax bytes in the runner container's termination
// message. The runner renders it; the operator parses it. Pure.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/call_durations.h"
#include "api/contract_limits.h"
#include "api/rfc3339.h"
#include "api/usage_counts.h"

namespace hb::api {

inline constexpr int kResultSchemaVersion = 1;

// The full transcript as the runner stored it on the Agent's archival
// volume (kTranscriptDirName/RUN kTranscriptFileSuffix).
struct TranscriptRecord {
  int64_t bytes = 0;        // the file as stored
  std::string sha256;       // of the file as stored, 64 lowercase hex digits
  bool compressed = false;  // gzip
  bool truncated = false;   // cut at kTranscriptBytesMax or by a failed write
  std::string note;         // why it was cut; at most kTranscriptNoteBytesMax
  bool operator==(const TranscriptRecord&) const = default;
};

// Its usage counts are the run's (api/usage_counts.h): input and output
// tokens, model and tool calls, iterations, and the prompt-cache parts of
// input_tokens the provider reported (parsed: 0 when absent, malformed or
// together more than input_tokens).
struct RunResult : UsageCounts {
  // A wire name of api::StopReason. A custom runner (runtime.mode command)
  // may write its own, so the operator keeps any string.
  std::string stop_reason;
  // The runner's own cost figure: a cross-check only, never money
  // (controllers/model/run_cost.h). Parsed: unset when absent; NaN when not a
  // non-negative finite number. Rendered: 0 when unset.
  std::optional<double> cost_cents;
  // usage.actionToolCalls: the tool calls that could change something (an
  // offered tool other than tool_only_reads). Not charged; idle backoff
  // reads it. Parsed: unset when absent or not a count up to tool_calls.
  std::optional<int64_t> action_tool_calls;
  // usage.estimated: the usage fields the provider did not report, which the
  // runner estimated ("inputTokens", "outputTokens"); empty when all reported.
  std::vector<std::string> estimated_usage;
  std::optional<int> pause_minutes;  // parsed: clamped to kPauseMinutesMin..kPauseMinutesMax
  std::optional<TimePoint> pause_until;
  // stopReason provider_quota: when the provider said its quota resets (its
  // retry-after from the response's time); unset when it did not say.
  std::optional<TimePoint> provider_reset_at;
  std::string output;              // the model's last text; excerpted when rendered too long
  std::string error;               // empty unless the run failed
  std::vector<std::string> notes;  // e.g. why archival tools were not offered
  // The last kLogExcerptCharsMax characters of the runner's stdout (the
  // transcript) and stderr (its log); shortened further, keeping the end,
  // when the result would not fit.
  std::string stdout_excerpt;
  std::string stderr_excerpt;
  std::optional<TranscriptRecord> transcript;
  std::optional<TimePoint> started_at;
  std::optional<TimePoint> finished_at;
  std::optional<TimePoint> last_beat;
  // modelCallDurations: how long the run's chat calls took
  // (api/call_durations.h). Parsed: unset when absent; unset with
  // call_durations_problem saying why when malformed or counting more calls
  // than llmCalls (the rest of the result still stands).
  std::optional<CallDurations> call_durations;
  std::string call_durations_problem;
  // Parse only: the usage object was there but a count in it was not a
  // non-negative 64-bit integer; the run is charged its bound (run_cost.h).
  std::string usage_problem;

  bool operator==(const RunResult&) const = default;
};

// What either side keeps of a log excerpt (its last kLogExcerptCharsMax
// characters) and of a transcript's note (its first kTranscriptNoteBytesMax
// bytes), as valid UTF-8.
std::string log_excerpt(std::string_view text);
std::string transcript_note(std::string_view text);

// Rendering (runner side). Times are written with milliseconds.
// The full object, the output not shortened.
nlohmann::json result_to_json(const RunResult& result);
// Serialized and shaped to at most max_bytes (never less than 256 accepted):
// the output excerpt is shortened first, then the notes dropped, then the
// error shortened; the JSON itself is never cut.
std::string render_result(const RunResult& result,
                          std::size_t max_bytes = kTerminationMessageBytesMax);

// Parsing (operator side). The message is written by the agent's own Pod:
// hostile. Strict about size, depth, types and bounds: a message that is not
// a JSON object with a usage object is unreadable (`problem` says why; the
// run still finishes, charged what its beats reported); a usage object with a
// malformed count is read, with usage_problem set. Never throws.
struct ParsedResult {
  std::optional<RunResult> result;
  std::string problem;  // why it is unreadable; empty when result is set
};
ParsedResult parse_run_result(std::string_view termination_message);

}  // namespace hb::api
