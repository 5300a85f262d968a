// Pure: a Pod spec (plus the ConfigMaps and Secrets it names) -> how to run
// its one container as a local process (LocalLaunch), or why it cannot run yet
// (PlanProblem).
//
// Limitations of running a container as a local process, by design:
//  * No filesystem namespace. Each volume is a directory under the pod's
//    state dir, and the process is told where: every env value and argument
//    that starts with a volumeMount's mountPath (or equals the container's
//    terminationMessagePath) is rewritten to the local path, also after a
//    leading "--flag=". A path the program builds itself from a mount path,
//    or reads from a file, is not rewritten.
//  * The image is a local binary (--image); the rest of the image (other
//    programs, /etc) is the host's. securityContext, resources, probes,
//    readOnly mounts and user ids are not enforced.
//  * The process's environment is built from scratch (PATH, HOSTNAME, HOME,
//    TMPDIR, the Pod's env, the service-account kubeconfig), as in a container;
//    nothing of the executor's own environment leaks in except --pass-env.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tests/e2e/local_kubelet/image_map.h"

namespace hb::local_kubelet {

using Json = nlohmann::json;

inline constexpr const char* kDefaultPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
inline constexpr const char* kDefaultTerminationMessagePath = "/dev/termination-log";
inline constexpr const char* kPodIp = "127.0.0.1";
inline constexpr int kDefaultFileMode = 0644;  // Kubernetes' defaultMode 420

struct FileToWrite {
  std::string path;  // absolute, local
  std::string content;
  int mode = kDefaultFileMode;
};

struct LocalLaunch {
  std::vector<std::string> argv;  // argv[0]: absolute path, or a name to find on PATH
  std::vector<std::pair<std::string, std::string>> env;  // in order, unique names
  std::string working_dir;
  std::vector<std::string> dirs;  // to create (volumes, emptyDirs, work dir)
  std::vector<FileToWrite> files;
  std::vector<std::pair<std::string, std::string>> rewrites;  // container path -> local
  std::string termination_path;                               // local file
  std::string termination_policy;                             // "File" or "FallbackToLogsOnError"
  std::string log_path;
  std::string image;
  std::vector<std::string> notes;  // things ignored, for the log
};

struct PlanProblem {
  bool fatal = false;  // true: the Pod fails; false: it waits and is retried
  std::string reason;  // the container's waiting/terminated reason
  std::string message;
};

using PlanResult = std::variant<LocalLaunch, PlanProblem>;

struct PlanInputs {
  std::string pod_dir;  // absolute; everything of the pod lives below
  const ImageMap* images = nullptr;
  std::string node_name;
  // Return the object, or nullopt when it does not exist (other failures throw).
  std::function<std::optional<Json>(const std::string& name)> config_map;
  std::function<std::optional<Json>(const std::string& name)> secret;
  // The service account's token, when the pod gets one (see wants_service_account).
  std::optional<std::string> service_account_token;
  std::string service_account_kubeconfig;  // rendered kubeconfig text, written as a file
  std::vector<std::pair<std::string, std::string>> pass_env;
};

// The service account whose token the process gets, or "" for none
// (automountServiceAccountToken false, or no serviceAccountName).
std::string wants_service_account(const Json& pod);

PlanResult plan_launch(const Json& pod, const PlanInputs& inputs);

// Kubernetes' $(VAR) expansion: known names are replaced, $$ is a literal $,
// anything else is kept as written.
std::string expand_references(const std::string& text,
                              const std::vector<std::pair<std::string, std::string>>& vars);

// Rewrites a container path (or "--flag=PATH") by the longest matching mount.
std::string rewrite_path(const std::string& value,
                         const std::vector<std::pair<std::string, std::string>>& rewrites);

// A kubeconfig that reaches `server` as the service account.
std::string render_token_kubeconfig(const std::string& server, const std::string& ca_pem,
                                    bool insecure_skip_verify, const std::string& token,
                                    const std::string& namespace_);

}  // namespace hb::local_kubelet
