// The context document the operator hands the runner (through an annotation
// or a ConfigMap the agent cannot write, but parsed defensively).
#include "api/context_document.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)hb::api::parse_context_document_text(hb::fuzz::as_text(data, size));
  return 0;
}
