#include "controllers/run_result.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace hb::controllers {

namespace {

bool read_count(const nlohmann::json& usage, const char* key, int64_t& out, std::string& problem) {
  auto it = usage.find(key);
  if (it == usage.end() || it->is_null()) return true;
  if (!it->is_number_integer() && !it->is_number_unsigned()) {
    problem = std::string("usage.") + key + " is not an integer";
    return false;
  }
  const int64_t value = it->get<int64_t>();
  if (value < 0) {
    problem = std::string("usage.") + key + " is negative";
    return false;
  }
  out = value;
  return true;
}

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
  std::string problem;
  if (!read_count(*usage, "inputTokens", r.input_tokens, problem) ||
      !read_count(*usage, "outputTokens", r.output_tokens, problem) ||
      !read_count(*usage, "llmCalls", r.llm_calls, problem) ||
      !read_count(*usage, "toolCalls", r.tool_calls, problem) ||
      !read_count(*usage, "iterations", r.iterations, problem)) {
    parsed.problem = problem;
    return parsed;
  }
  if (auto it = usage->find("costCents"); it != usage->end() && !it->is_null()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
      parsed.problem = "usage.costCents is not a non-negative number";
      return parsed;
    }
    r.cost_cents = it->get<double>();
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
