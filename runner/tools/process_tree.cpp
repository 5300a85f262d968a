#include "runner/tools/process_tree.h"

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

long long cpu_ticks_from_stat(std::string_view stat) {
  const std::size_t close = stat.rfind(')');
  if (close == std::string_view::npos || close + 2 >= stat.size()) return -1;
  std::string_view rest = stat.substr(close + 2);  // field 3 (state) onwards
  long long ticks = 0;
  for (int field = 3; field <= 17 && !rest.empty(); ++field) {
    const std::size_t space = rest.find(' ');
    const std::string_view word = rest.substr(0, space);
    if (field >= 14) {  // utime, stime, cutime, cstime
      long long value = 0;
      auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
      if (error != std::errc() || end != word.data() + word.size()) return -1;
      ticks += value;
      if (field == 17) return ticks;
    }
    if (space == std::string_view::npos) break;
    rest.remove_prefix(space + 1);
  }
  return -1;
}

namespace {

std::string read_stat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

long long descendants_cpu_ticks() {
  rusage reaped{};
  ::getrusage(RUSAGE_CHILDREN, &reaped);
  const long long tick_us = 1000000 / std::max(1L, ::sysconf(_SC_CLK_TCK));
  long long ticks = (reaped.ru_utime.tv_sec * 1000000 + reaped.ru_utime.tv_usec +
                     reaped.ru_stime.tv_sec * 1000000 + reaped.ru_stime.tv_usec) /
                    tick_us;
  for (pid_t pid : descendants(::getpid(), read_process_parents())) {
    ticks += std::max(0LL, cpu_ticks_from_stat(read_stat(pid)));
  }
  return ticks;
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
