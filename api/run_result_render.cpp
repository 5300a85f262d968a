// The runner's side of api/run_result.h: render and shape to the limit.
#include <algorithm>
#include <cmath>

#include "api/run_result.h"
#include "api/utf8.h"

namespace hb::api {
namespace {

using nlohmann::json;

std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

double round_cents(double cents) {
  return std::round(cents * 1e6) / 1e6;
}

// The longest cut of `text` (cut(text, max_bytes) keeps at most that many
// bytes of it) for which `fits(piece)` holds: a binary search on the bytes.
template <typename Cut, typename Fits>
std::string longest_fitting_cut(const std::string& text, Cut cut, Fits fits) {
  std::size_t low = 0, high = text.size();
  std::string best = cut(text, 0);
  if (!fits(best)) return best;
  while (low < high) {
    std::size_t mid = low + (high - low + 1) / 2;
    std::string candidate = cut(text, mid);
    if (fits(candidate)) {
      low = mid;
      best = std::move(candidate);
    } else {
      high = mid - 1;
    }
  }
  return best;
}

// Largest prefix (cut by truncate_utf8, marked) for which `fits(prefix)` holds.
template <typename Fits>
std::string longest_fitting(const std::string& text, Fits fits) {
  return longest_fitting_cut(
      text, [](const std::string& t, std::size_t n) { return truncate_utf8(t, n); }, fits);
}

// Longest suffix (where a log ends) for which `fits(suffix)` holds.
template <typename Fits>
std::string longest_fitting_suffix(const std::string& text, Fits fits) {
  return longest_fitting_cut(
      text, [](const std::string& t, std::size_t n) { return std::string(utf8_suffix(t, n)); },
      fits);
}

// Shortens each excerpt in `out`, keeping its end, until the whole fits.
void shorten_excerpts(json& out, std::size_t max_bytes) {
  for (const char* key : {"stdoutExcerpt", "stderrExcerpt"}) {
    if (!out.contains(key) || dump(out).size() <= max_bytes) continue;
    const std::string text = out[key].get<std::string>();
    out[key] = longest_fitting_suffix(text, [&](const std::string& shorter) {
      out[key] = shorter;
      return dump(out).size() <= max_bytes;
    });
  }
}

}  // namespace

std::string log_excerpt(std::string_view text) {
  return sanitize_utf8(utf8_last_chars(text, kLogExcerptCharsMax));
}

std::string transcript_note(std::string_view text) {
  return sanitize_utf8(utf8_prefix(text, kTranscriptNoteBytesMax));
}

json result_to_json(const RunResult& result) {
  json out = {{"version", kResultSchemaVersion},
              {"stopReason", result.stop_reason},
              {"usage",
               {{"inputTokens", result.input_tokens},
                {"outputTokens", result.output_tokens},
                {"costCents", round_cents(result.cost_cents.value_or(0))},
                {"llmCalls", result.llm_calls},
                {"toolCalls", result.tool_calls},
                {"iterations", result.iterations}}}};
  if (result.action_tool_calls) out["usage"]["actionToolCalls"] = *result.action_tool_calls;
  if (!result.estimated_usage.empty()) out["usage"]["estimated"] = result.estimated_usage;
  if (result.cache_read_input_tokens > 0) {
    out["usage"]["cacheReadInputTokens"] = result.cache_read_input_tokens;
  }
  if (result.cache_write_input_tokens > 0) {
    out["usage"]["cacheWriteInputTokens"] = result.cache_write_input_tokens;
  }
  if (result.pause_minutes) out["pauseMinutes"] = *result.pause_minutes;
  if (result.pause_until) out["pauseUntil"] = format_rfc3339_millis(*result.pause_until);
  if (result.provider_reset_at) {
    out["providerResetAt"] = format_rfc3339_millis(*result.provider_reset_at);
  }
  if (result.started_at) out["startedAt"] = format_rfc3339_millis(*result.started_at);
  if (result.finished_at) out["finishedAt"] = format_rfc3339_millis(*result.finished_at);
  if (result.last_beat) out["lastBeatTime"] = format_rfc3339_millis(*result.last_beat);
  if (result.call_durations) {
    out["modelCallDurations"] = call_durations_to_json(*result.call_durations);
  }
  out["output"] = sanitize_utf8(result.output);
  out["outputBytes"] = result.output.size();
  if (!result.error.empty()) out["error"] = sanitize_utf8(result.error);
  if (!result.stdout_excerpt.empty()) out["stdoutExcerpt"] = log_excerpt(result.stdout_excerpt);
  if (!result.stderr_excerpt.empty()) out["stderrExcerpt"] = log_excerpt(result.stderr_excerpt);
  if (const auto& t = result.transcript) {
    out["transcript"] = {{"bytes", t->bytes},
                         {"sha256", t->sha256},
                         {"compressed", t->compressed},
                         {"truncated", t->truncated}};
    if (!t->note.empty()) {
      out["transcript"]["note"] = transcript_note(t->note);
    }
  }
  if (!result.notes.empty()) {
    json notes = json::array();
    for (const auto& note : result.notes) notes.push_back(sanitize_utf8(note));
    out["notes"] = std::move(notes);
  }
  return out;
}

std::string render_result(const RunResult& result, std::size_t max_bytes) {
  max_bytes = std::max<std::size_t>(max_bytes, 256);
  json out = result_to_json(result);
  std::string text = dump(out);
  if (text.size() <= max_bytes) return text;

  // 1. Shorten the output excerpt.
  const std::string output = out["output"].get<std::string>();
  out["outputTruncated"] = true;
  auto fits_with_output = [&](const std::string& excerpt) {
    out["output"] = excerpt;
    return dump(out).size() <= max_bytes;
  };
  out["output"] = longest_fitting(output, fits_with_output);
  text = dump(out);
  if (text.size() <= max_bytes) return text;

  // 2. Shorten the excerpts, keeping their ends (where a run stopped).
  shorten_excerpts(out, max_bytes);
  text = dump(out);
  if (text.size() <= max_bytes) return text;

  // 3. Drop the notes.
  out.erase("notes");
  out["output"] = longest_fitting(output, fits_with_output);
  text = dump(out);
  if (text.size() <= max_bytes) return text;

  // 4. Shorten the error.
  if (out.contains("error")) {
    const std::string error = out["error"].get<std::string>();
    out["error"] = longest_fitting(error, [&](const std::string& shorter) {
      out["error"] = shorter;
      return dump(out).size() <= max_bytes;
    });
    text = dump(out);
    if (text.size() <= max_bytes) return text;
  }

  // 5. Never reached with kTerminationMessageBytesMax; a minimal object keeps the contract.
  json minimal = {{"version", kResultSchemaVersion},
                  {"stopReason", out["stopReason"]},
                  {"usage", out["usage"]},
                  {"outputTruncated", true}};
  return dump(minimal);
}

}  // namespace hb::api
