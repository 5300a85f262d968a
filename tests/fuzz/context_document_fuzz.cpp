// The context document the operator hands the runner (through an annotation
// or a ConfigMap the agent cannot write, but parsed defensively).
#include "runner/context_document.h"
#include "runner/errors.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)hb::runner::parse_context_document_text(hb::fuzz::as_text(data, size));
  } catch (const hb::runner::ConfigError&) {
  }
  return 0;
}
