#include "operator/wakeup.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>

#include "controllers/names.h"
#include "controllers/run_view.h"
#include "controllers/text_util.h"
#include "kube/errors.h"

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
  if (out.ns.empty() || out.name.empty() || out.ns.find('/') != std::string::npos ||
      out.name.find('/') != std::string::npos) {
    return std::nullopt;
  }
  return out;
}

namespace {

http::ServerResponse json_response(int status, const Json& body) {
  http::ServerResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = body.dump();
  return r;
}

http::ServerResponse error(int status, const std::string& message) {
  return json_response(status, {{"error", message}, {"code", status}});
}

}  // namespace

WakeupService::WakeupService(controllers::AgentReconciler& reconciler, TokenSource token,
                             Enqueue enqueue)
    : reconciler_(reconciler), token_(std::move(token)), enqueue_(std::move(enqueue)) {}

http::ServerResponse WakeupService::handle(const http::ServerRequest& request) {
  auto path = parse_wakeup_path(request.path);
  if (!path) return error(404, "not found");
  if (request.method != "POST") return error(405, "use POST");
  const std::optional<std::string> expected = token_();
  if (!expected || expected->empty()) {
    return error(503, "the wakeup endpoint has no token configured (--wakeup-token-secret)");
  }
  auto auth = request.headers.find("authorization");
  static const std::string kBearer = "Bearer ";
  if (auth == request.headers.end() || auth->second.rfind(kBearer, 0) != 0) {
    return error(401, "missing bearer token");
  }
  if (!constant_time_equal(auth->second.substr(kBearer.size()), *expected)) {
    return error(401, "wrong bearer token");
  }
  if (request.body.size() > kWakeupBodyBytesMax) return error(413, "body larger than 64 KiB");
  std::string reason;
  if (!request.body.empty()) {
    Json body = Json::parse(request.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || !body.is_object())
      return error(400, "the body must be a JSON object");
    if (auto it = body.find("reason"); it != body.end()) {
      if (!it->is_string()) return error(400, "reason must be a string");
      reason = controllers::truncate_utf8(it->get<std::string>(), kWakeupReasonBytesMax);
    }
  }
  std::lock_guard lock(mutex_);
  auto agent = reconciler_.agent(path->ns, path->name);
  if (!agent) return error(404, "agent " + path->ns + "/" + path->name + " not found");
  for (const Json& run : reconciler_.runs_of(path->ns, path->name)) {
    const controllers::RunView v = controllers::view_run(run);
    if (v.phase == controllers::RunPhase::kQueued && v.job_name.empty() && !v.cancel) {
      spdlog::info("event=wakeup_coalesced agent={}/{} run={}", path->ns, path->name, v.name);
      return json_response(200, {{"run", v.name}, {"coalesced", true}});
    }
  }
  const controllers::AgentSpec spec =
      controllers::check_agent_spec(*agent, controllers::SpecEnvironment{}).spec;
  Json run = controllers::make_run_object(
      spec, controllers::kSourceCallback, "",
      controllers::derived_name(path->name, "callback-", controllers::kObjectNameCharsMax - 5),
      std::nullopt, reason.empty() ? "wakeup" : reason);
  try {
    Json created = reconciler_.create_run(path->ns, run);
    const std::string name = controllers::string_at(created, "metadata/name");
    enqueue_(controllers::object_key(path->ns, path->name));
    spdlog::info("event=wakeup agent={}/{} run={}", path->ns, path->name, name);
    return json_response(201, {{"run", name}, {"coalesced", false}});
  } catch (const kube::ApiError& e) {
    spdlog::warn("event=wakeup_failed agent={}/{} error=\"{}\"", path->ns, path->name, e.what());
    return error(502, "could not create the run: " + e.reason());
  }
}

}  // namespace hb::operator_
