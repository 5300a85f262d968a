#include "operator/metrics_auth.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

#include "kube/request_priority.h"

namespace hb::operator_ {

using controllers::Json;

Json token_review_body(const std::string& token) {
  return {{"apiVersion", "authentication.k8s.io/v1"},
          {"kind", "TokenReview"},
          {"spec", {{"token", token}}}};
}

std::optional<ReviewedUser> reviewed_user(const Json& review) {
  const Json* status = controllers::find_path(review, "status");
  if (status == nullptr || !status->is_object()) return std::nullopt;
  auto authenticated = status->find("authenticated");
  if (authenticated == status->end() || !authenticated->is_boolean() || !*authenticated) {
    return std::nullopt;
  }
  ReviewedUser out;
  out.username = controllers::string_at(review, "status/user/username");
  out.uid = controllers::string_at(review, "status/user/uid");
  if (out.username.empty()) return std::nullopt;
  if (const Json* groups = controllers::find_path(review, "status/user/groups");
      groups != nullptr && groups->is_array()) {
    for (const Json& g : *groups) {
      if (g.is_string()) out.groups.push_back(g.get<std::string>());
    }
  }
  if (const Json* extra = controllers::find_path(review, "status/user/extra");
      extra != nullptr && extra->is_object()) {
    out.extra = *extra;
  }
  return out;
}

Json access_review_body(const ReviewedUser& user, const std::string& verb,
                        const std::string& path) {
  Json spec = {{"user", user.username},
               {"groups", user.groups},
               {"nonResourceAttributes", {{"path", path}, {"verb", verb}}}};
  if (!user.uid.empty()) spec["uid"] = user.uid;
  if (user.extra.is_object()) spec["extra"] = user.extra;
  return {{"apiVersion", "authorization.k8s.io/v1"},
          {"kind", "SubjectAccessReview"},
          {"spec", std::move(spec)}};
}

bool review_allowed(const Json& review) {
  const Json* allowed = controllers::find_path(review, "status/allowed");
  return allowed != nullptr && allowed->is_boolean() && allowed->get<bool>();
}

MetricsAuthorizer::MetricsAuthorizer(Review token_review, Review access_review, Now now)
    : token_review_(std::move(token_review)),
      access_review_(std::move(access_review)),
      now_(std::move(now)) {}

namespace {

std::string bearer_token(const http::ServerRequest& request) {
  static const std::string kBearer = "Bearer ";
  auto auth = request.headers.find("authorization");
  if (auth == request.headers.end() || auth->second.rfind(kBearer, 0) != 0) return "";
  return auth->second.substr(kBearer.size());
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

MetricsAccess MetricsAuthorizer::check(const http::ServerRequest& request) {
  const std::string token = bearer_token(request);
  if (token.empty()) return MetricsAccess::kUnauthenticated;
  const std::string verb = lower(request.method);
  // The verb is part of the key: a HEAD allowed says nothing of a GET.
  const TokenDigest key = token_digest(verb + " " + token);
  {
    std::lock_guard lock(mutex_);
    const Entry* known = entries_.find(key);
    if (known != nullptr && now_() < known->expires) return known->access;
  }
  const MetricsAccess access = review(token, verb);
  if (access != MetricsAccess::kUnavailable) remember(key, access);
  return access;
}

MetricsAccess MetricsAuthorizer::review(const std::string& token, const std::string& verb) {
  kube::RequestPriorityScope edge(kube::RequestClass::kEdge);
  kube::GiveWayScope bounded(std::chrono::steady_clock::now() + kMetricsReviewWaitMax);
  kube::Result<Json> authn = token_review_(token_review_body(token));
  if (!authn.ok()) {
    spdlog::warn("event=metrics_review_failed review=TokenReview error=\"{}\"",
                 authn.error().describe());
    return MetricsAccess::kUnavailable;
  }
  const std::optional<ReviewedUser> user = reviewed_user(authn.value());
  if (!user) return MetricsAccess::kUnauthenticated;
  kube::Result<Json> authz = access_review_(access_review_body(*user, verb, "/metrics"));
  if (!authz.ok()) {
    spdlog::warn("event=metrics_review_failed review=SubjectAccessReview error=\"{}\"",
                 authz.error().describe());
    return MetricsAccess::kUnavailable;
  }
  if (review_allowed(authz.value())) return MetricsAccess::kAllowed;
  spdlog::debug("event=metrics_forbidden user=\"{}\"", user->username);
  return MetricsAccess::kForbidden;
}

void MetricsAuthorizer::remember(const TokenDigest& key, MetricsAccess access) {
  std::lock_guard lock(mutex_);
  const auto ttl = access == MetricsAccess::kAllowed ? kMetricsAllowTtl : kMetricsDenyTtl;
  entries_.touch(key) = Entry{access, now_() + ttl};
}

std::size_t MetricsAuthorizer::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

std::optional<http::ServerResponse> MetricsAuthorizer::refusal(const http::ServerRequest& request) {
  const MetricsAccess access = check(request);
  if (access == MetricsAccess::kAllowed) return std::nullopt;
  http::ServerResponse r;
  switch (access) {
    case MetricsAccess::kUnauthenticated:
      r.status = 401;
      r.body = "Unauthorized: /metrics needs a bearer token the API server authenticates\n";
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      break;
    case MetricsAccess::kForbidden:
      r.status = 403;
      r.body = "Forbidden: the token's user may not get the non-resource URL /metrics\n";
      break;
    default:
      r.status = 503;
      r.body = "the API server could not review the token; retry\n";
      r.headers.emplace_back("Retry-After", "5");
      break;
  }
  return r;
}

}  // namespace hb::operator_
