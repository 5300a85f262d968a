#include "kube/errors.h"

#include <charconv>
#include <system_error>

namespace hb::kube {
namespace {

constexpr size_t kBodyExcerptBytesMax = 512;

ErrorKind classify(int code, const std::string& reason) {
  if (reason == "AlreadyExists") return ErrorKind::kAlreadyExists;
  if (reason == "Expired" || reason == "Gone") return ErrorKind::kGone;
  switch (code) {
    case 400:
      return ErrorKind::kBadRequest;
    case 401:
      return ErrorKind::kUnauthorized;
    case 403:
      return ErrorKind::kForbidden;
    case 404:
      return ErrorKind::kNotFound;
    case 409:
      return ErrorKind::kConflict;
    case 410:
      return ErrorKind::kGone;
    case 422:
      return ErrorKind::kInvalid;
    case 429:
      return ErrorKind::kTooManyRequests;
    default:
      break;
  }
  if (code >= 500 && code <= 599) return ErrorKind::kServerError;
  return ErrorKind::kOther;
}

std::string compose(const std::string& context, int code, const std::string& message,
                    const std::vector<FieldCause>& causes) {
  std::string out = context + ": " + (code > 0 ? std::to_string(code) + " " : "") + message;
  // The server's message usually lists the causes already; add any it left out.
  for (const auto& cause : causes) {
    if (!cause.field.empty() && message.find(cause.field) == std::string::npos) {
      out += "; " + cause.field + ": " + cause.message;
    }
  }
  return out;
}

std::optional<int> parse_retry_after(const std::string& header) {
  int seconds = 0;
  const char* end = header.data() + header.size();
  const auto [at, ec] = std::from_chars(header.data(), end, seconds);
  if (ec == std::errc() && at == end && seconds >= 0) return seconds;
  return std::nullopt;  // HTTP-date form: the server sends seconds; ignore dates
}

}  // namespace

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kBadRequest:
      return "BadRequest";
    case ErrorKind::kUnauthorized:
      return "Unauthorized";
    case ErrorKind::kForbidden:
      return "Forbidden";
    case ErrorKind::kNotFound:
      return "NotFound";
    case ErrorKind::kConflict:
      return "Conflict";
    case ErrorKind::kAlreadyExists:
      return "AlreadyExists";
    case ErrorKind::kGone:
      return "Gone";
    case ErrorKind::kInvalid:
      return "Invalid";
    case ErrorKind::kTooManyRequests:
      return "TooManyRequests";
    case ErrorKind::kServerError:
      return "ServerError";
    case ErrorKind::kTransport:
      return "Transport";
    case ErrorKind::kMalformed:
      return "Malformed";
    case ErrorKind::kNotLeader:
      return "NotLeader";
    case ErrorKind::kGaveWay:
      return "GaveWay";
    case ErrorKind::kConfig:
      return "Config";
    case ErrorKind::kOther:
      return "Other";
  }
  return "Other";
}

std::string Error::describe() const {
  return compose(context, code, message, causes);
}

ApiError::ApiError(Error error) : std::runtime_error(error.describe()), error_(std::move(error)) {}

Error error_from_status(const nlohmann::json& status, const std::string& context) {
  Error error;
  error.code = status.value("code", 0);
  error.reason = status.value("reason", "");
  error.message = status.value("message", "");
  if (auto details = status.find("details"); details != status.end() && details->is_object()) {
    if (auto list = details->find("causes"); list != details->end() && list->is_array()) {
      for (const auto& c : *list) {
        if (!c.is_object()) continue;
        error.causes.push_back(
            {c.value("field", ""), c.value("reason", ""), c.value("message", "")});
      }
    }
    if (auto ras = details->find("retryAfterSeconds");
        ras != details->end() && ras->is_number_integer()) {
      error.retry_after_seconds = ras->get<int>();
    }
  }
  if (error.message.empty()) error.message = error.reason.empty() ? "(no message)" : error.reason;
  error.kind = classify(error.code, error.reason);
  error.context = context;
  return error;
}

Error error_from_response(int status, const std::string& retry_after_header,
                          const std::string& body, const std::string& context) {
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.value("kind", "") == "Status") {
    if (!parsed.contains("code")) parsed["code"] = status;
    Error from_body = error_from_status(parsed, context);
    if (!from_body.retry_after_seconds) {
      from_body.retry_after_seconds = parse_retry_after(retry_after_header);
    }
    return from_body;
  }
  // Not a Status (a proxy, a load balancer): keep an excerpt of what came back.
  Error error;
  error.kind = classify(status, "");
  error.code = status;
  error.message = body.substr(0, kBodyExcerptBytesMax);
  if (error.message.empty()) error.message = "(empty body)";
  error.retry_after_seconds = parse_retry_after(retry_after_header);
  error.context = context;
  return error;
}

Error error_from_transport(const http::TransportError& failure, const std::string& context) {
  Error error;
  error.kind = ErrorKind::kTransport;
  error.message = failure.what();
  error.context = context;
  error.transport_kind = failure.kind();
  return error;
}

}  // namespace hb::kube
