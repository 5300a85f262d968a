// heartbeat-tools: the tools server of a heartbeat Pod's `tools` container.
//
//   heartbeat-tools --socket=PATH [--workdir=DIR] [--lifeline-wait-seconds=N]
//
// Exit codes: 0 the runner's lifeline closed (or never came), 2 bad flags,
// 3 cannot listen. docs/runner.md "The tools container".
#include <charconv>
#include <iostream>
#include <string>

#include "runner/tools/server.h"

namespace {

bool flag_value(const std::string& arg, const char* name, std::string& out) {
  const std::string prefix = std::string("--") + name + "=";
  if (arg.rfind(prefix, 0) != 0) return false;
  out = arg.substr(prefix.size());
  return true;
}

constexpr const char* kUsage =
    "usage: heartbeat-tools --socket=PATH [--workdir=DIR] [--lifeline-wait-seconds=N]\n";

}  // namespace

int main(int argc, char** argv) {
  hb::tools::ServerOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string value;
    if (flag_value(arg, "socket", value)) {
      options.socket_path = value;
    } else if (flag_value(arg, "workdir", value)) {
      options.workdir = value;
    } else if (flag_value(arg, "lifeline-wait-seconds", value)) {
      int seconds = 0;
      auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
      if (error != std::errc() || end != value.data() + value.size() || seconds < 1 ||
          seconds > 86400) {
        std::cerr << "heartbeat-tools: --lifeline-wait-seconds: use whole seconds 1..86400\n";
        return hb::tools::kServerExitUsage;
      }
      options.lifeline_wait = std::chrono::seconds(seconds);
    } else if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else {
      std::cerr << "heartbeat-tools: unknown argument " << arg << "\n" << kUsage;
      return hb::tools::kServerExitUsage;
    }
  }
  if (options.socket_path.empty()) {
    std::cerr << "heartbeat-tools: --socket=PATH is required\n";
    return hb::tools::kServerExitUsage;
  }
  return hb::tools::run_server(options);
}
