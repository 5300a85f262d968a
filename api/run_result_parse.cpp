// The operator's side of api/run_result.h: the message is the agent Pod's to
// write, so every field is checked before it is believed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "api/json_depth.h"
#include "api/run_result.h"
#include "api/usage_report.h"
#include "api/utf8.h"

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
  // Not money: a malformed figure is only not believed.
  int64_t actions = 0;
  const json* action_calls = member(usage, "actionToolCalls");
  if (action_calls != nullptr && !action_calls->is_null() &&
      read_usage_count(usage, "actionToolCalls", actions).empty() && actions <= r.tool_calls) {
    r.action_tool_calls = actions;
  }
  // Parts of inputTokens: believed only whole and within it.
  int64_t cache_read = 0, cache_write = 0;
  if (read_usage_count(usage, "cacheReadInputTokens", cache_read).empty() &&
      read_usage_count(usage, "cacheWriteInputTokens", cache_write).empty() &&
      cache_read <= r.input_tokens && cache_write <= r.input_tokens - cache_read) {
    r.cache_read_input_tokens = cache_read;
    r.cache_write_input_tokens = cache_write;
  }
  // Not money either: only the two known names are kept.
  if (const json* estimated = member(usage, "estimated"); estimated && estimated->is_array()) {
    for (const json& field : *estimated) {
      if (field == "inputTokens" || field == "outputTokens") {
        r.estimated_usage.push_back(field.get<std::string>());
      }
    }
  }
  if (const json* cost = member(usage, "costCents"); cost != nullptr && !cost->is_null()) {
    const bool valid =
        cost->is_number() && std::isfinite(cost->get<double>()) && cost->get<double>() >= 0;
    r.cost_cents = valid ? cost->get<double>() : std::nan("");
  }
}

// The runner's excerpt as the result may carry it: its last characters, valid UTF-8.
std::string excerpt_or_empty(const json& object, const char* key) {
  const json* value = member(object, key);
  if (value == nullptr || !value->is_string()) return {};
  return log_excerpt(value->get_ref<const std::string&>());
}

bool is_sha256_hex(const json& value) {
  if (!value.is_string() || value.get_ref<const std::string&>().size() != 64) return false;
  const std::string& text = value.get_ref<const std::string&>();
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Believed only whole: a size, a digest and two flags of the right types.
std::optional<TranscriptRecord> transcript_or_none(const json& doc) {
  const json* t = member(doc, "transcript");
  if (t == nullptr || !t->is_object()) return std::nullopt;
  const json* bytes = member(*t, "bytes");
  const json* sha = member(*t, "sha256");
  if (bytes == nullptr || !bytes->is_number_unsigned() || sha == nullptr || !is_sha256_hex(*sha)) {
    return std::nullopt;
  }
  TranscriptRecord record;
  if (bytes->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  record.bytes = static_cast<int64_t>(bytes->get<uint64_t>());
  record.sha256 = sha->get<std::string>();
  for (auto [key, flag] :
       {std::pair{"compressed", &record.compressed}, std::pair{"truncated", &record.truncated}}) {
    const json* value = member(*t, key);
    if (value != nullptr && !value->is_boolean()) return std::nullopt;
    *flag = value != nullptr && value->get<bool>();
  }
  if (const json* note = member(*t, "note"); note != nullptr && note->is_string()) {
    record.note = transcript_note(note->get_ref<const std::string&>());
  }
  return record;
}

// A claim of the runner's: dropped, with the reason, when not believable.
void read_call_durations(const json& doc, RunResult& r) {
  const json* value = member(doc, "modelCallDurations");
  if (value == nullptr) return;
  std::optional<CallDurations> durations =
      call_durations_from_json(*value, r.call_durations_problem);
  if (!durations) return;
  r.call_durations_problem =
      call_durations_problem(*durations, r.llm_calls, std::numeric_limits<double>::infinity());
  if (r.call_durations_problem.empty()) r.call_durations = *durations;
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
  r.provider_reset_at = time_or_none(doc, "providerResetAt");
  r.output = string_or_empty(doc, "output");
  r.error = string_or_empty(doc, "error");
  if (const json* notes = member(doc, "notes"); notes != nullptr && notes->is_array()) {
    for (const json& note : *notes) {
      if (note.is_string()) r.notes.push_back(note.get<std::string>());
    }
  }
  r.stdout_excerpt = excerpt_or_empty(doc, "stdoutExcerpt");
  r.stderr_excerpt = excerpt_or_empty(doc, "stderrExcerpt");
  r.transcript = transcript_or_none(doc);
  r.started_at = time_or_none(doc, "startedAt");
  r.finished_at = time_or_none(doc, "finishedAt");
  r.last_beat = time_or_none(doc, "lastBeatTime");
  read_call_durations(doc, r);
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
