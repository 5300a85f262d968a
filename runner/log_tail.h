// The last characters a stream carried (the runner's stdout transcript, its
// stderr log), for the result's stdoutExcerpt / stderrExcerpt. Bounded:
// keeps at most kLogTailBytesMax bytes whatever the stream's length.
// Thread-safe (log lines come from more than one thread).
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>

#include "api/contract_limits.h"

namespace hb::runner {

// Four bytes a character at most: enough for kLogExcerptCharsMax characters.
inline constexpr std::size_t kLogTailBytesMax = 4 * api::kLogExcerptCharsMax;

class LogTail {
 public:
  void append(std::string_view data);
  // The last kLogExcerptCharsMax characters.
  std::string text() const;

 private:
  mutable std::mutex mutex_;
  std::string tail_;  // trimmed to kLogTailBytesMax when it doubles
};

}  // namespace hb::runner
