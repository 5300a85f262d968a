#include "controllers/run_result.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "api/json_depth.h"
#include "api/usage_report.h"

namespace hb::controllers {

namespace {

// A count of the result's usage; the first malformed one sets `problem`.
void read_count(const nlohmann::json& usage, const char* key, int64_t& out, std::string& problem) {
  std::string bad = api::read_usage_count(usage, key, out);
  if (!bad.empty() && problem.empty()) problem = std::string("usage.") + key + " " + bad;
}

// Nesting deeper than this is not a result: refused before the parser
// recurses into it.
constexpr std::size_t kResultDepthMax = 8;

}  // namespace

ParsedResult parse_run_result(std::string_view text) {
  ParsedResult parsed;
  if (text.empty()) {
    parsed.problem = "the termination message is empty";
    return parsed;
  }
  if (text.size() > kTerminationMessageBytesMax) {
    parsed.problem = "the termination message is longer than 4096 bytes";
    return parsed;
  }
  if (api::json_nested_deeper_than(text, kResultDepthMax)) {
    parsed.problem = "the termination message is nested too deeply";
    return parsed;
  }
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    parsed.problem = "the termination message is not a JSON object";
    return parsed;
  }
  RunResult r;
  if (auto it = doc.find("stopReason"); it != doc.end() && it->is_string()) {
    r.stop_reason = it->get<std::string>();
  }
  auto usage = doc.find("usage");
  if (usage == doc.end() || !usage->is_object()) {
    parsed.problem = "the result has no usage object";
    return parsed;
  }
  read_count(*usage, "inputTokens", r.input_tokens, r.usage_problem);
  read_count(*usage, "outputTokens", r.output_tokens, r.usage_problem);
  read_count(*usage, "llmCalls", r.llm_calls, r.usage_problem);
  read_count(*usage, "toolCalls", r.tool_calls, r.usage_problem);
  read_count(*usage, "iterations", r.iterations, r.usage_problem);
  if (auto it = usage->find("costCents"); it != usage->end() && !it->is_null()) {
    const bool valid =
        it->is_number() && std::isfinite(it->get<double>()) && it->get<double>() >= 0;
    r.cost_cents = valid ? it->get<double>() : std::nan("");
  }
  if (auto it = doc.find("pauseMinutes"); it != doc.end() && it->is_number()) {
    const double minutes = it->get<double>();
    if (std::isfinite(minutes)) {
      r.pause_minutes = static_cast<int>(
          std::clamp(std::round(minutes), double{kPauseMinutesMin}, double{kPauseMinutesMax}));
    }
  }
  if (auto it = doc.find("output"); it != doc.end() && it->is_string())
    r.output = it->get<std::string>();
  if (auto it = doc.find("error"); it != doc.end() && it->is_string())
    r.error = it->get<std::string>();
  if (auto it = doc.find("lastBeatTime"); it != doc.end() && it->is_string()) {
    r.last_beat_time = it->get<std::string>();
  }
  parsed.result = std::move(r);
  return parsed;
}

}  // namespace hb::controllers
