// A anthropic model reply: the provider, or anything between us and it, is
// hostile. Nothing escapes: a bad reply is a ProviderError value (the run
// ends provider_error);
// token counts stay within the clamp.
#include "runner/anthropic_wire.h"
#include "runner/errors.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(hb::fuzz::as_text(data, size));
  (void)hb::runner::anthropic::decode_response(body);  // a reply or a ProviderError, never a throw
  (void)hb::runner::anthropic::error_message(body);
  return 0;
}
