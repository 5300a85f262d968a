// /metrics for whom the API server says may read it, as controller-runtime's
// secure metrics filter does: the bearer token is authenticated by a
// TokenReview, then the user it names is authorised by a SubjectAccessReview
// for verb get on the non-resource URL /metrics (RBAC: a ClusterRole with
// nonResourceURLs ["/metrics"], verbs ["get"]). Answers are cached by the
// token's SHA-256 (never the token), briefly and in bounded number. The
// reviews are API calls: made outside the lock, of class kEdge
// (kube/request_priority.h), never ahead of an agent's writes.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "controllers/model/json_util.h"
#include "http/http.h"
#include "kube/errors.h"
#include "operator/lru_map.h"
#include "operator/wakeup_token.h"  // TokenDigest

namespace hb::operator_ {

inline constexpr std::chrono::seconds kMetricsAllowTtl{60};
inline constexpr std::chrono::seconds kMetricsDenyTtl{10};
inline constexpr std::size_t kMetricsAuthEntriesMax = 1024;
// How long a review may wait for the client's rate limiter.
inline constexpr std::chrono::seconds kMetricsReviewWaitMax{5};

enum class MetricsAccess { kAllowed, kUnauthenticated, kForbidden, kUnavailable };

// The user a TokenReview's answer names, when it authenticated the token.
struct ReviewedUser {
  std::string username, uid;
  std::vector<std::string> groups;
  controllers::Json extra;  // object of string lists, or null
};

// Pure: the review bodies and their answers.
controllers::Json token_review_body(const std::string& token);
std::optional<ReviewedUser> reviewed_user(const controllers::Json& token_review);
controllers::Json access_review_body(const ReviewedUser& user, const std::string& verb,
                                     const std::string& path);
bool review_allowed(const controllers::Json& access_review);

class MetricsAuthorizer {
 public:
  using Clock = std::chrono::steady_clock;
  // POSTs of a TokenReview and a SubjectAccessReview; the created object back.
  using Review = std::function<kube::Result<controllers::Json>(const controllers::Json& body)>;
  using Now = std::function<Clock::time_point()>;
  MetricsAuthorizer(Review token_review, Review access_review, Now now = Clock::now);

  // The decision for a request's Authorization header (GET /metrics).
  MetricsAccess check(const http::ServerRequest& request);
  // nullopt when the request may have /metrics; else the refusal to send.
  std::optional<http::ServerResponse> refusal(const http::ServerRequest& request);
  std::size_t size() const;

 private:
  struct Entry {
    MetricsAccess access;
    Clock::time_point expires;
  };
  MetricsAccess review(const std::string& token, const std::string& verb);
  void remember(const TokenDigest& key, MetricsAccess access);

  Review token_review_, access_review_;
  Now now_;
  mutable std::mutex mutex_;  // guards the members below, never held across a review
  LruMap<TokenDigest, Entry> entries_{kMetricsAuthEntriesMax};
};

}  // namespace hb::operator_
