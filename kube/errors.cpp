#include "kube/errors.h"

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
  std::string out = context + ": " + std::to_string(code) + " " + message;
  // The server's message usually lists the causes already; add any it left out.
  for (const auto& cause : causes) {
    if (!cause.field.empty() && message.find(cause.field) == std::string::npos) {
      out += "; " + cause.field + ": " + cause.message;
    }
  }
  return out;
}

std::optional<int> parse_retry_after(const std::string& header) {
  if (header.empty()) return std::nullopt;
  try {
    size_t used = 0;
    int seconds = std::stoi(header, &used);
    if (used == header.size() && seconds >= 0) return seconds;
  } catch (const std::exception&) {
  }
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
    case ErrorKind::kOther:
      return "Other";
  }
  return "Other";
}

ApiError::ApiError(ErrorKind kind, int code, std::string reason, std::string message,
                   std::vector<FieldCause> causes, std::optional<int> retry_after_seconds,
                   std::string context)
    : std::runtime_error(compose(context, code, message, causes)),
      kind_(kind),
      code_(code),
      reason_(std::move(reason)),
      message_(std::move(message)),
      causes_(std::move(causes)),
      retry_after_seconds_(retry_after_seconds) {}

ApiError error_from_status(const nlohmann::json& status, const std::string& context) {
  int code = status.value("code", 0);
  std::string reason = status.value("reason", "");
  std::string message = status.value("message", "");
  std::vector<FieldCause> causes;
  std::optional<int> retry_after;
  if (auto details = status.find("details"); details != status.end() && details->is_object()) {
    if (auto list = details->find("causes"); list != details->end() && list->is_array()) {
      for (const auto& c : *list) {
        if (!c.is_object()) continue;
        causes.push_back({c.value("field", ""), c.value("reason", ""), c.value("message", "")});
      }
    }
    if (auto ras = details->find("retryAfterSeconds");
        ras != details->end() && ras->is_number_integer()) {
      retry_after = ras->get<int>();
    }
  }
  if (message.empty()) message = reason.empty() ? "(no message)" : reason;
  return ApiError(classify(code, reason), code, reason, message, std::move(causes), retry_after,
                  context);
}

ApiError error_from_response(int status, const std::string& retry_after_header,
                             const std::string& body, const std::string& context) {
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.value("kind", "") == "Status") {
    if (!parsed.contains("code")) parsed["code"] = status;
    ApiError from_body = error_from_status(parsed, context);
    auto header_retry = parse_retry_after(retry_after_header);
    if (header_retry && !from_body.retry_after_seconds()) {
      return ApiError(from_body.kind(), from_body.code(), from_body.reason(),
                      from_body.server_message(), from_body.causes(), header_retry, context);
    }
    return from_body;
  }
  // Not a Status (a proxy, a load balancer): keep an excerpt of what came back.
  std::string excerpt = body.substr(0, kBodyExcerptBytesMax);
  if (excerpt.empty()) excerpt = "(empty body)";
  return ApiError(classify(status, ""), status, "", excerpt, {},
                  parse_retry_after(retry_after_header), context);
}

}  // namespace hb::kube
