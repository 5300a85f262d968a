// The ToolRunner of a real heartbeat: shell, core memory, archival memory and
// conversation search. Validates each tool's arguments and answers the model
// with a clear error when they are wrong.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runner/archival_store.h"
#include "runner/clock.h"
#include "runner/heartbeat.h"
#include "runner/memory_tools.h"
#include "runner/shell_tool.h"
#include "runner/tool_runner.h"
#include "runner/tools_client.h"

namespace hb::runner {

struct ToolboxDeps {
  CoreMemoryService& memory;
  ArchivalStore* archival;  // null: no archival storage
  Heartbeat& heartbeat;
  Clock& clock;
  std::string run_name;
  std::vector<std::string> shell_env_remove;
  std::function<bool()> cancelled;
  // Where shell commands run (the tools container); null: nowhere.
  ShellExecutor* shell = nullptr;
};

class Toolbox final : public ToolRunner {
 public:
  explicit Toolbox(ToolboxDeps deps) : deps_(std::move(deps)) {}
  ToolOutcome run(const std::string& name, const nlohmann::json& arguments,
                  TimePoint deadline) override;

 private:
  ToolOutcome shell(const nlohmann::json& arguments, TimePoint deadline);
  ToolOutcome search(const std::string& name, const nlohmann::json& arguments);

  ToolboxDeps deps_;
};

}  // namespace hb::runner
