#include "operator/config.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "api/json_depth.h"
#include "api/trace_context.h"
#include "controllers/model/agent_spec.h"
#include "controllers/model/managed_namespaces.h"
#include "controllers/model/pod_settings.h"
#include "controllers/run/run_record.h"

namespace hb::operator_ {

namespace {

struct Flag {
  const char* name;
  const char* help;
};

const Flag kFlags[] = {
    {"kubeconfig", "path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)"},
    {"context", "kubeconfig context"},
    {"namespace", "namespaces to watch, comma-separated (default: all namespaces)"},
    {"leader-elect", "true|false: Lease-based leader election (default true)"},
    {"leader-election-namespace",
     "namespace of the leader Lease (default: $POD_NAMESPACE or default)"},
    {"leader-election-id", "name of the leader Lease"},
    {"metrics-address", "host:port for /metrics"},
    {"metrics-auth",
     "kubernetes|none: /metrics asks a bearer token the API server authenticates "
     "(TokenReview) and authorises for get on the non-resource URL /metrics "
     "(SubjectAccessReview) (default kubernetes); none serves anyone"},
    {"metrics-secure",
     "true|false: serve /metrics over HTTPS only (TLS 1.2 at least) (default true with "
     "--metrics-auth=kubernetes, else false); false serves plain HTTP"},
    {"metrics-cert-dir",
     "directory holding tls.crt and tls.key (a mounted kubernetes.io/tls Secret, e.g. from "
     "cert-manager), read again when they change (default: a self-signed ECDSA P-256 "
     "certificate made in memory at start, valid 1 year)"},
    {"metrics-cert-hosts",
     "comma-separated DNS names or IPs of the self-signed certificate's subjectAltNames, the "
     "first of at most 64 characters also its CN (default localhost)"},
    {"health-address", "host:port for /healthz and /readyz"},
    {"wakeup-address", "host:port for POST .../agents/{name}/wakeup (empty: off)"},
    {"wakeup-token-secret",
     "opt-in: a Secret in the leader-election namespace whose key `token` wakes the Agents "
     "of every namespace (default none: only each namespace's own Secret heartbeat-wakeup)"},
    {"runner-image", "default heartbeat-runner image"},
    {"image-pull-policy", "runner imagePullPolicy (default IfNotPresent)"},
    {"tools-image",
     "default image of the tools container, where agent-chosen commands run (default: the "
     "runner image)"},
    {"otel-endpoint",
     "OTLP/HTTP endpoint the operator sends its own span of each heartbeat to (scheduling to "
     "Job creation, the parent of the runner's trace), as OTEL_EXPORTER_OTLP_ENDPOINT (default "
     "none: the OTEL_EXPORTER_OTLP_* variables, else no spans)"},
    {"runner-otel-endpoint",
     "OTLP/HTTP endpoint each runner sends its heartbeat's trace to, as "
     "OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://otel-collector.observability:4318; default "
     "none: no traces); an Agent's spec.runtime.env of that name wins"},
    {"runner-otel-headers-secret",
     "a Secret in each Agent's namespace whose key `headers` becomes the runner's "
     "OTEL_EXPORTER_OTLP_HEADERS (k=v,k2=v2; optional, needs --runner-otel-endpoint)"},
    {"runner-resources",
     "resources of the runner container as JSON, unless an Agent sets spec.runtime.resources, "
     "e.g. {\"limits\":{\"memory\":\"128Mi\"}}"},
    {"tools-resources",
     "resources of the tools container as JSON, e.g. {\"limits\":{\"memory\":\"256Mi\"}}"},
    {"pod-defaults",
     "fleet-wide heartbeat Pod settings as JSON (imagePullSecrets, nodeSelector, tolerations, "
     "affinity, priorityClassName, podLabels, podAnnotations); an Agent's spec.runtime "
     "overrides each"},
    {"agent-metrics-max",
     "export per-agent metrics (labels namespace, agent) only while there are at most this "
     "many Agents (default 1000; 0: never)"},
    {"stall-timeout", "seconds without a beat before a run is failed as Stalled (default 300)"},
    {"context-transport",
     "annotation|configmap: how the context document reaches the Job (default annotation, "
     "a ConfigMap above 128 KiB)"},
    {"routine-events", "true|false: also record Events for routine decisions"},
    {"status-coalesce-seconds",
     "seconds an Agent status that only says a run started may wait, so a short heartbeat "
     "writes start and end at once (0..300, default 10; 0: at once)"},
    {"run-retention",
     "how long a finished run whose Agent was deleted is kept, as a duration (720h) or whole "
     "days (30d); the operator deletes it then (default 30d; 0: kept until someone deletes it)"},
    {"workers", "concurrent reconciles (default 4)"},
    {"max-concurrent-runs",
     "at most this many heartbeats Running at once across every Agent; the rest wait Queued "
     "(reason ConcurrencyLimited) and start in the order they were asked for (default 0: no cap)"},
    {"watch-timeout-seconds",
     "server-side timeout of each watch before it is reopened (default 290)"},
    {"qps", "client requests per second to the API server (default 20)"},
    {"burst", "client burst (default 30)"},
    {"log-level", "trace|debug|info|warn|error"},
    {"log-format", "json|text"},
};

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

// Recognized, never listed in --help: for tests only.
constexpr const char* kHiddenFlags[] = {
    "testing-clock-offset-seconds",  // shifts the renewTime this replica writes (clock skew)
};

std::string usage() {
  std::string out = "usage: heartbeat-operator [--flag=value ...]\n";
  for (const Flag& f : kFlags) {
    out +=
        "  --" + std::string(f.name) + "  (env " + env_name(f.name) + ")\n      " + f.help + "\n";
  }
  return out;
}

ConfigResult parse_config(const std::vector<std::string>& args, const EnvLookup& env) {
  ConfigResult result;
  std::map<std::string, std::string> values;
  for (const Flag& f : kFlags) {
    if (auto v = env(env_name(f.name))) values[f.name] = *v;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      result.help = true;
      return result;
    }
    if (arg.rfind("--", 0) != 0) {
      result.error = "unexpected argument \"" + arg + "\"";
      return result;
    }
    std::string name = arg.substr(2), value;
    const size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (name == "leader-elect" || name == "routine-events" || name == "metrics-secure") {
      value = "true";
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      result.error = "--" + name + ": needs a value";
      return result;
    }
    bool known = false;
    for (const Flag& f : kFlags) known = known || name == f.name;
    for (const char* hidden : kHiddenFlags) known = known || name == hidden;
    if (!known) {
      result.error = "unknown flag --" + name + " (see --help)";
      return result;
    }
    values[name] = value;
  }

