#include "operator/config.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <map>
#include <optional>

#include "api/hb_assert.h"
#include "api/json_depth.h"
#include "api/trace_context.h"
#include "controllers/model/agent_spec.h"
#include "controllers/model/managed_namespaces.h"
#include "controllers/model/pod_settings.h"
#include "controllers/run/run_record.h"

namespace hb::operator_ {

namespace {

std::string env_name(const std::string& flag) {
  std::string out = "HB_";
  for (char c : flag)
    out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// A flag's JSON object, its nesting bounded before it is parsed.
std::optional<controllers::Json> parse_json_object(const std::string& text, std::size_t depth_max,
                                                   const char* too_deep, std::string& why) {
  if (api::json_nested_deeper_than(text, depth_max)) {
    why = too_deep;
    return std::nullopt;
  }
  controllers::Json doc = controllers::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    why = "not a JSON object";
    return std::nullopt;
  }
  return doc;
}

// A container's `resources`: {"limits"|"requests": {name: quantity string}}.
std::optional<controllers::Json> parse_resources(const std::string& text, std::string& why) {
  constexpr std::size_t kResourcesDepthMax = 3;
  std::optional<controllers::Json> parsed =
      parse_json_object(text, kResourcesDepthMax, "nested deeper than limits/requests", why);
  if (!parsed) return std::nullopt;
  controllers::Json& doc = *parsed;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() != "limits" && it.key() != "requests") {
      why = "unknown key " + it.key() + "; use limits and requests";
      return std::nullopt;
    }
    if (!it->is_object()) {
      why = it.key() + " is not an object";
      return std::nullopt;
    }
    for (auto q = it->begin(); q != it->end(); ++q) {
      if (!q->is_string() && !q->is_number()) {
        why = it.key() + "." + q.key() + " is not a quantity string such as \"256Mi\"";
        return std::nullopt;
      }
    }
  }
  return parsed;
}

bool parse_bool(const std::string& text, bool& out) {
  if (text == "true" || text == "1" || text == "yes") {
    out = true;
    return true;
  }
  if (text == "false" || text == "0" || text == "no") {
    out = false;
    return true;
  }
  return false;
}

template <typename T>
bool parse_number(const std::string& text, T& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// --pod-defaults: the fields of kPodDefaultFields, checked as an Agent's are.
std::optional<controllers::Json> parse_pod_defaults(const std::string& text, std::string& why) {
  constexpr std::size_t kPodDefaultsDepthMax = 16;  // affinity nests about 8 deep
  std::optional<controllers::Json> parsed =
      parse_json_object(text, kPodDefaultsDepthMax, "nested too deep", why);
  if (!parsed) return std::nullopt;
  controllers::Json& doc = *parsed;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    bool known = false;
    for (const char* field : controllers::kPodDefaultFields) known |= it.key() == field;
    if (!known) {
      why = "unknown key " + it.key() +
            "; a fleet default may set imagePullSecrets, "
            "nodeSelector, tolerations, affinity, priorityClassName, podLabels, podAnnotations";
      return std::nullopt;
    }
  }
  const std::vector<std::string> errors = controllers::check_pod_settings(doc, "--pod-defaults");
  if (!errors.empty()) {
    why = controllers::join_errors(errors);
    return std::nullopt;
  }
  return parsed;
}

