#include "runner/tools/process_tree.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <thread>

namespace hb::tools {

pid_t parent_from_stat(std::string_view stat) {
  const std::size_t close = stat.rfind(')');
  if (close == std::string_view::npos || close + 4 >= stat.size()) return -1;
  std::string_view rest = stat.substr(close + 2);  // "S ppid ..."
  const std::size_t space = rest.find(' ');
  if (space == std::string_view::npos) return -1;
  rest = rest.substr(space + 1);
  pid_t parent = -1;
  auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), parent);
  (void)end;
  return error == std::errc() ? parent : -1;
}

std::vector<pid_t> descendants(pid_t root, const std::map<pid_t, pid_t>& parents) {
  std::vector<pid_t> out;
  for (const auto& [pid, parent] : parents) {
    // Walk up; bounded by the map's size, so a cycle cannot loop forever.
    pid_t at = parent;
    for (std::size_t steps = 0; at > 0 && steps <= parents.size(); ++steps) {
      if (at == root) {
        out.push_back(pid);
        break;
      }
      auto it = parents.find(at);
      if (it == parents.end()) break;
      at = it->second;
    }
  }
  return out;
}

std::map<pid_t, pid_t> read_process_parents() {
  std::map<pid_t, pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* entry = ::readdir(proc)) {
    pid_t pid = 0;
    const std::string_view name(entry->d_name);
    auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (error != std::errc() || end != name.data() + name.size() || pid <= 0) continue;
    std::ifstream in("/proc/" + std::string(name) + "/stat");
    std::stringstream text;
    text << in.rdbuf();
    const pid_t parent = parent_from_stat(text.str());
    if (parent >= 0) out[pid] = parent;
  }
  ::closedir(proc);
  return out;
}

namespace {

void reap_children() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

}  // namespace

int kill_all_descendants() {
  const pid_t self = ::getpid();
  int killed = 0;
  for (int round = 0; round < kKillRoundsMax; ++round) {
    const std::vector<pid_t> left = descendants(self, read_process_parents());
    if (left.empty()) break;
    // Stopped processes cannot fork; then none of them outlives the kill.
    for (pid_t pid : left) ::kill(pid, SIGSTOP);
    for (pid_t pid : left) {
      if (::kill(pid, SIGKILL) == 0) ++killed;
    }
    reap_children();
    std::this_thread::sleep_for(kKillRoundPause);
    reap_children();
  }
  return killed;
}

}  // namespace hb::tools
