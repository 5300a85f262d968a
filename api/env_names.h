// Environment variables the operator sets on the runner's container and the
// runner reads. One name each; every one starts with HEARTBEAT_, which the
// operator reserves (a user's runtime.env may not set them).
#pragma once

namespace hb::api {

inline constexpr const char* kEnvReservedPrefix = "HEARTBEAT_";
// The provider API key (a secretKeyRef); never logged, scrubbed before tools run.
inline constexpr const char* kEnvApiKey = "HEARTBEAT_API_KEY";
inline constexpr const char* kEnvContextPath = "HEARTBEAT_CONTEXT_PATH";
inline constexpr const char* kEnvTerminationPath = "HEARTBEAT_TERMINATION_PATH";
inline constexpr const char* kEnvRunName = "HEARTBEAT_RUN_NAME";
inline constexpr const char* kEnvRunUid = "HEARTBEAT_RUN_UID";
inline constexpr const char* kEnvAgentName = "HEARTBEAT_AGENT_NAME";
inline constexpr const char* kEnvNamespace = "HEARTBEAT_NAMESPACE";
inline constexpr const char* kEnvInvocationSource = "HEARTBEAT_INVOCATION_SOURCE";

}  // namespace hb::api