// "a, b,,c" -> {"a", "b", "c"}.
std::vector<std::string> split_hosts(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

// TLS is the metrics listener's alone: probes and wakeups stay plain.
std::string refused_metrics_tls(const Config& c) {
  if (!c.metrics_secure) {
    return c.metrics_cert_dir.empty()
               ? std::string()
               : "--metrics-cert-dir is given but --metrics-secure=false serves plain HTTP; "
                 "drop one of them";
  }
  for (const auto& [flag, address] :
       {std::pair{"--health-address", c.health_address}, {"--wakeup-address", c.wakeup_address}}) {
    if (address == c.metrics_address) {
      return "--metrics-secure serves " + c.metrics_address + " over TLS, and " + flag +
             " is the same address (which stays plain HTTP); give each its own port, or pass "
             "--metrics-secure=false";
    }
  }
  return std::string();
}

// Why a flag's value is refused, for the error after the flag and its
// value; nullopt when the value is taken.
using Refusal = std::optional<std::string>;
using SetFlag = Refusal (*)(const std::string& value, Config& c);
using controllers::JobConfig;

template <std::string Config::*field>
Refusal assign(const std::string& value, Config& c) {
  c.*field = value;
  return std::nullopt;
}

template <std::string JobConfig::*field>
Refusal assign_job(const std::string& value, Config& c) {
  c.job.*field = value;
  return std::nullopt;
}

template <bool Config::*field>
Refusal assign_bool(const std::string& value, Config& c) {
  if (!parse_bool(value, c.*field)) return "use true or false";
  return std::nullopt;
}

template <controllers::Json JobConfig::*field,
          std::optional<controllers::Json> (*parse)(const std::string&, std::string&)>
Refusal assign_json(const std::string& value, Config& c) {
  std::string why;
  std::optional<controllers::Json> doc = parse(value, why);
  if (!doc) return why;
  c.job.*field = std::move(*doc);
  return std::nullopt;
}

bool one_of(const std::string& value, std::initializer_list<std::string_view> choices) {
  return std::find(choices.begin(), choices.end(), value) != choices.end();
}

// Whole seconds from `min` to `max`.
Refusal parse_seconds(const std::string& text, int64_t min, int64_t max,
                      std::chrono::seconds& out) {
  int64_t seconds = 0;
  if (!parse_number(text, seconds) || seconds < min || seconds > max) {
    return "use whole seconds between " + std::to_string(min) + " and " + std::to_string(max);
  }
  out = std::chrono::seconds(seconds);
  return std::nullopt;
}

// An OTLP/HTTP base URL, or "" for none.
Refusal refused_otlp_url(const std::string& value) {
  if (value.empty() || value.rfind("http://", 0) == 0 || value.rfind("https://", 0) == 0) {
    return std::nullopt;
  }
  return "use an http:// or https:// URL";
}

Refusal set_namespaces(const std::string& value, Config& c) {
  std::string why;
  auto namespaces = parse_namespace_list(value, why);
  if (!namespaces) return why;
  c.watch_namespaces = std::move(*namespaces);
  return std::nullopt;
}

// The operator's own namespace out of a cluster: its Lease and the spend
// ledger live there. Empty would read every namespace's ConfigMaps as the
// ledger, tenants' included.
Refusal set_leader_election_namespace(const std::string& value, Config& c) {
  std::string why;
  const auto names = parse_namespace_list(value, why);
  if (!names) return why;
  if (names->size() != 1) return "use one namespace name, where the operator keeps its Lease";
  c.leader_election_namespace = names->front();
  return std::nullopt;
}

Refusal set_metrics_auth(const std::string& value, Config& c) {
  if (!one_of(value, {"kubernetes", "none"})) return "use kubernetes or none";
  c.metrics_auth = value == "kubernetes";
  return std::nullopt;
}

Refusal set_metrics_cert_hosts(const std::string& value, Config& c) {
  c.metrics_cert_hosts = split_hosts(value);
  if (c.metrics_cert_hosts.empty()) return "name at least one host";
  return std::nullopt;
}

Refusal set_otel_endpoint(const std::string& value, Config& c) {
  Refusal why = refused_otlp_url(value);
  if (!why) c.otel_endpoint = value;
  return why;
}

Refusal set_runner_otel_endpoint(const std::string& value, Config& c) {
  Refusal why = refused_otlp_url(value);
  if (!why) c.job.otel_endpoint = value;
  return why;
}

Refusal set_agent_metrics_max(const std::string& value, Config& c) {
  int64_t count = 0;
  if (!parse_number(value, count) || count < 0 || count > kAgentMetricsMaxLimit) {
    return "use a whole number between 0 and 100000";
  }
  c.agent_metrics_max = static_cast<std::size_t>(count);
  return std::nullopt;
}

Refusal set_image_pull_policy(const std::string& value, Config& c) {
  if (!one_of(value, {"Always", "IfNotPresent", "Never"})) {
    return "use Always, IfNotPresent or Never";
  }
  c.job.image_pull_policy = value;
  return std::nullopt;
}

Refusal set_stall_timeout(const std::string& value, Config& c) {
  return parse_seconds(value, api::kRunStallWindowMin.count(), api::kRunStallWindowMax.count(),
                       c.job.stall_window);
}

Refusal set_clock_offset(const std::string& value, Config& c) {
  return parse_seconds(value, -kClockOffsetSecondsMax, kClockOffsetSecondsMax,
                       c.testing_clock_offset);
}

Refusal set_status_coalesce(const std::string& value, Config& c) {
  return parse_seconds(value, 0, controllers::kStatusCoalesceSecondsMax.count(), c.status_coalesce);
}

Refusal set_watch_timeout(const std::string& value, Config& c) {
  std::chrono::seconds timeout{0};
  Refusal why = parse_seconds(value, 1, 3600, timeout);
  if (!why) c.watch_timeout_seconds = static_cast<int>(timeout.count());
  return why;
}

Refusal set_context_transport(const std::string& value, Config& c) {
  if (value == "configmap") {
    c.job.context_transport = controllers::ContextTransport::kConfigMap;
  } else if (value == "annotation") {
    c.job.context_transport = controllers::ContextTransport::kAnnotation;
  } else {
    return "use configmap or annotation";
  }
  return std::nullopt;
}

Refusal set_run_retention(const std::string& value, Config& c) {
  std::string why;
  const auto retention = controllers::parse_retention(value, why);
  if (!retention) return why;
  c.run_retention = *retention;
  return std::nullopt;
}

Refusal set_workers(const std::string& value, Config& c) {
  if (!parse_number(value, c.workers) || c.workers < 1 || c.workers > kWorkersMax) {
    return "use a number between 1 and 64";
  }
  return std::nullopt;
}

Refusal set_max_concurrent_runs(const std::string& value, Config& c) {
  if (!parse_number(value, c.max_concurrent_runs) || c.max_concurrent_runs < 0 ||
      c.max_concurrent_runs > controllers::kMaxConcurrentRunsMax) {
    return "use a number between 0 (no cap) and " +
           std::to_string(controllers::kMaxConcurrentRunsMax);
  }
  return std::nullopt;
}

Refusal set_qps(const std::string& value, Config& c) {
  if (!parse_number(value, c.qps) || c.qps < 0) return "use a non-negative number";
  return std::nullopt;
}

Refusal set_burst(const std::string& value, Config& c) {
  if (!parse_number(value, c.burst) || c.burst < 1) return "use a positive number";
  return std::nullopt;
}

Refusal set_log_level(const std::string& value, Config& c) {
  if (!one_of(value, {"trace", "debug", "info", "warn", "error"})) {
    return "use trace, debug, info, warn or error";
  }
  c.log_level = value;
  return std::nullopt;
}

Refusal set_log_format(const std::string& value, Config& c) {
  if (!one_of(value, {"json", "text"})) return "use json or text";
  c.log_format = value;
  return std::nullopt;
}

struct Flag {
  const char* name;
  const char* help;
  SetFlag set;
};

const Flag kFlags[] = {
    {"kubeconfig", "path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)",
     assign<&Config::kubeconfig>},
    {"context", "kubeconfig context", assign<&Config::context>},
    {"namespace", "namespaces to watch, comma-separated (default: all namespaces)", set_namespaces},
    {"leader-elect", "true|false: Lease-based leader election (default true)",
     assign_bool<&Config::leader_elect>},
    {"leader-election-namespace",
     "namespace of the leader Lease (default: $POD_NAMESPACE or default)",
     set_leader_election_namespace},
    {"leader-election-id", "name of the leader Lease", assign<&Config::leader_election_id>},
    {"metrics-address", "host:port for /metrics", assign<&Config::metrics_address>},
    {"metrics-auth",
     "kubernetes|none: /metrics asks a bearer token the API server authenticates "
     "(TokenReview) and authorises for get on the non-resource URL /metrics "
     "(SubjectAccessReview) (default kubernetes); none serves anyone",
     set_metrics_auth},
    {"metrics-secure",
     "true|false: serve /metrics over HTTPS only (TLS 1.2 at least) (default true with "
     "--metrics-auth=kubernetes, else false); false serves plain HTTP",
     assign_bool<&Config::metrics_secure>},
    {"metrics-cert-dir",
     "directory holding tls.crt and tls.key (a mounted kubernetes.io/tls Secret, e.g. from "
     "cert-manager), read again when they change (default: a self-signed ECDSA P-256 "
     "certificate made in memory at start, valid 1 year)",
     assign<&Config::metrics_cert_dir>},
    {"metrics-cert-hosts",
     "comma-separated DNS names or IPs of the self-signed certificate's subjectAltNames, the "
     "first of at most 64 characters also its CN (default localhost)",
     set_metrics_cert_hosts},
    {"health-address", "host:port for /healthz and /readyz", assign<&Config::health_address>},
    {"wakeup-address", "host:port for POST .../agents/{name}/wakeup (empty: off)",
     assign<&Config::wakeup_address>},
    {"wakeup-token-secret",
     "opt-in: a Secret in the leader-election namespace whose key `token` wakes the Agents "
     "of every namespace (default none: only each namespace's own Secret heartbeat-wakeup)",
     assign<&Config::wakeup_token_secret>},
    {"runner-image", "default heartbeat-runner image", assign_job<&JobConfig::default_image>},
    {"image-pull-policy", "runner imagePullPolicy (default IfNotPresent)", set_image_pull_policy},
    {"tools-image",
     "default image of the tools container, where agent-chosen commands run (default: the "
     "runner image)",
     assign_job<&JobConfig::tools_image>},
    {"otel-endpoint",
     "OTLP/HTTP endpoint the operator sends its own span of each heartbeat to (scheduling to "
     "Job creation, the parent of the runner's trace), as OTEL_EXPORTER_OTLP_ENDPOINT (default "
     "none: the OTEL_EXPORTER_OTLP_* variables, else no spans)",
     set_otel_endpoint},
    {"runner-otel-endpoint",
     "OTLP/HTTP endpoint each runner sends its heartbeat's trace to, as "
     "OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://otel-collector.observability:4318; default "
     "none: no traces); an Agent's spec.runtime.env of that name wins",
     set_runner_otel_endpoint},
    {"runner-otel-headers-secret",
     "a Secret in each Agent's namespace whose key `headers` becomes the runner's "
     "OTEL_EXPORTER_OTLP_HEADERS (k=v,k2=v2; optional, needs --runner-otel-endpoint)",
     assign_job<&JobConfig::otel_headers_secret>},
    {"runner-resources",
     "resources of the runner container as JSON, unless an Agent sets spec.runtime.resources, "
     "e.g. {\"limits\":{\"memory\":\"128Mi\"}}",
     assign_json<&JobConfig::runner_resources, parse_resources>},
    {"tools-resources",
     "resources of the tools container as JSON, e.g. {\"limits\":{\"memory\":\"256Mi\"}}",
     assign_json<&JobConfig::tools_resources, parse_resources>},
    {"pod-defaults",
     "fleet-wide heartbeat Pod settings as JSON (imagePullSecrets, nodeSelector, tolerations, "
     "affinity, priorityClassName, podLabels, podAnnotations); an Agent's spec.runtime "
     "overrides each",
     assign_json<&JobConfig::pod_defaults, parse_pod_defaults>},
    {"agent-metrics-max",
     "export per-agent metrics (labels namespace, agent) only while there are at most this "
     "many Agents (default 1000; 0: never)",
     set_agent_metrics_max},
    {"stall-timeout", "seconds without a beat before a run is failed as Stalled (default 300)",
     set_stall_timeout},
    {"context-transport",
     "annotation|configmap: how the context document reaches the Job (default annotation, "
     "a ConfigMap above 128 KiB)",
     set_context_transport},
    {"routine-events", "true|false: also record Events for routine decisions",
     assign_bool<&Config::routine_events>},
    {"status-coalesce-seconds",
     "seconds an Agent status that only says a run started may wait, so a short heartbeat "
     "writes start and end at once (0..300, default 10; 0: at once)",
     set_status_coalesce},
    {"run-retention",
     "how long a finished run whose Agent was deleted is kept, as a duration (720h) or whole "
     "days (30d); the operator deletes it then (default 30d; 0: kept until someone deletes it)",
     set_run_retention},
    {"workers", "concurrent reconciles (default 4)", set_workers},
    {"max-concurrent-runs",
     "at most this many heartbeats Running at once across every Agent; the rest wait Queued "
     "(reason ConcurrencyLimited) and start in the order they were asked for (default 0: no cap)",
     set_max_concurrent_runs},
    {"watch-timeout-seconds",
     "server-side timeout of each watch before it is reopened (default 290)", set_watch_timeout},
    {"qps", "client requests per second to the API server (default 20)", set_qps},
    {"burst", "client burst (default 30)", set_burst},
    {"log-level", "trace|debug|info|warn|error", set_log_level},
    {"log-format", "json|text", set_log_format},
};

// Recognized, never listed in --help: for tests only.
const Flag kHiddenFlags[] = {
    // Shifts the renewTime this replica writes (clock skew).
    {"testing-clock-offset-seconds", "", set_clock_offset},
};

const Flag* find_flag(const std::string& name) {
  for (const Flag& f : kFlags) {
    if (name == f.name) return &f;
  }
  for (const Flag& f : kHiddenFlags) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

struct FlagArg {
  std::string name;
  std::string value;
};

// The flag at args[i] (--name=value, --name value, or a bare boolean --name),
// moving i past a value it takes; nullopt with `error` when it is none.
std::optional<FlagArg> next_flag_arg(const std::vector<std::string>& args, std::size_t& i,
                                     std::string& error) {
  const std::string& arg = args[i];
  if (arg.rfind("--", 0) != 0) {
    error = "unexpected argument \"" + arg + "\"";
    return std::nullopt;
  }
  FlagArg flag{arg.substr(2), ""};
  const std::size_t eq = flag.name.find('=');
  if (eq != std::string::npos) {
    flag.value = flag.name.substr(eq + 1);
    flag.name = flag.name.substr(0, eq);
  } else if (one_of(flag.name, {"leader-elect", "routine-events", "metrics-secure"})) {
    flag.value = "true";
  } else if (i + 1 < args.size()) {
    flag.value = args[++i];
  } else {
    error = "--" + flag.name + ": needs a value";
    return std::nullopt;
  }
  if (!find_flag(flag.name)) {
    error = "unknown flag --" + flag.name + " (see --help)";
    return std::nullopt;
  }
  return flag;
}

// The environment's values of the listed flags (hidden ones come from the
// command line only).
std::map<std::string, std::string> environment_values(const EnvLookup& env) {
  std::map<std::string, std::string> values;
  for (const Flag& f : kFlags) {
    if (auto v = env(env_name(f.name))) values[f.name] = *v;
  }
  return values;
}

// The command line's values over `values`, in order; it stops at --help or
// at the first argument it refuses (result.help or result.error).
ConfigResult read_command_line(const std::vector<std::string>& args,
                               std::map<std::string, std::string>& values) {
  ConfigResult stop;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      stop.help = true;
      return stop;
    }
    std::optional<FlagArg> flag = next_flag_arg(args, i, stop.error);
    if (!flag) return stop;
    values[flag->name] = flag->value;
  }
  return stop;
}

