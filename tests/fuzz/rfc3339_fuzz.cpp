// RFC 3339 times (run results, heartbeat leases): a parsed time formats and
// parses back to the same instant.
#include "api/rfc3339.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = hb::api::parse_rfc3339(hb::fuzz::as_text(data, size));
  if (!parsed) return 0;
  auto again = hb::api::parse_rfc3339(hb::api::format_rfc3339_millis(*parsed));
  hb::fuzz::require(again.has_value(), "a formatted time parses");
  hb::fuzz::require(std::chrono::floor<std::chrono::seconds>(*again) ==
                        std::chrono::floor<std::chrono::seconds>(*parsed),
                    "rfc3339 round-trips to the second");
  return 0;
}
