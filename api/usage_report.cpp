#include "api/usage_report.h"

#include <nlohmann/json.hpp>

#include "api/json_depth.h"

namespace hb::api {
namespace {

using nlohmann::json;

// A report is a flat object: depth 1, so no nesting is parsed at all.
constexpr std::size_t kUsageReportDepthMax = 2;
constexpr const char* kCacheReadKey = "cacheReadInputTokens";
constexpr const char* kCacheWriteKey = "cacheWriteInputTokens";

// Parts of the input: believed only whole and within it; never a reason to
// drop the report (that would lower the charge).
void read_cache_counts(const json& doc, UsageReport& r) {
  int64_t read = 0, write = 0;
  if (read_usage_count(doc, kCacheReadKey, read).empty() &&
      read_usage_count(doc, kCacheWriteKey, write).empty() && read <= r.input_tokens &&
      write <= r.input_tokens - read) {
    r.cache_read_input_tokens = read;
    r.cache_write_input_tokens = write;
  }
}

}  // namespace

std::string read_usage_count(const json& object, const char* key, int64_t& out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "";
  if (it->is_number_unsigned()) {
    if (it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      return "is larger than a 64-bit count";
    out = static_cast<int64_t>(it->get<uint64_t>());
    return "";
  }
  if (!it->is_number_integer()) return "is not an integer";
  if (it->get<int64_t>() < 0) return "is negative";
  out = it->get<int64_t>();
  return "";
}

std::string encode_usage_report(const UsageReport& r) {
  json doc{{"run", r.run},
           {"llmCalls", r.llm_calls},
           {"inputTokens", r.input_tokens},
           {"outputTokens", r.output_tokens},
           {"toolCalls", r.tool_calls},
           {"iterations", r.iterations}};
  if (r.cache_read_input_tokens > 0) doc[kCacheReadKey] = r.cache_read_input_tokens;
  if (r.cache_write_input_tokens > 0) doc[kCacheWriteKey] = r.cache_write_input_tokens;
  return doc.dump();
}

DecodedUsageReport decode_usage_report(std::string_view text) {
  DecodedUsageReport out;
  if (text.size() > kUsageReportBytesMax) {
    out.problem =
        "the usage report is longer than " + std::to_string(kUsageReportBytesMax) + " bytes";
    return out;
  }
  if (json_nested_deeper_than(text, kUsageReportDepthMax)) {
    out.problem = "the usage report is nested";
    return out;
  }
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    out.problem = "the usage report is not a JSON object";
    return out;
  }
  UsageReport r;
  auto run = doc.find("run");
  if (run == doc.end() || !run->is_string() || run->get<std::string>().empty()) {
    out.problem = "the usage report names no run";
    return out;
  }
  r.run = run->get<std::string>();
  const std::pair<const char*, int64_t*> counts[] = {{"llmCalls", &r.llm_calls},
                                                     {"inputTokens", &r.input_tokens},
                                                     {"outputTokens", &r.output_tokens},
                                                     {"toolCalls", &r.tool_calls},
                                                     {"iterations", &r.iterations}};
  for (const auto& [key, field] : counts) {
    if (std::string bad = read_usage_count(doc, key, *field); !bad.empty()) {
      out.problem = std::string("usage report: ") + key + " " + bad;
      return out;
    }
  }
  read_cache_counts(doc, r);
  out.report = std::move(r);
  return out;
}

}  // namespace hb::api
