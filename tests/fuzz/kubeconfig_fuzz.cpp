// kubeconfig text: parsed or refused with an Error, never an exception.
#include "kube/kubeconfig.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const hb::kube::Result<hb::kube::ClusterConfig> config =
      hb::kube::parse_kubeconfig(std::string(hb::fuzz::as_text(data, size)), "/fuzz/config");
  if (config.ok()) {
    hb::fuzz::require(!config.value().server.empty(), "a parsed kubeconfig names a server");
  } else {
    hb::fuzz::require(config.error().kind == hb::kube::ErrorKind::kConfig,
                      "a refused kubeconfig is a config error");
  }
  return 0;
}
