// hb-local-kubelet's command line, parsed without side effects.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tools/local_kubelet/image_map.h"

namespace hb::local_kubelet {

inline constexpr int kMaxPodsDefault = 20;
inline constexpr const char* kNodeNameDefault = "local-executor";

struct Options {
  std::string kubeconfig;  // --kubeconfig, default $KUBECONFIG
  std::string namespace_;  // --namespace, "" = all namespaces
  std::string node_name = kNodeNameDefault;
  std::string state_dir;  // --state-dir, default $TMPDIR/hb-local-kubelet.<node>
  ImageMap images;        // --image=PREFIX=PATH (repeatable)
  int max_pods = kMaxPodsDefault;
  std::vector<std::string> pass_env;  // --pass-env=NAME: copied into every process
  bool delete_node_on_exit = false;   // --delete-node-on-exit
  bool help = false;
};

struct ParsedOptions {
  std::optional<Options> options;
  std::string error;  // names the flag
};

// `env` looks up KUBECONFIG and TMPDIR (process environment in main).
ParsedOptions parse_options(
    const std::vector<std::string>& args,
    const std::function<std::optional<std::string>(const std::string&)>& env);

std::string usage_text();

}  // namespace hb::local_kubelet
