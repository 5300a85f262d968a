// Runs one allowed tool call whose arguments already parsed as a JSON object.
// The loop itself answers forbidden tools, malformed arguments and
// pause_heartbeats; a ToolRunner never sees them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runner/clock.h"

namespace hb::runner {

struct ToolOutcome {
  std::string content;  // shown to the model
  bool is_error = false;
  // The tools container is gone for good: the loop stops (tools_unavailable).
  bool tools_unavailable = false;
};

class ToolRunner {
 public:
  virtual ~ToolRunner() = default;
  // `deadline`: the run's wall deadline; long tools stop before it.
  virtual ToolOutcome run(const std::string& name, const nlohmann::json& arguments,
                          TimePoint deadline) = 0;
};

}  // namespace hb::runner
