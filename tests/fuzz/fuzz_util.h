// Shared by the libFuzzer targets: each feeds hostile bytes to one parser
// and lets only that parser's documented error escape; any other exception,
// crash or sanitizer report is a finding. scripts/fuzz.sh runs them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace hb::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// An invariant the parser promises; abort() makes libFuzzer keep the input.
inline void require(bool holds, const char* what = "invariant") {
  if (holds) return;
  std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
  std::abort();
}

}  // namespace hb::fuzz
