#include "operator/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace hb::operator_ {

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

void setup_logging(const std::string& level, const std::string& format) {
  auto logger = std::make_shared<spdlog::logger>("heartbeat-operator",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  if (format == "json") {
    formatter->add_flag<EscapedPayload>('*', true).set_pattern(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","msg":"%*"})");
  } else {
    formatter->add_flag<EscapedPayload>('*', false).set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %l %*");
  }
  logger->set_formatter(std::move(formatter));
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace hb::operator_
