// Kubernetes API errors as values. Every call on kube::Client returns a
// Result: the answer, or an Error saying what went wrong (the server's
// Status, a transport failure, a refused write) and naming the request.
// Callers branch on Error::kind; ApiError is the same Error thrown, for
// tests and tools that would rather stop at the first failure (or_throw).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "api/expected.h"
#include "api/hb_assert.h"
#include "http/http.h"

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
  kTooManyRequests,  // 429, often with a Retry-After
  kServerError,      // 5xx
  kTransport,        // no HTTP answer: refused, TLS, timeout (transport_kind says which)
  kMalformed,        // a 2xx answer, or a value in one, that is not what it should be
  kNotLeader,        // a write refused before it was sent: this replica is not the leader
  kGaveWay,          // not sent: it gave way in the rate limiter (request_priority.h)
  kConfig,           // no request: a kubeconfig, in-cluster file or manifest that cannot be used
  kOther,
};

const char* to_string(ErrorKind kind);

struct FieldCause {
  std::string field;
  std::string reason;
  std::string message;
};

struct Error {
  ErrorKind kind = ErrorKind::kOther;
  int code = 0;                    // HTTP status; 0 when there was none
  std::string reason;              // Status.reason
  std::string message;             // Status.message, or what failed
  std::vector<FieldCause> causes;  // Status.details.causes
  std::optional<int> retry_after_seconds;
  std::string context;  // the request, e.g. "create ... agents ns/x"
  http::TransportError::Kind transport_kind = http::TransportError::Kind::kOther;

  // "context: code message; field: cause" for logs and conditions.
  std::string describe() const;
  // Worth sending the same request again later (429, 5xx, no answer).
  bool transient() const {
    return kind == ErrorKind::kTooManyRequests || kind == ErrorKind::kServerError ||
           kind == ErrorKind::kTransport;
  }
};

// An Error thrown: what Result::or_throw raises.
class ApiError : public std::runtime_error {
 public:
  explicit ApiError(Error error);
  const Error& error() const { return error_; }
  ErrorKind kind() const { return error_.kind; }
  int code() const { return error_.code; }
  const std::string& reason() const { return error_.reason; }
  const std::string& server_message() const { return error_.message; }
  const std::vector<FieldCause>& causes() const { return error_.causes; }
  std::optional<int> retry_after_seconds() const { return error_.retry_after_seconds; }
  bool retryable() const { return error_.transient(); }

 private:
  Error error_;
};

struct Unit {};

// A value or an Error. [[nodiscard]]: an ignored failure is a compile error.
template <class T>
class [[nodiscard]] Result : public Expected<T, Error> {
 public:
  using Expected<T, Error>::Expected;
  bool is(ErrorKind kind) const { return !this->ok() && this->error().kind == kind; }
  // The value, or the Error thrown as ApiError (tests and tools).
  T or_throw() && {
    if (!this->ok()) throw ApiError(std::move(*this).error());
    return std::move(*this).value();
  }
};

using Done = Result<Unit>;
inline Done done() {
  return Unit{};
}

// Maps a non-2xx answer (status, Retry-After header, body) to an Error.
// `context` names the request, e.g. "create heartbeat.dev/v1alpha1 agents ns/x".
Error error_from_response(int status, const std::string& retry_after_header,
                          const std::string& body, const std::string& context);

// Maps a Status object that arrived inside a watch stream (an ERROR event).
Error error_from_status(const nlohmann::json& status, const std::string& context);

// A request that got no HTTP answer.
Error error_from_transport(const http::TransportError& failure, const std::string& context);

}  // namespace hb::kube

// Early return of a failed Result from a function that returns a Result:
//   HB_TRY(client.remove(...));
//   HB_TRY_ASSIGN(Json created, client.create(...));
#define HB_TRY(expr)                                                    \
  do {                                                                  \
    auto hb_try_result_ = (expr);                                       \
    if (!hb_try_result_.ok()) return std::move(hb_try_result_).error(); \
  } while (0)
#define HB_TRY_CONCAT_INNER_(a, b) a##b
#define HB_TRY_CONCAT_(a, b) HB_TRY_CONCAT_INNER_(a, b)
#define HB_TRY_ASSIGN_(tmp, lhs, expr)          \
  auto tmp = (expr);                            \
  if (!tmp.ok()) return std::move(tmp).error(); \
  lhs = std::move(tmp).value()
#define HB_TRY_ASSIGN(lhs, expr) HB_TRY_ASSIGN_(HB_TRY_CONCAT_(hb_try_, __LINE__), lhs, expr)
