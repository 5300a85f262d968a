// A finished run as the audit record: which Agent incarnation it belongs to,
// what it was charged at, the policies that selected its agent, the one
// structured audit line the operator logs for it, and when a run whose Agent
// is gone is deleted (retention). Pure.
//
// Runs carry no ownerReference to their Agent (the garbage collector would
// delete the audit record with it); the annotation kAnnotationAgentUid names
// the Agent incarnation that made or adopted the run. A run of an earlier
// incarnation of a same-named Agent is never adopted or counted by the new one.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/model/agent_spec.h"
#include "controllers/model/json_util.h"
#include "controllers/model/run_cost.h"

namespace hb::controllers {

// The uid of the Agent that made or adopted the run.
inline constexpr const char* kAnnotationAgentUid = "heartbeat.dev/agent-uid";
// The HeartbeatPolicies that selected the agent when the run was made (or
// adopted), comma-separated, sorted; "" when none did.
inline constexpr const char* kAnnotationPolicies = "heartbeat.dev/policies";
// The audit line's first member and its value.
inline constexpr const char* kAuditKey = "audit";
inline constexpr const char* kAuditRunValue = "heartbeat_run";

// --run-retention: how long a finished run whose Agent is gone is kept. Zero
// keeps such runs until someone deletes them.
inline constexpr std::chrono::seconds kRunRetentionDefault = std::chrono::hours(24 * 30);
// Ten years: far from any overflow of a time point.
inline constexpr std::chrono::seconds kRunRetentionMax = std::chrono::hours(24 * 3650);

// The run belongs to the Agent with this uid: its annotation names it, or
// (a run made before the annotation) its ownerReference does.
bool run_of_agent(const Json& run, std::string_view agent_uid);
// The run names another Agent incarnation (annotation or ownerReference):
// an orphan of a deleted same-named Agent. A run naming none (made with
// kubectl, not adopted yet) is not.
bool run_of_other_agent(const Json& run, std::string_view agent_uid);

// "a,b" for the policy names (sorted as given).
std::string policies_annotation(const std::vector<std::string>& names);
// The names the annotation lists; nullopt when the run has no such annotation.
std::optional<std::vector<std::string>> stamped_policies(const Json& run);

// The most policy names a run is charged under from its stamp: a namespace
// has a handful of teams, and every name is a member of the agent's ledger
// record, which one ConfigMap (1 MiB) must hold.
inline constexpr std::size_t kAdmittingPoliciesMax = 32;

// The run's own Job: controlled by the run and, once the run's status
// records a jobUID, that Job. Only its template's stamps are believed.
bool job_of_run(const Json& job, const Json& run);

// The policies that admitted `run`, as the operator stamped them at start.
// The run's annotation is the namespace editor's to change, so the trusted
// copy is the one on its Job's pod template (kAnnotationPolicies there;
// Kubernetes does not let a Job's template change), read from a Job that
// is the run's own: controlled by the run and, once the run's status
// records a jobUID, that Job. Without one (a run that never had a Job, a
// Job deleted before the charge) the annotation is believed only for names
// `policy_exists` knows in the run's namespace. At most
// kAdmittingPoliciesMax names, sorted, no repeats. Pure.
std::vector<std::string> admitting_policies(
    const Json* job, const Json& run,
    const std::function<bool(const std::string& policy)>& policy_exists);

// status.charge: the Agent's spec.model and the prices charged when the
// cost was computed (every one, the cache prices resolved: pricing.h); `source`: agent | policy |
// both (pricing.h), `policy`: "ns/name" of the policy whose price was charged (omitted when empty).
Json charge_record(const std::string& provider, const std::string& model, const Pricing& pricing,
                   const std::string& source, const std::string& policy);

// The cache counts' names in status.usage and status.reportedUsage.
inline constexpr const char* kCacheReadInputTokens = "cacheReadInputTokens";
inline constexpr const char* kCacheWriteInputTokens = "cacheWriteInputTokens";
// Writes the cache counts of `usage` above 0 into `out`.
void put_cache_counts(Json& out, const UsageCounts& usage);

// The audit line for a finished run (the object as written, status
// included): one JSON object on one line; every string escaped by the
// encoder, invalid UTF-8 replaced. Never a message, output or secret.
std::string audit_line(const Json& run);

// Which runs whose Agent is gone are due for deletion, and when the next one
// is. A run is kept while not final, not costRecorded, without finishedAt,
// or finished less than `retention` ago; retention zero keeps all.
struct RetentionPlan {
  std::vector<std::string> due;      // run names to delete now
  std::optional<TimePoint> next_at;  // when the next kept run falls due
};
RetentionPlan plan_retention(const std::vector<Json>& orphans, std::chrono::seconds retention,
                             TimePoint now);

// Parses --run-retention: a duration like 720h or 90m, or whole days like
// 30d; "0" keeps forever. nullopt and `why` on a bad value.
std::optional<std::chrono::seconds> parse_retention(std::string_view text, std::string& why);

}  // namespace hb::controllers
