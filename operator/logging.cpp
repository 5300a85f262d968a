#include "operator/logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "kube/log_format.h"

namespace hb::operator_ {

void setup_logging(const std::string& level, const std::string& format) {
  auto logger = std::make_shared<spdlog::logger>("heartbeat-operator",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  const bool json = format == "json";
  logger->set_formatter(
      kube::escaped_formatter(json ? R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","msg":"%*"})"
                                   : "%Y-%m-%dT%H:%M:%S.%fZ %l %*",
                              json));
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace hb::operator_
