// Which local binary stands in for which container image: `--image=PREFIX=PATH`
// maps every image whose name starts with PREFIX (any tag or digest) to the
// executable PATH, the image's entrypoint. The longest matching prefix wins.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hb::local_kubelet {

class ImageMap {
 public:
  // Parses "PREFIX=PATH"; returns an error text, or "" when added.
  std::string add(const std::string& spec);
  std::optional<std::string> binary_for(const std::string& image) const;
  bool empty() const { return entries_.empty(); }
  std::string describe() const;  // "prefix=path, ..." for the startup log

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

// argv[0] for a container of a mapped image: the mapped binary when the
// container sets no command or its command names the same program
// (`/usr/local/bin/heartbeat-runner` for a binary called heartbeat-runner);
// otherwise the command as written, found on the host.
std::string program_for(const std::string& command0, const std::string& mapped_binary);

}  // namespace hb::local_kubelet
