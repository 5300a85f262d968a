#include "operator/wakeup.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "api/object_names.h"
#include "api/rfc3339.h"
#include "api/run_metadata.h"
#include "api/utf8.h"
#include "controllers/agent/agent_decision.h"
#include "controllers/model/names.h"
#include "controllers/model/run_view.h"
#include "controllers/model/text_util.h"
#include "controllers/run/run_record.h"
#include "kube/errors.h"
#include "kube/request_priority.h"

namespace hb::operator_ {

using controllers::Json;

bool constant_time_equal(const std::string& a, const std::string& b) {
  // Hash both so the comparison does not leak the length either.
  unsigned char ha[SHA256_DIGEST_LENGTH], hb_[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(a.data()), a.size(), ha);
  SHA256(reinterpret_cast<const unsigned char*>(b.data()), b.size(), hb_);
  return CRYPTO_memcmp(ha, hb_, SHA256_DIGEST_LENGTH) == 0;
}

std::optional<WakeupPath> parse_wakeup_path(const std::string& path) {
  static const std::string kPrefix = "/api/v1/namespaces/";
  static const std::string kMiddle = "/agents/";
  static const std::string kSuffix = "/wakeup";
  if (path.rfind(kPrefix, 0) != 0 || path.size() <= kSuffix.size() ||
      path.compare(path.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return std::nullopt;
  }
  const std::string inner =
      path.substr(kPrefix.size(), path.size() - kPrefix.size() - kSuffix.size());
  const size_t middle = inner.find(kMiddle);
  if (middle == std::string::npos) return std::nullopt;
  WakeupPath out{inner.substr(0, middle), inner.substr(middle + kMiddle.size())};
  // Names as Kubernetes allows them, so nothing else reaches a URL or a log line.
  if (!api::is_dns1123_label(out.ns) || !api::is_dns1123_subdomain(out.name)) return std::nullopt;
  return out;
}

namespace {

http::ServerResponse json_response(int status, const Json& body) {
  http::ServerResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  return r;
}

http::ServerResponse error(int status, const std::string& message) {
  return json_response(status, {{"error", message}, {"code", status}});
}

// One answer for every "no": no agent, no token, a wrong one, a namespace
// not ours. Byte for byte the same.
http::ServerResponse not_found() {
  return error(404, "not found");
}

http::ServerResponse with_retry_after(http::ServerResponse r, long long seconds) {
  r.headers.emplace_back("Retry-After", std::to_string(seconds));
  return r;
}

http::ServerResponse too_many(const std::string& what, std::chrono::seconds retry) {
  return with_retry_after(error(429, "too many wakeups " + what + "; retry later"), retry.count());
}

std::string bearer_of(const http::ServerRequest& request) {
  static const std::string kBearer = "Bearer ";
  auto auth = request.headers.find("authorization");
  if (auth == request.headers.end() || auth->second.rfind(kBearer, 0) != 0) return "";
  return auth->second.substr(kBearer.size());
}

// What the caller is told of a failed API call: the server's reason or the
// kind of failure, never the request (it names objects the caller may not see).
std::string reason_of(const kube::Error& e) {
  return e.reason.empty() ? kube::to_string(e.kind) : e.reason;
}

}  // namespace

std::string idempotency_key_problem(const std::string& key) {
  if (key.empty() || key.size() > kIdempotencyKeyCharsMax) {
    return "Idempotency-Key must be 1 to " + std::to_string(kIdempotencyKeyCharsMax) +
           " characters (a UUID, say)";
  }
  for (unsigned char c : key) {
    if (c < 0x20 || c > 0x7e) return "Idempotency-Key must be printable ASCII (a UUID, say)";
  }
  return "";
}

std::string idempotent_run_name(const std::string& agent_name, const std::string& agent_uid,
                                const std::string& key) {
  return controllers::derived_name(agent_name,
                                   "callback-" + controllers::long_hash(agent_uid + "/" + key));
}

// A retried POST: the run its key named exists. Ours (same agent, same key):
// 200 with it. Anything else under that name: 409.
http::ServerResponse WakeupService::existing(const WakeupPath& path, const std::string& name,
                                             const std::string& agent_uid, const std::string& key) {
  kube::Result<Json> read = backend_.get_run(path.ns, name);
  if (!read.ok()) return error(502, "could not read run " + name + ": " + reason_of(read.error()));
  const Json& run = read.value();
  const std::string* stored_key = nullptr;
  if (const Json* annotations = controllers::find_path(run, "metadata/annotations")) {
    auto it = annotations->find(controllers::kAnnotationIdempotencyKey);
    if (it != annotations->end() && it->is_string())
      stored_key = &it->get_ref<const std::string&>();
  }
  const bool owned = controllers::run_of_agent(run, agent_uid);
  if (stored_key == nullptr || *stored_key != key || !owned) {
    return error(409, "run " + name + " exists and was not made for this Idempotency-Key");
  }
  spdlog::info("event=wakeup_repeated agent={}/{} run={}", path.ns, path.name, name);
  return json_response(200, {{"run", name}, {"created", false}});
}

WakeupService::WakeupService(WakeupBackend backend, WakeupAuth auth, Enqueue enqueue,
                             IsLeader is_leader, WakeupLimits limits, SteadyNow steady_now)
    : backend_(std::move(backend)),
      auth_(std::move(auth)),
      enqueue_(std::move(enqueue)),
      is_leader_(std::move(is_leader)),
      steady_now_(std::move(steady_now)),
      per_agent_(limits.per_agent, limits.entries_max),
      per_source_(limits.per_source, limits.entries_max),
      per_namespace_(limits.per_namespace, limits.entries_max) {}

// Both comparisons run whether or not either token exists, against a digest
// no token has when one is missing, so the time taken does not say which.
bool WakeupService::authorized(const std::string& ns, const http::ServerRequest& request) const {
  static const TokenDigest kNone = token_digest("no token has this digest: it is not 32 bytes");
  const TokenDigest presented = token_digest(bearer_of(request));
  const std::optional<TokenDigest> own =
      auth_.namespace_token ? auth_.namespace_token(ns) : std::nullopt;
  const std::optional<TokenDigest> cluster =
      auth_.cluster_token ? auth_.cluster_token() : std::nullopt;
  const bool own_ok = digest_equal(presented, own.value_or(kNone));
  const bool cluster_ok = digest_equal(presented, cluster.value_or(kNone));
  return (own_ok && own.has_value()) || (cluster_ok && cluster.has_value());
}

http::ServerResponse WakeupService::handle(const http::ServerRequest& request) {
  auto path = parse_wakeup_path(request.path);
  if (!path) return not_found();
  if (request.method != "POST") return error(405, "use POST");
  const auto now = steady_now_();
  if (auto retry = per_source_.take(request.remote_address, now)) {
    return too_many("from this address", *retry);
  }
  if (!is_leader_()) {
    // Before the token: a standby makes no API call for anyone.
    return with_retry_after(error(503, "this replica is a standby; retry (the leader acts)"),
                            kStandbyRetryAfterSeconds);
  }
  // The Secret reads and the run's calls wait behind every agent's own
  // writes, and give up rather than hold a handler thread for long.
  kube::RequestPriorityScope edge(kube::RequestClass::kEdge);
  kube::GiveWayScope bounded(std::chrono::steady_clock::now() + kWakeupLimiterWaitMax);
  if (!authorized(path->ns, request)) return not_found();
  if (auto retry = per_namespace_.take(path->ns, now)) {
    return too_many("for namespace " + path->ns, *retry);
  }
  return admitted(*path, request);
}

// The caller holds a token for the namespace: from here on it may learn
// which of the namespace's agents exist.
http::ServerResponse WakeupService::admitted(const WakeupPath& path,
                                             const http::ServerRequest& request) {
  if (request.body.size() > kWakeupBodyBytesMax) return error(413, "body larger than 64 KiB");
  std::string key;
  if (auto it = request.headers.find("idempotency-key"); it != request.headers.end()) {
    key = it->second;
    if (std::string problem = idempotency_key_problem(key); !problem.empty()) {
      return error(400, problem);
    }
  }
  std::variant<WakeupBody, std::string> body = parse_wakeup_body(request.body);
  if (const std::string* problem = std::get_if<std::string>(&body)) return error(400, *problem);
  auto agent = backend_.agent(path.ns, path.name);
  if (!agent) return not_found();
  if (auto retry = per_agent_.take(controllers::object_key(path.ns, path.name), steady_now_())) {
    return too_many("for agent " + path.ns + "/" + path.name, *retry);
  }
  return create(path, *agent, std::get<WakeupBody>(body), key);
}

std::variant<WakeupBody, std::string> parse_wakeup_body(const std::string& text) {
  WakeupBody out;
  if (text.empty()) return out;
  Json body = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) return "the body must be a JSON object";
  if (auto it = body.find("reason"); it != body.end()) {
    if (!it->is_string()) return "reason must be a string";
    out.reason = std::string(api::utf8_prefix(it->get<std::string>(), kWakeupReasonBytesMax));
  }
  if (auto it = body.find("metadata"); it != body.end()) {
    if (std::string problem = api::run_metadata_problem(*it); !problem.empty()) return problem;
    out.metadata = std::move(*it);
  }
  return out;
}

http::ServerResponse WakeupService::create(const WakeupPath& path, const Json& agent,
                                           const WakeupBody& body, const std::string& key) {
  const controllers::AgentSpec spec =
      controllers::check_agent_spec(agent, controllers::SpecEnvironment{}).spec;
  const std::string name =
      key.empty()
          ? controllers::derived_name(path.name, "callback-", controllers::kObjectNameCharsMax - 5)
          : idempotent_run_name(path.name, spec.uid, key);
  // Without a key the API server completes the name (generateName).
  Json run = controllers::make_run_object(
      spec, controllers::kSourceCallback, key.empty() ? "" : name, key.empty() ? name : "",
      std::nullopt, body.reason.empty() ? "wakeup" : body.reason);
  if (!body.metadata.is_null()) run["spec"]["metadata"] = body.metadata;
  if (!key.empty()) run["metadata"]["annotations"][controllers::kAnnotationIdempotencyKey] = key;
  run["metadata"]["annotations"][controllers::kAnnotationRequestedAt] =
      api::format_micro_time(backend_.now());
  kube::Result<Json> created = backend_.create_run(path.ns, run);
  if (!created.ok()) {
    if (created.is(kube::ErrorKind::kGaveWay)) {
      return with_retry_after(error(503, "the operator is busy with its agents' writes; retry"),
                              kLimiterRetryAfterSeconds);
    }
    if (!key.empty() && created.is(kube::ErrorKind::kAlreadyExists)) {
      return existing(path, name, spec.uid, key);
    }
    spdlog::warn("event=wakeup_failed agent={}/{} error=\"{}\"", path.ns, path.name,
                 created.error().describe());
    return error(502, "could not create the run: " + reason_of(created.error()));
  }
  const std::string created_name = controllers::string_at(created.value(), "metadata/name");
  enqueue_(controllers::object_key(path.ns, path.name));
  spdlog::info("event=wakeup agent={}/{} run={}", path.ns, path.name, created_name);
  return json_response(201, {{"run", created_name}, {"created", true}});
}

}  // namespace hb::operator_
