#include "tools/local_kubelet/options.h"

#include <stdexcept>

namespace hb::local_kubelet {

std::string usage_text() {
  return "usage: hb-local-kubelet --image=PREFIX=PATH [--image=...] [--kubeconfig=PATH]\n"
         "         [--namespace=NS] [--node-name=NAME] [--state-dir=DIR] [--max-pods=N]\n"
         "         [--pass-env=NAME ...] [--delete-node-on-exit]\n"
         "  Plays the kubelet on a control plane without nodes: registers node NAME\n"
         "  (default local-executor), binds unscheduled Pods to it and runs each\n"
         "  container of a Pod as a local process (the image's binary from --image;\n"
         "  another program a container's command names is looked up next to it).\n"
         "  --kubeconfig     default $KUBECONFIG\n"
         "  --namespace      only Pods of this namespace (default: all)\n"
         "  --state-dir      per-pod files and logs (default $TMPDIR/hb-local-kubelet.NAME)\n"
         "  --max-pods       Pods running at once (default 20); more stay unscheduled\n"
         "  --pass-env       copy this variable of ours into every process (repeatable)\n";
}

ParsedOptions parse_options(
    const std::vector<std::string>& args,
    const std::function<std::optional<std::string>(const std::string&)>& env) {
  Options o;
  bool kubeconfig_set = false, state_dir_set = false;
  auto fail = [](const std::string& error) { return ParsedOptions{std::nullopt, error}; };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      continue;
    }
    if (arg == "--delete-node-on-exit") {
      o.delete_node_on_exit = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) return fail("unexpected argument \"" + arg + "\"");
    std::string name = arg.substr(2), value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return fail("--" + name + " needs a value");
    }
    if (name == "kubeconfig") {
      o.kubeconfig = value;
      kubeconfig_set = true;
    } else if (name == "namespace") {
      o.namespace_ = value;
    } else if (name == "node-name") {
      if (value.empty()) return fail("--node-name must not be empty");
      o.node_name = value;
    } else if (name == "state-dir") {
      if (value.empty()) return fail("--state-dir must not be empty");
      o.state_dir = value;
      state_dir_set = true;
    } else if (name == "image") {
      if (std::string error = o.images.add(value); !error.empty()) {
        return fail("--image: " + error);
      }
    } else if (name == "max-pods") {
      try {
        std::size_t used = 0;
        o.max_pods = std::stoi(value, &used);
        if (used != value.size() || o.max_pods < 1) throw std::out_of_range(value);
      } catch (const std::exception&) {
        return fail("--max-pods: \"" + value + "\" is not a whole number >= 1");
      }
    } else if (name == "pass-env") {
      if (value.empty() || value.find('=') != std::string::npos) {
        return fail("--pass-env: \"" + value + "\" is not a variable name");
      }
      o.pass_env.push_back(value);
    } else {
      return fail("unknown flag --" + name);
    }
  }
  if (o.help) return {o, ""};
  if (!kubeconfig_set) {
    auto from_env = env("KUBECONFIG");
    if (!from_env || from_env->empty()) {
      return fail("--kubeconfig is not set and neither is $KUBECONFIG");
    }
    // $KUBECONFIG may list several files; the first is used.
    o.kubeconfig = from_env->substr(0, from_env->find(':'));
  }
  if (o.images.empty()) {
    return fail(
        "no --image=PREFIX=PATH given: no image could run (e.g. "
        "--image=heartbeat-runner=/abs/build/runner/heartbeat-runner)");
  }
  if (!state_dir_set) {
    auto tmp = env("TMPDIR");
    o.state_dir =
        (tmp && !tmp->empty() ? *tmp : std::string("/tmp")) + "/hb-local-kubelet." + o.node_name;
  }
  return {o, ""};
}

}  // namespace hb::local_kubelet
