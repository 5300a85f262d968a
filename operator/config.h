// The manager's configuration: flags, each with an environment fallback
// (HB_ + the flag in upper case, dashes as underscores, e.g.
// --runner-image / HB_RUNNER_IMAGE). Parsing is pure; errors name the flag.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "controllers/agent/agent_decision.h"
#include "controllers/pod/job_builder.h"
#include "controllers/policy/concurrency.h"
#include "controllers/run/run_record.h"
#include "controllers/runtime/agent_metrics.h"

namespace hb::operator_ {

using namespace std::chrono_literals;

inline constexpr int kWorkersDefault = 4;
inline constexpr int kWorkersMax = 64;
// Leader election (client-go defaults): the operator's own leader Lease lasts
// 15 s, renew deadline 10 s, retry 2 s. (A run's stall window is another
// Lease: api::kRunStallWindowDefault.)
inline constexpr std::chrono::seconds kLeaderLeaseDurationDefault = 15s;
inline constexpr std::chrono::seconds kRenewDeadlineDefault = 10s;
inline constexpr std::chrono::seconds kRetryPeriodDefault = 2s;
// One Lease read or write; two of them fit well inside the renew deadline.
inline constexpr std::chrono::seconds kLeaseCallTimeout = 3s;
inline constexpr int64_t kClockOffsetSecondsMax = 3600;
// The start gives up when its lists bring nothing for this long (not when
// they take this long: a fleet's first lists can take minutes).
inline constexpr std::chrono::seconds kCacheSyncStall = 120s;

inline constexpr int64_t kAgentMetricsMaxLimit = 100000;

struct Config {
  // Tests only (hidden flag): added to the wall clock this replica writes
  // into the leader Lease, to play a node whose clock is off.
  std::chrono::seconds testing_clock_offset{0};
  std::string kubeconfig;  // "" = $KUBECONFIG, ~/.kube/config, then in-cluster
  std::string context;
  std::vector<std::string> watch_namespaces;  // empty = all namespaces
  // The namespace the operator runs in ($POD_NAMESPACE; in-cluster without
  // it, the ServiceAccount's, filled in at start): never managed, with the
  // system namespaces (controllers/model/managed_namespaces.h). "" = unknown.
  std::string own_namespace;
  bool leader_elect = true;
  std::string leader_election_namespace = "default";
  std::string leader_election_id = "heartbeat-operator-leader";
  std::string metrics_address = "0.0.0.0:8080";
  bool metrics_auth = true;  // --metrics-auth=kubernetes (TokenReview + SubjectAccessReview)
  // HTTPS on the metrics address (default: on with --metrics-auth=kubernetes,
  // so a scraper's token never crosses the network in clear).
  bool metrics_secure = true;
  std::string metrics_cert_dir;  // tls.crt and tls.key; "" = self-signed at start
  // Names of the self-signed certificate (all SANs; the first of at most 64
  // bytes also its CN).
  std::vector<std::string> metrics_cert_hosts{"localhost"};
  std::string health_address = "0.0.0.0:8081";
  std::string wakeup_address = "0.0.0.0:8082";  // "" disables the wakeup endpoint
  // Opt-in cluster-wide wakeup token: a Secret in the operator's namespace,
  // key "token" ("" = none; each namespace's heartbeat-wakeup Secret only).
  std::string wakeup_token_secret;
  std::string log_level = "info";
  std::string log_format = "json";  // json | text
  int workers = kWorkersDefault;
  int64_t max_concurrent_runs = 0;  // 0: no cap (controllers/policy/concurrency.h)
  double qps = 20;
  int burst = 30;
  bool routine_events = false;
  std::chrono::seconds status_coalesce = controllers::kStatusCoalesceSecondsDefault;
  // --run-retention: finished runs whose Agent is gone are deleted this long
  // after they finished (0: kept).
  std::chrono::seconds run_retention = controllers::kRunRetentionDefault;
  // Per-agent metrics only while the Agents are at most this many (0: off).
  std::size_t agent_metrics_max = controllers::kAgentMetricsMaxDefault;
  int watch_timeout_seconds = 290;  // see controllers::CacheOptions
  // --otel-endpoint: where the operator's own spans go (OTLP/HTTP base URL,
  // "/v1/traces" appended); "" = the standard OTEL_EXPORTER_OTLP_* variables
  // decide, and without them no spans (operator/tracing.h).
  std::string otel_endpoint;
  controllers::JobConfig job;
};

struct ConfigResult {
  std::optional<Config> config;
  std::string error;  // names the flag
  bool help = false;
};

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// "team-a,team-b" -> {"team-a", "team-b"}: trimmed, duplicates dropped, order
// kept; "" -> {} (all namespaces). Each must be a DNS-1123 label, else
// nullopt with `error` naming the bad entry.
std::optional<std::vector<std::string>> parse_namespace_list(std::string_view text,
                                                             std::string& error);

ConfigResult parse_config(const std::vector<std::string>& args, const EnvLookup& env);
// "" when every --namespace entry may be managed; else the start error,
// naming the flag and the namespace.
std::string refused_watch_namespaces(const Config& config);
std::string usage();

}  // namespace hb::operator_
