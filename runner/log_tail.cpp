#include "runner/log_tail.h"

#include "api/utf8.h"

namespace hb::runner {

void LogTail::append(std::string_view data) {
  std::lock_guard lock(mutex_);
  if (data.size() >= kLogTailBytesMax) {
    tail_.assign(data.substr(data.size() - kLogTailBytesMax));
    return;
  }
  tail_.append(data);
  if (tail_.size() >= 2 * kLogTailBytesMax) tail_.erase(0, tail_.size() - kLogTailBytesMax);
}

std::string LogTail::text() const {
  std::lock_guard lock(mutex_);
  const std::string_view kept = std::string_view(tail_).substr(
      tail_.size() > kLogTailBytesMax ? tail_.size() - kLogTailBytesMax : 0);
  return std::string(api::utf8_last_chars(kept, api::kLogExcerptCharsMax));
}

}  // namespace hb::runner
