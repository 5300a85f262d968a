// What /proc says of a live process, for the benchmarks that watch the
// operator: its CPU seconds, peak RSS and any status field.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>

namespace hb::bench {

// Seconds of CPU (user + system) and peak RSS in KiB of a live process.
inline std::pair<double, long> cpu_and_peak_rss(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;  // fields 3..13
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  const double cpu = (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  long hwm = 0;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) hwm = std::stol(line.substr(6));
  }
  return {cpu, hwm};
}

// KiB of a live process's status field ("VmRSS:", "RssAnon:", ...).
inline long status_kib(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(field.size()));
  }
  return 0;
}

}  // namespace hb::bench