// The defaults, with what the Pod's environment says besides flags.
Config environment_defaults(const EnvLookup& env) {
  Config c;
  if (auto ns = env("POD_NAMESPACE"); ns && !ns->empty()) {
    c.leader_election_namespace = *ns;
    c.own_namespace = *ns;
  }
  // The GenAI conventions' opt-in: the operator's metrics and every runner's.
  if (auto opt_in = env(api::kEnvSemconvOptIn); opt_in && !opt_in->empty()) {
    c.job.semconv_opt_in = *opt_in;
  }
  return c;
}

// Each value onto `c` in the order of the flags' names; the first refusal's
// error, "" when every value is taken.
std::string apply_flags(const std::map<std::string, std::string>& values, Config& c) {
  for (const auto& [name, value] : values) {
    const Flag* flag = find_flag(name);
    HB_ASSERT_MSG(flag != nullptr, "only known flags are read into the values");
    if (Refusal why = flag->set(value, c)) return "--" + name + " \"" + value + "\": " + *why;
  }
  return std::string();
}

// Settings refused together rather than one flag at a time; "" when none.
std::string refused_combination(const Config& c) {
  if (c.metrics_address.empty() || c.health_address.empty()) {
    return "--metrics-address and --health-address may not be empty";
  }
  if (std::string refused = refused_metrics_tls(c); !refused.empty()) return refused;
  return refused_watch_namespaces(c);
}

}  // namespace

