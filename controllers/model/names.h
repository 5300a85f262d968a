// Names, labels and annotations the operator puts on the objects it creates.
// Every derived name fits the limit of its kind: a name that would be too
// long is shortened with a hash of the full name, so it stays unique.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "api/agent_objects.h"

namespace hb::controllers {

inline constexpr std::string_view kApiVersion = "heartbeat.dev/v1alpha1";
inline constexpr std::string_view kAgentKind = "Agent";
inline constexpr std::string_view kRunKind = "HeartbeatRun";

inline constexpr const char* kLabelAgent = api::kLabelAgent;
inline constexpr const char* kLabelRun = "heartbeat.dev/run";
// On a run that ended any way but Succeeded (run_view.h phase_is_labelled).
inline constexpr const char* kLabelPhase = "heartbeat.dev/phase";
inline constexpr const char* kLabelManagedBy = api::kLabelManagedBy;
inline constexpr const char* kManagedByValue = api::kManagedByValue;
inline constexpr const char* kLabelJobName = "job-name";  // set on Pods by the Job controller

// `kubectl annotate hba NAME heartbeat.dev/invoke=REASON` asks for a manual run.
inline constexpr const char* kAnnotationInvoke = "heartbeat.dev/invoke";
// The unshortened names on Jobs and Pods (labels may carry a hashed form).
inline constexpr const char* kAnnotationAgentName = "heartbeat.dev/agent-name";
inline constexpr const char* kAnnotationRunName = "heartbeat.dev/run-name";
// The context document, when it rides on the Job's pod template.
inline constexpr const char* kAnnotationContext = "heartbeat.dev/context";
// On the Job: when the operator started the run, by its own clock. The run's
// deadline and stall clocks count from it; the Job's creationTimestamp is the
// API server's clock, which may differ from the operator's.
inline constexpr const char* kAnnotationStartedAt = "heartbeat.dev/started-at";
// On a run whose Job was made before it: its trace id (the run's uid does
// not exist yet when the Job is built); other runs' trace id is their uid.
inline constexpr const char* kAnnotationTraceId = "heartbeat.dev/trace-id";

inline constexpr const char* kContextKey = "context.json";
inline constexpr const char* kContextMountDir = "/etc/heartbeat";
// Where an agent's archival PersistentVolumeClaim is mounted, and its SQLite file.
inline constexpr const char* kArchivalMountDir = "/var/lib/heartbeat/archival";
inline constexpr const char* kArchivalFile = "archival.sqlite3";
inline constexpr const char* kMemoryBlocksKey = api::kMemoryBlocksKey;

inline constexpr std::size_t kLabelValueCharsMax = 63;   // DNS-1123 label
inline constexpr std::size_t kObjectNameCharsMax = 253;  // DNS-1123 subdomain
using api::kNameHashChars;

// "<base>-<suffix>", shortened to max_chars as "<prefix>-<hash>-<suffix>".
std::string derived_name(std::string_view base, std::string_view suffix,
                         std::size_t max_chars = kObjectNameCharsMax);

// A valid label value / Job name for any run name (names may hold '.').
using api::label_safe_name;

std::string job_name_for_run(std::string_view run_name);
// The Job controller names a Job's Pods `generateName: <job>-`, and the API
// server keeps at most this much of a generateName before its 5 random
// characters (Kubernetes' maxGeneratedNameLength, 63 - 5).
inline constexpr std::size_t kGeneratedNameBaseCharsMax = 58;
// What every Pod of the Job starts its name with.
std::string pod_name_prefix_for_job(std::string_view job_name);
std::string context_config_map_name(std::string_view run_name);
std::string lease_name_for_agent(std::string_view agent_name);
std::string memory_config_map_name(std::string_view agent_name);
std::string service_account_name(std::string_view agent_name);  // also Role and RoleBinding

// 8 lowercase hex digits of FNV-1a 32.
using api::short_hash;
// 16 hex chars (FNV-1a 64): for names where distinct inputs must stay
// distinct among many (idempotency keys), not only readable.
std::string long_hash(std::string_view text);
inline constexpr const char* kAnnotationIdempotencyKey = "heartbeat.dev/idempotency-key";
// When the wakeup endpoint was asked for a callback run, in microseconds:
// creationTimestamp has whole seconds only, and coalescing must keep the
// first of two wakeups that came in the same second.
inline constexpr const char* kAnnotationRequestedAt = "heartbeat.dev/requested-at";

}  // namespace hb::controllers
