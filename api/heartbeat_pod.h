// The heartbeat Pod's contract between the operator (which builds the Pod),
// the runner (trusted: key, token, result) and the tools server (untrusted:
// runs the commands the model chooses). One definition, read by all three.
// Trust boundaries: docs/security.md.
#pragma once

#include <cstdint>

namespace hb::api {

// Containers of a heartbeat Pod.
inline constexpr const char* kRunnerContainerName = "runner";
inline constexpr const char* kToolsContainerName = "tools";

// Distinct users: nothing the tools container runs may read the runner's
// files or /proc entries. The Pod's fsGroup is the runner's group.
inline constexpr int64_t kRunnerUserId = 65532;
inline constexpr int64_t kToolsUserId = 65533;

// The tools server listens on a Unix socket in an emptyDir that only these
// two containers mount; the runner finds it through kEnvToolsSocket.
inline constexpr const char* kToolsSocketVolume = "tools-socket";
inline constexpr const char* kToolsSocketDir = "/run/heartbeat-tools";
inline constexpr const char* kToolsSocketFile = "tools.sock";
inline constexpr const char* kEnvToolsSocket = "HEARTBEAT_TOOLS_SOCKET";
// The tools container's writable places (emptyDirs; the root filesystem is read-only).
inline constexpr const char* kToolsWorkspaceVolume = "workspace";
inline constexpr const char* kToolsWorkspaceDir = "/workspace";
inline constexpr const char* kToolsTmpVolume = "tools-tmp";
// The tools server binary in the runner image; a custom tools image copies it.
inline constexpr const char* kToolsServerPath = "/usr/local/bin/heartbeat-tools";

// Where the runner writes its result for the kubelet to read (the runner
// container's terminationMessagePath), and the archival memory's volume.
inline constexpr const char* kTerminationPath = "/dev/termination-log";
inline constexpr const char* kArchivalVolume = "archival";

// The ServiceAccount token is projected into the runner container only (the
// Pod sets automountServiceAccountToken: false), at the in-cluster path.
inline constexpr const char* kServiceAccountVolume = "kube-api-access";
inline constexpr const char* kServiceAccountMountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";
inline constexpr int64_t kServiceAccountTokenExpirationSeconds = 3607;
inline constexpr const char* kRootCaConfigMap = "kube-root-ca.crt";

// Input tokens one model call can carry at most (the largest context windows
// offered today are about a million tokens). A report above
// calls x this is out of bounds and charged the bound.
inline constexpr int64_t kInputTokensPerModelCallMax = 2'000'000;
// Model calls one heartbeat may make beyond the type's iterations: none.
// (Retries of a failed call report no tokens.)

}  // namespace hb::api
