// kubeconfig text: parsed or refused with ConfigError, never another exception.
#include "kube/kubeconfig.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto config =
        hb::kube::parse_kubeconfig(std::string(hb::fuzz::as_text(data, size)), "/fuzz/config");
    hb::fuzz::require(!config.server.empty(), "a parsed kubeconfig names a server");
  } catch (const hb::kube::ConfigError&) {
  }
  return 0;
}
