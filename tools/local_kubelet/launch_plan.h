// Pure: a Pod spec (plus the ConfigMaps and Secrets it names) -> how to run
// each of its containers as a local process (LocalLaunch), or why it cannot
// run yet (PlanProblem).
//
// Limitations of running a container as a local process, by design:
//  * No filesystem, PID or user namespace. Each volume is a directory under
//    the pod's state dir, and each process is told where: every env value and
//    argument that starts with a mountPath of ITS volumeMounts (or equals its
//    terminationMessagePath) is rewritten to the local path, also after a
//    leading "--flag=". A path the program builds itself from a mount path,
//    or reads from a file, is not rewritten.
//  * Isolation between containers is by user id and file modes only: each
//    container runs as its runAsUser/runAsGroup (+ fsGroup and
//    supplementalGroups), a volume mounted by one user is that user's (0700),
//    one mounted by several users belongs to the Pod's fsGroup (2770). The
//    rest of the host (/tmp, /proc listings, the network) is shared.
//  * The image is a local binary (--image); the rest of the image (other
//    programs, /etc) is the host's (see program_for). resources, probes,
//    capabilities, seccomp, readOnly mounts and readOnlyRootFilesystem are not
//    enforced.
//  * The process's environment is built from scratch (PATH, HOSTNAME, HOME,
//    TMPDIR, the container's env, the service-account kubeconfig), as in a
//    container; nothing of the executor's own environment leaks in except
//    --pass-env.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tools/local_kubelet/image_map.h"

namespace hb::local_kubelet {

using Json = nlohmann::json;

inline constexpr const char* kDefaultPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
inline constexpr const char* kDefaultTerminationMessagePath = "/dev/termination-log";
inline constexpr const char* kPodIp = "127.0.0.1";
inline constexpr int kDefaultFileMode = 0644;  // Kubernetes' defaultMode 420
// The pod dir and its subdirectories: container users pass through, list nothing.
inline constexpr int kTraverseOnlyDirMode = 0711;
// A container's own directories and files.
inline constexpr int kPrivateDirMode = 0700;
inline constexpr int kPrivateFileMode = 0600;
// A volume several users mount: the Pod's fsGroup; setgid keeps new files in it.
inline constexpr int kSharedDirMode = 02770;
inline constexpr int kSharedFileReadBits = 0440;  // as the kubelet's fsGroup ownership adds
// A volume several users mount in a Pod without fsGroup: as Kubernetes does.
inline constexpr int kOpenEmptyDirMode = 0777;
inline constexpr int kOpenContentDirMode = 0755;
// sun_path holds 108 bytes with its NUL; a socket name needs some room too.
inline constexpr std::size_t kUnixSocketPathBytesMax = 107;
inline constexpr std::size_t kSocketNameRoomBytes = 16;

// Who owns a directory or file; -1: the executor's own user or group (no chown).
struct Owner {
  int64_t uid = -1;
  int64_t gid = -1;
  bool operator==(const Owner&) const = default;
};

struct DirToMake {
  std::string path;  // absolute, local; parents come earlier in the list
  int mode = kPrivateDirMode;
  Owner owner;
};

struct FileToWrite {
  std::string path;  // absolute, local
  std::string content;
  int mode = kDefaultFileMode;
  Owner owner;
};

// The identity a container's process takes before exec.
struct RunAs {
  std::optional<int64_t> uid;   // unset: the executor's own user, nothing dropped
  int64_t gid = -1;             // runAsGroup, else the uid (no host root group)
  std::vector<int64_t> groups;  // supplementary: fsGroup, then supplementalGroups
  bool no_new_privs = false;    // allowPrivilegeEscalation: false
  Owner owner() const { return uid ? Owner{*uid, gid} : Owner{}; }
};

struct ContainerLaunch {
  std::string name;
  std::string image;
  std::vector<std::string> argv;  // argv[0]: absolute path, or a name to find on PATH
  std::vector<std::pair<std::string, std::string>> env;  // in order, unique names
  std::string working_dir;
  std::vector<std::pair<std::string, std::string>> rewrites;  // container path -> local
  std::string termination_path;                               // local file
  std::string termination_policy;                             // "File" or "FallbackToLogsOnError"
  std::string log_path;
  RunAs run_as;
};

struct LocalLaunch {
  std::vector<ContainerLaunch> containers;  // in spec order
  std::vector<DirToMake> dirs;              // to create, parents first
  std::vector<FileToWrite> files;
  std::vector<std::string> notes;  // things ignored, for the log
};

struct PlanProblem {
  bool fatal = false;     // true: the Pod fails; false: it waits and is retried
  std::string container;  // the container it is about; "" = the whole Pod
  std::string reason;     // the container's waiting/terminated reason
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
  // Whether a host path is an executable file (program_for's sibling rule);
  // unset: none is.
  std::function<bool(const std::string& path)> executable;
  // The service account's token, when the pod gets one (see wants_service_account).
  std::optional<std::string> service_account_token;
  std::string service_account_kubeconfig;  // rendered kubeconfig text, written as a file
  // ca.crt of a projected kube-root-ca.crt ConfigMap the namespace lacks.
  std::string cluster_ca_pem;
  std::vector<std::pair<std::string, std::string>> pass_env;
};

// The service account whose token the Pod needs, or "" for none: the Pod's
// account when it automounts the token (every container gets a kubeconfig),
// or when a projected volume has a serviceAccountToken source (only the
// containers that mount it get one).
std::string wants_service_account(const Json& pod);

PlanResult plan_launch(const Json& pod, const PlanInputs& inputs);

// The identity of a container: its securityContext over the Pod's.
RunAs run_as_for(const Json& pod_security_context, const Json& container_security_context);

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
