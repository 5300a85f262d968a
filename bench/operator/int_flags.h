// `--name=N` integer flags for the operator benchmarks: each known flag sets
// its target; an unknown one is an error that lists the known ones.
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <utility>

namespace hb::bench {

using IntFlag = std::pair<const char*, int*>;

inline void parse_int_flags(int argc, char** argv, std::span<const IntFlag> flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    bool known = false;
    for (const auto& [flag, target] : flags) {
      const std::string prefix = std::string(flag) + "=";
      if (a.rfind(prefix, 0) != 0) continue;
      *target = std::stoi(a.substr(prefix.size()));
      known = true;
    }
    if (!known) {
      std::string names;
      for (const auto& [flag, target] : flags) names += std::string(" ") + flag + "=";
      throw std::invalid_argument("unknown flag " + a + " (use" + names + ")");
    }
  }
}

}  // namespace hb::bench
