// The operator's side of api/run_result.h: the message is the agent Pod's to
// write, so every field is checked before it is believed.
#include <algorithm>
#include <cmath>

#include "api/json_depth.h"
#include "api/run_result.h"
#include "api/usage_report.h"

namespace hb::api {
namespace {

using nlohmann::json;

// A count of the result's usage; the first malformed one sets `problem`.
void read_count(const json& usage, const char* key, int64_t& out, std::string& problem) {
  std::string bad = read_usage_count(usage, key, out);
  if (!bad.empty() && problem.empty()) problem = std::string("usage.") + key + " " + bad;
}

const json* member(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string string_or_empty(const json& object, const char* key) {
  const json* value = member(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

// A time that is not an RFC 3339 string is as good as absent.
std::optional<TimePoint> time_or_none(const json& object, const char* key) {
  const json* value = member(object, key);
  if (value == nullptr || !value->is_string()) return std::nullopt;
  return parse_rfc3339(value->get_ref<const std::string&>());
}

void read_usage(const json& usage, RunResult& r) {
  read_count(usage, "inputTokens", r.input_tokens, r.usage_problem);
  read_count(usage, "outputTokens", r.output_tokens, r.usage_problem);
  read_count(usage, "llmCalls", r.llm_calls, r.usage_problem);
  read_count(usage, "toolCalls", r.tool_calls, r.usage_problem);
  read_count(usage, "iterations", r.iterations, r.usage_problem);
  if (const json* cost = member(usage, "costCents"); cost != nullptr && !cost->is_null()) {
    const bool valid =
        cost->is_number() && std::isfinite(cost->get<double>()) && cost->get<double>() >= 0;
    r.cost_cents = valid ? cost->get<double>() : std::nan("");
  }
}

void read_details(const json& doc, RunResult& r) {
  r.stop_reason = string_or_empty(doc, "stopReason");
  if (const json* pause = member(doc, "pauseMinutes"); pause != nullptr && pause->is_number()) {
    const double minutes = pause->get<double>();
    if (std::isfinite(minutes)) {
      r.pause_minutes = static_cast<int>(
          std::clamp(std::round(minutes), double{kPauseMinutesMin}, double{kPauseMinutesMax}));
    }
  }
  r.pause_until = time_or_none(doc, "pauseUntil");
  r.output = string_or_empty(doc, "output");
  r.error = string_or_empty(doc, "error");
  if (const json* notes = member(doc, "notes"); notes != nullptr && notes->is_array()) {
    for (const json& note : *notes) {
      if (note.is_string()) r.notes.push_back(note.get<std::string>());
    }
  }
  r.started_at = time_or_none(doc, "startedAt");
  r.finished_at = time_or_none(doc, "finishedAt");
  r.last_beat = time_or_none(doc, "lastBeatTime");
}

}  // namespace

ParsedResult parse_run_result(std::string_view text) {
  ParsedResult parsed;
  if (text.empty()) {
    parsed.problem = "the termination message is empty";
    return parsed;
  }
  if (text.size() > kTerminationMessageBytesMax) {
    parsed.problem = "the termination message is longer than " +
                     std::to_string(kTerminationMessageBytesMax) + " bytes";
    return parsed;
  }
  if (json_nested_deeper_than(text, kResultDepthMax)) {
    parsed.problem = "the termination message is nested too deeply";
    return parsed;
  }
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    parsed.problem = "the termination message is not a JSON object";
    return parsed;
  }
  const json* usage = member(doc, "usage");
  if (usage == nullptr || !usage->is_object()) {
    parsed.problem = "the result has no usage object";
    return parsed;
  }
  RunResult r;
  read_usage(*usage, r);
  read_details(doc, r);
  parsed.result = std::move(r);
  return parsed;
}

}  // namespace hb::api
