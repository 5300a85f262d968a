// spdlog setup: one line per event, `event=... key=value` payloads, as JSON
// (the payload escaped into "msg") or plain text.
#pragma once

#include <string>

namespace hb::operator_ {

void setup_logging(const std::string& level, const std::string& format);

}  // namespace hb::operator_
