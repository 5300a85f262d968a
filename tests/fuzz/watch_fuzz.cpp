// The watch stream from the API server: lines split across chunks, the
// fast scanner, and the full decoder it falls back to.
#include "kube/watch_decoder.h"
#include "kube/watch_scan.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = hb::fuzz::as_text(data, size);
  hb::kube::LineSplitter splitter;
  const size_t cut = size > 0 ? data[0] % (size + 1) : 0;  // a chunk boundary anywhere
  auto on_line = [](std::string_view line) {
    const auto scanned = hb::kube::scan_watch_event(line);
    if (scanned) {
      hb::fuzz::require(scanned->object_text.size() <= line.size());
      (void)scanned->compact_object_text();
    }
    // The fast path takes only lines the full decoder takes.
    const bool decoded = hb::kube::decode_watch_event(line).ok();
    hb::fuzz::require(!scanned || decoded);
  };
  if (splitter.feed(text.substr(0, cut), on_line).ok()) {
    (void)splitter.feed(text.substr(cut), on_line);
  }
  return 0;
}
