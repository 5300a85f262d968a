// heartbeat-operator: schedules Agents' heartbeats as HeartbeatRuns and Jobs.
//   heartbeat-operator --help
#include <malloc.h>
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "operator/config.h"
#include "operator/logging.h"
#include "operator/manager.h"

namespace {

// glibc gives each thread that allocates under contention an arena of its
// own (up to 8 per core), and each keeps its freed memory: with 16 workers,
// the informers and the HTTP threads, the fleet bench's peak RSS at 1,000
// agents is 130 MiB with them and 83 MiB with two, at the same CPU and lag.
constexpr int kMallocArenasMax = 2;

// glibc raises its mmap threshold to the size of each large block freed (up
// to 32 MiB), so after the first list page every page body (megabytes) would
// come from the arenas, and the cache's small objects made between them would
// keep the arenas from shrinking (at 1,000 agents, 37 MiB of anonymous memory
// for 10 MiB of heap in use). A fixed threshold keeps every block this large
// in a mapping of its own, returned whole when freed (anonymous memory at
// ready 14.5 MiB instead of 36.9 at 1,000 agents).
constexpr int kMallocMmapThresholdBytes = 256 * 1024;

// The environment's own malloc settings win (MALLOC_ARENA_MAX=8, or
// GLIBC_TUNABLES=glibc.malloc.arena_max=8).
bool malloc_tuned_by_environment(const char* variable, const char* tunable) {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return std::getenv(variable) != nullptr ||
         (tunables != nullptr && std::strstr(tunables, tunable) != nullptr);
}

void tune_malloc() {
  if (!malloc_tuned_by_environment("MALLOC_ARENA_MAX", "glibc.malloc.arena_max")) {
    mallopt(M_ARENA_MAX, kMallocArenasMax);
  }
  if (!malloc_tuned_by_environment("MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold")) {
    mallopt(M_MMAP_THRESHOLD, kMallocMmapThresholdBytes);
  }
}

std::atomic<bool> g_stop{false};
void on_signal(int) {
  g_stop = true;
}

}  // namespace

int main(int argc, char** argv) {
  tune_malloc();
  std::vector<std::string> args(argv + 1, argv + argc);
  auto result =
      hb::operator_::parse_config(args, [](const std::string& name) -> std::optional<std::string> {
        const char* value = std::getenv(name.c_str());
        if (value == nullptr) return std::nullopt;
        return std::string(value);
      });
  if (result.help) {
    std::cout << hb::operator_::usage();
    return 0;
  }
  if (!result.config) {
    std::cerr << "heartbeat-operator: " << result.error << "\n";
    return hb::operator_::kExitConfig;
  }
  hb::operator_::setup_logging(result.config->log_level, result.config->log_format);
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  return hb::operator_::run_manager(*result.config, g_stop);
}
