// Keeps the first head_bytes and the last tail_bytes of a stream, so a
// command's long output shows both its start and its end.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hb::runner {

class OutputCapture {
 public:
  OutputCapture(std::size_t head_bytes, std::size_t tail_bytes)
      : head_max_(head_bytes), tail_max_(tail_bytes) {}

  void append(std::string_view data);
  std::size_t total_bytes() const { return total_; }
  bool truncated() const { return total_ > head_.size() + tail_.size(); }
  // Head, a marker naming the omitted byte count, tail; valid UTF-8.
  std::string text() const;

 private:
  std::size_t head_max_;
  std::size_t tail_max_;
  std::string head_;
  std::string tail_;  // a ring kept short by trimming when it doubles
  std::size_t total_ = 0;
};

}  // namespace hb::runner
