#include "runner/http_model_client.h"

#include <algorithm>
#include <random>

#include "runner/anthropic_wire.h"
#include "runner/errors.h"
#include "runner/limits.h"
#include "runner/retry_policy.h"
#include "runner/wire_util.h"

namespace hb::runner {
namespace {

using Kind = ProviderError::Kind;

double default_jitter() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
}

// An attempt never outlives the run's time left.
Millis attempt_timeout(Millis configured, Millis remaining) {
  return std::max(std::min(configured, remaining), Millis(1));
}

}  // namespace

std::string model_endpoint(api::Provider provider, const std::string& base_url) {
  std::string base = base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return provider == api::Provider::kOpenAI ? base + "/chat/completions" : base + "/v1/messages";
}

HttpModelClient::HttpModelClient(HttpModelClientOptions options, http::Client& http, Clock& clock,
                                 Transcript* transcript, std::function<void()> beat)
    : options_(std::move(options)),
      http_(http),
      clock_(clock),
      transcript_(transcript),
      beat_(std::move(beat)),
      url_(model_endpoint(options_.provider, options_.base_url)) {
  if (!options_.jitter) options_.jitter = default_jitter;
}

openai::TokenLimitField HttpModelClient::token_limit_field(const std::string& model) const {
  if (learned_field_ && learned_model_ == model) return *learned_field_;
  if (options_.token_limit_field) return *options_.token_limit_field;
  return openai::token_limit_field_for(options_.base_url, model);
}

http::Request HttpModelClient::build(const ModelRequest& request,
                                     openai::TokenLimitField field) const {
  http::Request out;
  out.method = "POST";
  out.url = url_;
  out.headers.emplace_back("Content-Type", "application/json");
  out.body_bytes_max = kModelReplyBytesMax;
  if (options_.provider == api::Provider::kOpenAI) {
    if (!options_.api_key.empty())
      out.headers.emplace_back("Authorization", "Bearer " + options_.api_key);
    out.body = dump_json(openai::encode_request(request, field));
  } else {
    out.headers.emplace_back("x-api-key", options_.api_key);
    out.headers.emplace_back("anthropic-version", std::string(anthropic::kApiVersion));
    out.body = dump_json(anthropic::encode_request(request));
  }
  return out;
}

ModelResult HttpModelClient::decode(const std::string& body) const {
  return options_.provider == api::Provider::kOpenAI ? openai::decode_response(body)
                                                     : anthropic::decode_response(body);
}

bool HttpModelClient::cancelled() const {
  return options_.cancel && options_.cancel->cancelled();
}

std::string HttpModelClient::describe_error(const http::Response& response) const {
  std::string message = options_.provider == api::Provider::kOpenAI
                            ? openai::error_message(response.body)
                            : anthropic::error_message(response.body);
  // Never echo the key, even if a server does.
  if (options_.api_key.size() >= 8) {
    for (auto pos = message.find(options_.api_key); pos != std::string::npos;
         pos = message.find(options_.api_key)) {
      message.replace(pos, options_.api_key.size(), "[redacted]");
    }
  }
  return std::string(to_string(options_.provider)) + " " + url_ + ": HTTP " +
         std::to_string(response.status) + (message.empty() ? "" : ": " + message);
}

struct HttpModelClient::Call {
  openai::TokenLimitField field = openai::TokenLimitField::kMaxTokens;
  http::Request http_request;
  int attempt = 0;
  bool field_switched = false;
  // The last failed attempt's.
  std::string last_error;
  int last_status = 0;
  Kind last_kind = Kind::kTransport;
  std::optional<Millis> hint;  // its retry-after
  bool retryable = false;
};

void HttpModelClient::emit_retry(const Call& call, Millis delay, std::string_view switched_to) {
  if (!transcript_) return;
  nlohmann::json event = {{"event", "model_retry"},
                          {"attempt", call.attempt + 1},
                          {"status", call.last_status},
                          {"error", call.last_error},
                          {"delayMs", delay.count()}};
  if (!switched_to.empty()) event["switchedTo"] = std::string(switched_to);
  transcript_->emit(event);
}

