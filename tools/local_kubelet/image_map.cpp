#include "tools/local_kubelet/image_map.h"

#include <algorithm>

namespace hb::local_kubelet {
namespace {

std::string base_name(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string ImageMap::add(const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    return "\"" + spec + "\" is not PREFIX=PATH (e.g. heartbeat-runner=/abs/path/heartbeat-runner)";
  }
  const std::string path = spec.substr(eq + 1);
  if (path.front() != '/') return "\"" + path + "\" must be an absolute path";
  entries_.emplace_back(spec.substr(0, eq), path);
  // Longest prefix first, so the most specific mapping wins.
  std::stable_sort(entries_.begin(), entries_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  return "";
}

std::optional<std::string> ImageMap::binary_for(const std::string& image) const {
  for (const auto& [prefix, path] : entries_) {
    if (image.compare(0, prefix.size(), prefix) == 0) return path;
  }
  return std::nullopt;
}

std::string ImageMap::describe() const {
  std::string out;
  for (const auto& [prefix, path] : entries_) {
    out += (out.empty() ? "" : ", ") + prefix + "=" + path;
  }
  return out.empty() ? "(none)" : out;
}

std::string program_for(const std::string& command0, const std::string& mapped_binary,
                        const std::function<bool(const std::string&)>& executable) {
  const std::string name = base_name(command0);
  if (command0.empty() || name == base_name(mapped_binary)) return mapped_binary;
  const std::string sibling = mapped_binary.substr(0, mapped_binary.find_last_of('/') + 1) + name;
  if (!name.empty() && executable && executable(sibling)) return sibling;
  return command0;
}

}  // namespace hb::local_kubelet
