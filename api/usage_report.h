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

#include "api/usage_counts.h"

namespace hb::api {

inline constexpr const char* kAnnotationUsage = "heartbeat.dev/usage";
inline constexpr std::size_t kUsageReportBytesMax = 1024;

// The counts so far, and whose run they are.
struct UsageReport : UsageCounts {
  std::string run;  // the run's name: a report of an earlier run is ignored
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