// A 2xx is decoded; the others are sorted into quota (no retry), a rejected
// token field (at once, with the other), or a status a retry may mend.
std::optional<ModelResult> HttpModelClient::answered(const ModelRequest& request,
                                                     const http::Response& response, Call& call) {
  if (response.status >= 200 && response.status < 300) return decode(response.body);
  call.last_status = response.status;
  call.last_error = describe_error(response);
  call.hint = parse_retry_after(response.headers, clock_.now());
  const auto reset_at = [&]() -> std::optional<TimePoint> {
    if (!call.hint) return std::nullopt;
    return clock_.now() + *call.hint;
  };
  const bool openai = options_.provider == api::Provider::kOpenAI;
  if (openai && openai::is_insufficient_quota(response.body)) {
    return ProviderError(Kind::kQuota, response.status, call.last_error, reset_at());
  }
  if (is_quota_wait(response.status, call.hint, clock_.now(), request.deadline)) {
    return ProviderError(Kind::kQuota, response.status,
                         call.last_error + " (retry-after " +
                             std::to_string(call.hint->count() / 1000) +
                             " s: longer than this run may wait)",
                         reset_at());
  }
  if (openai && !call.field_switched &&
      openai::rejects_token_limit_field(response.status, response.body, call.field)) {
    // Once per call, at once, not counted as a retry: the rejected request
    // was not run, so it has no usage to charge.
    call.field_switched = true;
    call.field = openai::other_field(call.field);
    learned_model_ = request.model;
    learned_field_ = call.field;
    call.http_request.body = dump_json(openai::encode_request(request, call.field));
    emit_retry(call, Millis(0), openai::to_string(call.field));
    call.retryable = false;
    return std::nullopt;
  }
  call.retryable = is_retryable_status(response.status, response.headers);
  call.last_kind = Kind::kHttpStatus;
  return std::nullopt;
}

std::optional<ModelResult> HttpModelClient::attempt_once(const ModelRequest& request, Call& call) {
  call.hint.reset();
  call.retryable = false;
  http::Response response;
  try {
    response = http_.send(call.http_request);
  } catch (const http::TransportError& error) {  // the HTTP transport's one error
    if (error.kind() == http::TransportError::Kind::kCancelled || cancelled()) {
      return ProviderError(Kind::kCancelled, 0, "model call cancelled");
    }
    if (error.kind() == http::TransportError::Kind::kTooLarge) {
      // The endpoint answered, just not with a reply: asking again would
      // read (and may bill) the same again.
      return ProviderError(Kind::kBadResponse, 0, error.what());
    }
    call.last_status = 0;
    call.last_error = error.what();
    call.last_kind =
        error.kind() == http::TransportError::Kind::kTimeout ? Kind::kTimeout : Kind::kTransport;
    call.retryable = error.kind() != http::TransportError::Kind::kTls;
    return std::nullopt;
  }
  return answered(request, response, call);
}

std::optional<ModelResult> HttpModelClient::wait_to_retry(const ModelRequest& request, Call& call) {
  if (!call.retryable || call.attempt >= options_.retries_max) {
    if (call.retryable) {
      call.last_error += " (after " + std::to_string(call.attempt + 1) + " attempts)";
    }
    return ProviderError(call.last_kind, call.last_status, call.last_error);
  }
  const Millis delay = retry_delay(call.attempt, call.hint, options_.jitter());
  if (clock_.now() + delay >= request.deadline) {
    return ProviderError(call.last_kind, call.last_status,
                         call.last_error + " (no retry: the wait would pass the run's deadline)");
  }
  emit_retry(call, delay);
  if (beat_) beat_();
  clock_.sleep_for(delay);
  if (beat_) beat_();
  ++call.attempt;
  return std::nullopt;
}

ModelResult HttpModelClient::complete(const ModelRequest& request) {
  Call call;
  call.field = token_limit_field(request.model);
  call.http_request = build(request, call.field);
  call.http_request.cancel = options_.cancel;
  if (options_.traceparent) {
    if (std::string parent = options_.traceparent(); !parent.empty()) {
      call.http_request.headers.emplace_back("traceparent", std::move(parent));
    }
  }
  for (;;) {
    if (cancelled()) return ProviderError(Kind::kCancelled, 0, "model call cancelled");
    const Millis remaining = std::chrono::duration_cast<Millis>(request.deadline - clock_.now());
    if (remaining.count() <= 0) {
      return ProviderError(
          Kind::kTimeout, call.last_status,
          "no time left before the run's deadline" +
              (call.last_error.empty() ? std::string() : "; last error: " + call.last_error));
    }
    call.http_request.timeout = attempt_timeout(options_.call_timeout, remaining);
    const bool switched_before = call.field_switched;
    if (std::optional<ModelResult> ended = attempt_once(request, call)) return std::move(*ended);
    if (call.field_switched != switched_before) continue;  // the other token field, at once
    if (std::optional<ModelResult> ended = wait_to_retry(request, call)) return std::move(*ended);
  }
}

}  // namespace hb::runner
