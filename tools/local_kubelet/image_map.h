// Which local binary stands in for which container image: `--image=PREFIX=PATH`
// maps every image whose name starts with PREFIX (any tag or digest) to the
// executable PATH, the image's entrypoint. The longest matching prefix wins.
#pragma once

#include <functional>
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

// argv[0] for a container of a mapped image. The mapped binary's directory
// stands for the image's program directory:
//  1. no command, or command[0] has the mapped binary's basename: the mapped
//     binary (/usr/local/bin/heartbeat-runner -> build/runner/heartbeat-runner);
//  2. else the program of command[0]'s basename next to the mapped binary, if
//     `executable` says it is one (/usr/local/bin/heartbeat-tools ->
//     build/runner/heartbeat-tools);
//  3. else command[0] as written, found on the host (/bin/sh).
std::string program_for(const std::string& command0, const std::string& mapped_binary,
                        const std::function<bool(const std::string&)>& executable = {});

}  // namespace hb::local_kubelet
