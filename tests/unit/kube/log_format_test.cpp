// A value holding CR LF (a tenant's name, a model's tool name) stays on its
// own log line in both formats.
#include "kube/log_format.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace hb::kube {
namespace {

std::string logged(const std::string& value, bool json) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("test", sink);
  logger.set_formatter(escaped_formatter(json ? R"({"msg":"%*"})" : "%l %*", json));
  logger.warn("event=tool_call name=\"{}\"", value);
  return out.str();
}

const std::string kForged = "x\r\n2026-12-04T00:00:00Z info event=run_finished cost=0";

TEST(LogFormat, AForgedLineStaysInsideItsValue) {
  for (bool json : {false, true}) {
    const std::string line = logged(kForged, json);
    EXPECT_EQ(line.find('\n'), line.size() - 1) << line;  // only the line's own end
    EXPECT_EQ(line.find('\r'), std::string::npos) << line;
  }
  // Positive control: spdlog's own %v writes the value as it came.
  std::ostringstream out;
  spdlog::logger raw("raw", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  raw.set_pattern("%l %v");
  raw.warn("name=\"{}\"", kForged);
  EXPECT_NE(out.str().find("\n2026-12-04T00:00:00Z info event=run_finished"), std::string::npos);
}

TEST(LogFormat, JsonLinesParseBackToTheMessage) {
  const nlohmann::json parsed = nlohmann::json::parse(logged("a\"b\\c\x01", true));
  EXPECT_EQ(parsed["msg"], "event=tool_call name=\"a\"b\\c\x01\"");
}

}  // namespace
}  // namespace hb::kube
