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

ModelReply HttpModelClient::decode(const std::string& body) const {
  return options_.provider == api::Provider::kOpenAI ? openai::decode_response(body)
                                                     : anthropic::decode_response(body);
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

ModelReply HttpModelClient::complete(const ModelRequest& request) {
  openai::TokenLimitField field = token_limit_field(request.model);
  bool field_switched = false;
  http::Request http_request = build(request, field);
  http_request.cancel = options_.cancel;
  if (options_.traceparent) {
    if (std::string parent = options_.traceparent(); !parent.empty()) {
      http_request.headers.emplace_back("traceparent", std::move(parent));
    }
  }
  auto cancelled = [&] { return options_.cancel && options_.cancel->cancelled(); };
  auto reset_time = [&](std::optional<Millis> hint) -> std::optional<TimePoint> {
    if (!hint) return std::nullopt;
    return clock_.now() + *hint;
  };
  std::string last_error;
  int last_status = 0;
  Kind last_kind = Kind::kTransport;
  for (int attempt = 0;;) {
    if (cancelled()) throw ProviderError(Kind::kCancelled, 0, "model call cancelled");
    Millis remaining = std::chrono::duration_cast<Millis>(request.deadline - clock_.now());
    if (remaining.count() <= 0) {
      throw ProviderError(Kind::kTimeout, last_status,
                          "no time left before the run's deadline" +
                              (last_error.empty() ? std::string() : "; last error: " + last_error));
    }
    http_request.timeout = attempt_timeout(options_.call_timeout, remaining);
    std::optional<Millis> hint;
    bool retryable = false;
    try {
      http::Response response = http_.send(http_request);
      if (response.status >= 200 && response.status < 300) return decode(response.body);
      last_status = response.status;
      last_error = describe_error(response);
      hint = parse_retry_after(response.headers, clock_.now());
      if (options_.provider == api::Provider::kOpenAI &&
          openai::is_insufficient_quota(response.body)) {
        throw ProviderError(Kind::kQuota, response.status, last_error, reset_time(hint));
      }
      if (is_quota_wait(response.status, hint, clock_.now(), request.deadline)) {
        throw ProviderError(Kind::kQuota, response.status,
                            last_error + " (retry-after " + std::to_string(hint->count() / 1000) +
                                " s: longer than this run may wait)",
                            reset_time(hint));
      }
      if (options_.provider == api::Provider::kOpenAI && !field_switched &&
          openai::rejects_token_limit_field(response.status, response.body, field)) {
        // Once per call, at once, not counted as a retry: the rejected request
        // was not run, so it has no usage to charge.
        field_switched = true;
        field = openai::other_field(field);
        learned_model_ = request.model;
        learned_field_ = field;
        http_request.body = dump_json(openai::encode_request(request, field));
        if (transcript_) {
          transcript_->emit({{"event", "model_retry"},
                             {"attempt", attempt + 1},
                             {"status", last_status},
                             {"error", last_error},
                             {"delayMs", 0},
                             {"switchedTo", std::string(openai::to_string(field))}});
        }
        continue;
      }
      retryable = is_retryable_status(response.status, response.headers);
      last_kind = Kind::kHttpStatus;
    } catch (const http::TransportError& error) {
      if (error.kind() == http::TransportError::Kind::kCancelled || cancelled()) {
        throw ProviderError(Kind::kCancelled, 0, "model call cancelled");
      }
      if (error.kind() == http::TransportError::Kind::kTooLarge) {
        // The endpoint answered, just not with a reply: asking again would
        // read (and may bill) the same again.
        throw ProviderError(Kind::kBadResponse, 0, error.what());
      }
      last_status = 0;
      last_error = error.what();
      last_kind =
          error.kind() == http::TransportError::Kind::kTimeout ? Kind::kTimeout : Kind::kTransport;
      retryable = error.kind() != http::TransportError::Kind::kTls &&
                  error.kind() != http::TransportError::Kind::kCancelled;
    }
    if (!retryable || attempt >= options_.retries_max) {
      if (retryable) last_error += " (after " + std::to_string(attempt + 1) + " attempts)";
      throw ProviderError(last_kind, last_status, last_error);
    }
    Millis delay = retry_delay(attempt, hint, options_.jitter());
    if (clock_.now() + delay >= request.deadline) {
      throw ProviderError(last_kind, last_status,
                          last_error + " (no retry: the wait would pass the run's deadline)");
    }
    if (transcript_) {
      transcript_->emit({{"event", "model_retry"},
                         {"attempt", attempt + 1},
                         {"status", last_status},
                         {"error", last_error},
                         {"delayMs", delay.count()}});
    }
    if (beat_) beat_();
    clock_.sleep_for(delay);
    if (beat_) beat_();
    ++attempt;
  }
}

}  // namespace hb::runner
