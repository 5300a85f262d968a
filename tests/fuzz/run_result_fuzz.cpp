// The termination message the agent's Pod writes: the runner's result, or
// anything the agent forged. Never an exception; a result or a problem.
#include "api/run_result.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const hb::api::ParsedResult parsed = hb::api::parse_run_result(hb::fuzz::as_text(data, size));
  hb::fuzz::require(parsed.result.has_value() != !parsed.problem.empty());
  return 0;
}