std::optional<std::vector<std::string>> parse_namespace_list(std::string_view text,
                                                             std::string& error) {
  constexpr std::size_t kNamespaceLengthMax = 63;
  std::vector<std::string> out;
  while (true) {
    const std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) {
      auto alnum = [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'); };
      bool valid = item.size() <= kNamespaceLengthMax && alnum(item.front()) && alnum(item.back());
      for (char ch : item) valid = valid && (alnum(ch) || ch == '-');
      if (!valid) {
        error = "\"" + std::string(item) +
                "\" is not a namespace name (lowercase letters, digits and '-', at most 63, "
                "starting and ending with a letter or digit); separate several with commas";
        return std::nullopt;
      }
      if (std::find(out.begin(), out.end(), item) == out.end()) out.emplace_back(item);
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

std::string usage() {
  std::string out = "usage: heartbeat-operator [--flag=value ...]\n";
  for (const Flag& f : kFlags) {
    out +=
        "  --" + std::string(f.name) + "  (env " + env_name(f.name) + ")\n      " + f.help + "\n";
  }
  return out;
}

ConfigResult parse_config(const std::vector<std::string>& args, const EnvLookup& env) {
  std::map<std::string, std::string> values = environment_values(env);
  ConfigResult result = read_command_line(args, values);
  if (result.help || !result.error.empty()) return result;
  Config c = environment_defaults(env);
  result.error = apply_flags(values, c);
  if (!result.error.empty()) return result;
  // HTTPS follows --metrics-auth unless --metrics-secure says otherwise.
  if (!values.count("metrics-secure")) c.metrics_secure = c.metrics_auth;
  result.error = refused_combination(c);
  if (result.error.empty()) result.config = std::move(c);
  return result;
}

std::string refused_watch_namespaces(const Config& config) {
  for (const std::string& ns : config.watch_namespaces) {
    const std::string why = controllers::namespace_refusal(ns, config.own_namespace);
    if (!why.empty()) {
      return "--namespace \"" + ns + "\": " + why + "; list only the namespaces of your Agents";
    }
  }
  return std::string();
}

}  // namespace hb::operator_
