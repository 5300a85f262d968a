// A pod's local directory: created from a LocalLaunch before its processes
// start (owners and modes as planned); its secrets (volumes, kubeconfigs)
// removed once they ended. Logs and termination messages stay for post-mortems.
#pragma once

#include <string>

#include "tools/local_kubelet/launch_plan.h"

namespace hb::local_kubelet {

// "<state>/pods/<uid>": short, so a Unix socket in a volume below still fits
// sun_path (the tools socket of a heartbeat Pod).
std::string pod_dir_for(const std::string& state_dir, const std::string& uid);

// Creates launch.dirs and writes launch.files, each with its mode and owner
// (the owner only when the executor is root). Never follows a symlink it
// finds in their place. Throws std::runtime_error naming the path.
void materialize(const LocalLaunch& launch);

// Removes volumes/ and every container's kubeconfig; never throws.
void remove_secrets(const std::string& pod_dir);

// Up to max_bytes from the end or the start of a regular file ("" when
// missing, not a regular file, or a symlink: a container owns the
// directory of its termination message).
std::string read_tail(const std::string& path, std::size_t max_bytes);
std::string read_head(const std::string& path, std::size_t max_bytes);

}  // namespace hb::local_kubelet
