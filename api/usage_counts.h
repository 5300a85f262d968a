// What a heartbeat used, counted the one way every record of it shares: the
// runner's result (api/run_result.h), its Lease beats (api/usage_report.h)
// and the operator's charge (controllers/model/run_cost.h) each are, or hold,
// these seven counts, so none converts field by field.
#pragma once

#include <cstdint>

namespace hb::api {

struct UsageCounts {
  int64_t llm_calls = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t tool_calls = 0;
  int64_t iterations = 0;
  // Parts of input_tokens: prompt-cache reads and writes. A reader takes
  // them as 0 when absent, malformed or together more than input_tokens,
  // and the charge prices them only when they are within it.
  int64_t cache_read_input_tokens = 0;
  int64_t cache_write_input_tokens = 0;
  bool operator==(const UsageCounts&) const = default;
};

}  // namespace hb::api
