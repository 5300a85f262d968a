#include "runner/output_capture.h"

#include "api/utf8.h"

namespace hb::runner {

void OutputCapture::append(std::string_view data) {
  total_ += data.size();
  if (head_.size() < head_max_) {
    std::size_t take = std::min(head_max_ - head_.size(), data.size());
    head_.append(data.substr(0, take));
    data.remove_prefix(take);
  }
  if (data.empty() || tail_max_ == 0) return;
  tail_.append(data);
  if (tail_.size() > 2 * tail_max_) tail_.erase(0, tail_.size() - tail_max_);
}

std::string OutputCapture::text() const {
  std::string tail = tail_.size() > tail_max_ ? tail_.substr(tail_.size() - tail_max_) : tail_;
  if (!truncated()) return api::sanitize_utf8(head_ + tail);
  std::size_t omitted = total_ - head_.size() - tail.size();
  std::string head_part(api::utf8_prefix(head_, head_.size()));
  std::string tail_part(api::utf8_suffix(tail, tail.size()));
  // Cutting may have split a character at the seams; sanitize covers it.
  return api::sanitize_utf8(head_part) + "\n[... " + std::to_string(omitted) +
         " bytes omitted ...]\n" + api::sanitize_utf8(tail_part);
}

}  // namespace hb::runner
