#include "otlp/span.h"

#include <random>

namespace hb::otlp {

std::string random_hex_id(std::size_t bytes) {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  do {
    out.clear();
    for (std::size_t i = 0; i < bytes; ++i) {
      auto byte = static_cast<unsigned>(engine() & 0xffU);
      out += kDigits[byte >> 4];
      out += kDigits[byte & 0xfU];
    }
  } while (out.find_first_not_of('0') == std::string::npos);
  return out;
}

}  // namespace hb::otlp
