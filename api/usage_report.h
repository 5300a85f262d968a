// The runner's cumulative usage, written on every Lease beat as the
// annotation kAnnotationUsage of the agent's Lease, so a runner killed
// mid-run is still charged for the model calls it reported. The operator
// charges the larger of the last beat's report and the final result, per
// field. Pure; the decoder treats its input as hostile (bounded size, strict
// types, non-negative integers only).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace hb::api {

inline constexpr const char* kAnnotationUsage = "heartbeat.dev/usage";
inline constexpr std::size_t kUsageReportBytesMax = 1024;

struct UsageReport {
  std::string run;  // the run's name: a report of an earlier run is ignored
  int64_t llm_calls = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t tool_calls = 0;
  int64_t iterations = 0;
  // Parts of input_tokens: prompt-cache reads and writes (api/run_result.h).
  // Written only when above 0; decoded as 0 when absent, malformed or
  // together more than input_tokens (the report itself still stands).
  int64_t cache_read_input_tokens = 0;
  int64_t cache_write_input_tokens = 0;
  bool operator==(const UsageReport&) const = default;
};

// {"run":"x","llmCalls":1,"inputTokens":2,"outputTokens":3,"toolCalls":4,"iterations":5}
// plus "cacheReadInputTokens" and "cacheWriteInputTokens" when above 0.
std::string encode_usage_report(const UsageReport& report);

struct DecodedUsageReport {
  std::optional<UsageReport> report;
  std::string problem;  // set when report is not
};
DecodedUsageReport decode_usage_report(std::string_view text);

// The count at `key` of a JSON object into `out`: "" when absent or a
// non-negative 64-bit integer, else what is wrong with it ("is negative").
std::string read_usage_count(const nlohmann::json& object, const char* key, int64_t& out);

}  // namespace hb::api