  Config c;
  if (auto ns = env("POD_NAMESPACE"); ns && !ns->empty()) {
    c.leader_election_namespace = *ns;
    c.own_namespace = *ns;
  }
  // The GenAI conventions' opt-in: the operator's metrics and every runner's.
  if (auto opt_in = env(api::kEnvSemconvOptIn); opt_in && !opt_in->empty()) {
    c.job.semconv_opt_in = *opt_in;
  }
  auto fail = [&](const std::string& flag, const std::string& why) {
    result.error = "--" + flag + " \"" + values[flag] + "\": " + why;
    return result;
  };
  for (const auto& [name, value] : values) {
    if (name == "kubeconfig")
      c.kubeconfig = value;
    else if (name == "context")
      c.context = value;
    else if (name == "namespace") {
      std::string why;
      auto namespaces = parse_namespace_list(value, why);
      if (!namespaces) return fail(name, why);
      c.watch_namespaces = std::move(*namespaces);
    } else if (name == "leader-elect" || name == "routine-events") {
      bool b = false;
      if (!parse_bool(value, b)) return fail(name, "use true or false");
      (name == "leader-elect" ? c.leader_elect : c.routine_events) = b;
    } else if (name == "leader-election-namespace")
      c.leader_election_namespace = value;
    else if (name == "leader-election-id")
      c.leader_election_id = value;
    else if (name == "metrics-address")
      c.metrics_address = value;
    else if (name == "metrics-auth") {
      if (value != "kubernetes" && value != "none") return fail(name, "use kubernetes or none");
      c.metrics_auth = value == "kubernetes";
    } else if (name == "metrics-secure") {
      if (!parse_bool(value, c.metrics_secure)) return fail(name, "use true or false");
    } else if (name == "metrics-cert-dir")
      c.metrics_cert_dir = value;
    else if (name == "metrics-cert-hosts") {
      c.metrics_cert_hosts = split_hosts(value);
      if (c.metrics_cert_hosts.empty()) return fail(name, "name at least one host");
    } else if (name == "health-address")
      c.health_address = value;
    else if (name == "wakeup-address")
      c.wakeup_address = value;
    else if (name == "wakeup-token-secret")
      c.wakeup_token_secret = value;
    else if (name == "runner-image")
      c.job.default_image = value;
    else if (name == "tools-image")
      c.job.tools_image = value;
    else if (name == "otel-endpoint") {
      if (!value.empty() && value.rfind("http://", 0) != 0 && value.rfind("https://", 0) != 0) {
        return fail(name, "use an http:// or https:// URL");
      }
      c.otel_endpoint = value;
    } else if (name == "runner-otel-endpoint") {
      if (!value.empty() && value.rfind("http://", 0) != 0 && value.rfind("https://", 0) != 0) {
        return fail(name, "use an http:// or https:// URL");
      }
      c.job.otel_endpoint = value;
    } else if (name == "runner-otel-headers-secret")
      c.job.otel_headers_secret = value;
    else if (name == "agent-metrics-max") {
      int64_t count = 0;
      if (!parse_number(value, count) || count < 0 || count > kAgentMetricsMaxLimit) {
        return fail(name, "use a whole number between 0 and 100000");
      }
      c.agent_metrics_max = static_cast<std::size_t>(count);
    } else if (name == "pod-defaults") {
      std::string why;
      auto defaults = parse_pod_defaults(value, why);
      if (!defaults) return fail(name, why);
      c.job.pod_defaults = std::move(*defaults);
    } else if (name == "runner-resources") {
      std::string why;
      auto resources = parse_resources(value, why);
      if (!resources) return fail(name, why);
      c.job.runner_resources = std::move(*resources);
    } else if (name == "tools-resources") {
      std::string why;
      auto resources = parse_resources(value, why);
      if (!resources) return fail(name, why);
      c.job.tools_resources = std::move(*resources);
    } else if (name == "image-pull-policy") {
      if (value != "Always" && value != "IfNotPresent" && value != "Never") {
        return fail(name, "use Always, IfNotPresent or Never");
      }
      c.job.image_pull_policy = value;
    } else if (name == "stall-timeout") {
      int64_t seconds = 0;
      if (!parse_number(value, seconds) || seconds < api::kRunStallWindowMin.count() ||
          seconds > api::kRunStallWindowMax.count()) {
        return fail(name, "use whole seconds between 10 and 86400");
      }
      c.job.stall_window = std::chrono::seconds(seconds);
    } else if (name == "testing-clock-offset-seconds") {
      int64_t seconds = 0;
      if (!parse_number(value, seconds) || seconds < -kClockOffsetSecondsMax ||
          seconds > kClockOffsetSecondsMax) {
        return fail(name, "use whole seconds between -3600 and 3600");
      }
      c.testing_clock_offset = std::chrono::seconds(seconds);
    } else if (name == "context-transport") {
      if (value == "configmap")
        c.job.context_transport = controllers::ContextTransport::kConfigMap;
      else if (value == "annotation")
        c.job.context_transport = controllers::ContextTransport::kAnnotation;
      else
        return fail(name, "use configmap or annotation");
    } else if (name == "status-coalesce-seconds") {
      int64_t seconds = 0;
      if (!parse_number(value, seconds) || seconds < 0 ||
          seconds > controllers::kStatusCoalesceSecondsMax.count()) {
        return fail(name, "use whole seconds between 0 and " +
                              std::to_string(controllers::kStatusCoalesceSecondsMax.count()));
      }
      c.status_coalesce = std::chrono::seconds(seconds);
    } else if (name == "run-retention") {
      std::string why;
      const auto retention = controllers::parse_retention(value, why);
      if (!retention) return fail(name, why);
      c.run_retention = *retention;
    } else if (name == "workers") {
      if (!parse_number(value, c.workers) || c.workers < 1 || c.workers > kWorkersMax) {
        return fail(name, "use a number between 1 and 64");
      }
    } else if (name == "max-concurrent-runs") {
      if (!parse_number(value, c.max_concurrent_runs) || c.max_concurrent_runs < 0 ||
          c.max_concurrent_runs > controllers::kMaxConcurrentRunsMax) {
        return fail(name, "use a number between 0 (no cap) and " +
                              std::to_string(controllers::kMaxConcurrentRunsMax));
      }
    } else if (name == "watch-timeout-seconds") {
      if (!parse_number(value, c.watch_timeout_seconds) || c.watch_timeout_seconds < 1 ||
          c.watch_timeout_seconds > 3600) {
        return fail(name, "use whole seconds between 1 and 3600");
      }
    } else if (name == "qps") {
      if (!parse_number(value, c.qps) || c.qps < 0) return fail(name, "use a non-negative number");
    } else if (name == "burst") {
      if (!parse_number(value, c.burst) || c.burst < 1) return fail(name, "use a positive number");
    } else if (name == "log-level") {
      if (value != "trace" && value != "debug" && value != "info" && value != "warn" &&
          value != "error") {
        return fail(name, "use trace, debug, info, warn or error");
      }
      c.log_level = value;
    } else if (name == "log-format") {
      if (value != "json" && value != "text") return fail(name, "use json or text");
      c.log_format = value;
    }
  }
  if (c.metrics_address.empty() || c.health_address.empty()) {
    result.error = "--metrics-address and --health-address may not be empty";
    return result;
  }
  if (!values.count("metrics-secure")) c.metrics_secure = c.metrics_auth;
  if (std::string refused = refused_metrics_tls(c); !refused.empty()) {
    result.error = std::move(refused);
    return result;
  }
  if (std::string refused = refused_watch_namespaces(c); !refused.empty()) {
    result.error = std::move(refused);
    return result;
  }
  result.config = c;
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
