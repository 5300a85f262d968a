// Log line formats shared by the operator and the runner: the message's
// control bytes are always escaped, so a value that holds CR or LF (a name
// a tenant wrote, a tool name a model chose) cannot start a forged line.
#pragma once

#include <spdlog/pattern_formatter.h>

#include <memory>
#include <string_view>

namespace hb::kube {

// `pattern` uses %* for the message: JSON-escaped when `json`, else with
// control bytes escaped only. Times are UTC.
std::unique_ptr<spdlog::pattern_formatter> escaped_formatter(std::string_view pattern, bool json);

}  // namespace hb::kube
