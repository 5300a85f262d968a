// Typed Kubernetes API errors carrying the server's Status object, so callers
// branch on kind (NotFound, Conflict, ...) and users read the server's words.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace hb::kube {

enum class ErrorKind {
  kBadRequest,       // 400 not otherwise classified
  kUnauthorized,     // 401
  kForbidden,        // 403
  kNotFound,         // 404
  kConflict,         // 409 on a stale resourceVersion or a precondition
  kAlreadyExists,    // 409 with reason AlreadyExists
  kGone,             // 410: resourceVersion too old (Expired), relist
  kInvalid,          // 422 with field causes
  kTooManyRequests,  // 429
  kServerError,      // 5xx
  kOther,
};

const char* to_string(ErrorKind kind);

struct FieldCause {
  std::string field;
  std::string reason;
  std::string message;
};

class ApiError : public std::runtime_error {
 public:
  ApiError(ErrorKind kind, int code, std::string reason, std::string message,
           std::vector<FieldCause> causes, std::optional<int> retry_after_seconds,
           std::string context);

  ErrorKind kind() const { return kind_; }
  int code() const { return code_; }
  const std::string& reason() const { return reason_; }           // Status.reason
  const std::string& server_message() const { return message_; }  // Status.message
  const std::vector<FieldCause>& causes() const { return causes_; }
  std::optional<int> retry_after_seconds() const { return retry_after_seconds_; }
  // Worth retrying the same request later (429, 5xx).
  bool retryable() const {
    return kind_ == ErrorKind::kTooManyRequests || kind_ == ErrorKind::kServerError;
  }

 private:
  ErrorKind kind_;
  int code_;
  std::string reason_;
  std::string message_;
  std::vector<FieldCause> causes_;
  std::optional<int> retry_after_seconds_;
};

// Maps a non-2xx answer (status, Retry-After header, body) to an ApiError.
// `context` names the request, e.g. "create heartbeat.dev/v1alpha1 agents ns/x".
ApiError error_from_response(int status, const std::string& retry_after_header,
                             const std::string& body, const std::string& context);

// Maps a Status object that arrived inside a watch stream (an ERROR event).
ApiError error_from_status(const nlohmann::json& status, const std::string& context);

}  // namespace hb::kube
