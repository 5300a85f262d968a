// A pod's local directory: created from a LocalLaunch before its process
// starts; its secrets (volumes, kubeconfig) removed once it ended. The log
// and the termination message stay for post-mortems.
#pragma once

#include <string>

#include "tests/e2e/local_kubelet/launch_plan.h"

namespace hb::local_kubelet {

// "<state>/pods/<namespace>_<name>_<uid>"
std::string pod_dir_for(const std::string& state_dir, const std::string& ns,
                        const std::string& name, const std::string& uid);

// Throws std::runtime_error naming the path that could not be written.
void materialize(const std::string& pod_dir, const LocalLaunch& launch);

// Removes volumes/ and kubeconfig; never throws.
void remove_secrets(const std::string& pod_dir);

// Up to max_bytes from the end of a file ("" when missing).
std::string read_tail(const std::string& path, std::size_t max_bytes);
std::string read_head(const std::string& path, std::size_t max_bytes);

}  // namespace hb::local_kubelet
