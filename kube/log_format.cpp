#include "kube/log_format.h"

#include <cstdio>
#include <string>

namespace hb::kube {
namespace {

// %* : the message, escaped for a JSON string; %^ in text mode: control
// bytes escaped only. Either way a value that holds CR or LF (a name a
// tenant wrote, a model's tool name) cannot start a forged log line.
class EscapedPayload final : public spdlog::custom_flag_formatter {
 public:
  explicit EscapedPayload(bool json) : json_(json) {}
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    for (char c : msg.payload) {
      if (!json_ && (c == '"' || c == '\\')) {
        dest.push_back(c);
        continue;
      }
      switch (c) {
        case '"':
          dest.append(std::string_view("\\\""));
          break;
        case '\\':
          dest.append(std::string_view("\\\\"));
          break;
        case '\n':
          dest.append(std::string_view("\\n"));
          break;
        case '\t':
          dest.append(std::string_view("\\t"));
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            char buffer[8];
            std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
            dest.append(std::string_view(buffer));
          } else {
            dest.push_back(c);
          }
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedPayload>(json_);
  }

 private:
  bool json_;
};

}  // namespace

std::unique_ptr<spdlog::pattern_formatter> escaped_formatter(std::string_view pattern, bool json) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  formatter->add_flag<EscapedPayload>('*', json).set_pattern(std::string(pattern));
  return formatter;
}

}  // namespace hb::kube
