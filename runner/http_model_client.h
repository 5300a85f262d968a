// ModelClient over the project's HTTP interface: OpenAI Chat Completions or
// Anthropic Messages, with retries (408, 409, 429, 5xx, connection failures,
// timeouts) by retry_policy, a timeout on every attempt, and no attempt or
// wait past the request's deadline. insufficient_quota is never retried.
// OpenAI: max_tokens or max_completion_tokens by openai::token_limit_field_for;
// a 400 rejecting the field sent is answered by one more attempt with the
// other field (no wait, not counted as a retry), and later calls keep it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "api/context_document.h"
#include "http/http.h"
#include "runner/clock.h"
#include "runner/conversation.h"
#include "runner/openai_wire.h"
#include "runner/transcript.h"

namespace hb::runner {

struct HttpModelClientOptions {
  api::Provider provider = api::Provider::kOpenAI;
  std::string base_url;  // OpenAI: ".../v1"; Anthropic: without "/v1"
  std::string api_key;   // sent in a header only; never logged
  Millis call_timeout = std::chrono::duration_cast<Millis>(std::chrono::seconds(120));
  int retries_max = 4;
  std::function<double()> jitter;              // uniform [0, 1); default: std::random_device
  std::shared_ptr<http::CancelSource> cancel;  // aborts a call in flight (SIGTERM)
  // OpenAI only. None: openai::token_limit_field_for(base_url, request.model).
  std::optional<openai::TokenLimitField> token_limit_field;
  // Sent as the W3C `traceparent` header when it returns non-empty (the
  // heartbeat's trace: otel_trace.h); unset: none.
  std::function<std::string()> traceparent;
};

// The endpoint URL for a provider and base URL.
std::string model_endpoint(api::Provider provider, const std::string& base_url);

class HttpModelClient final : public ModelClient {
 public:
  HttpModelClient(HttpModelClientOptions options, http::Client& http, Clock& clock,
                  Transcript* transcript = nullptr, std::function<void()> beat = {});
  ModelResult complete(const ModelRequest& request) override;

 private:
  // One call's state across its attempts.
  struct Call;
  http::Request build(const ModelRequest& request, openai::TokenLimitField field) const;
  openai::TokenLimitField token_limit_field(const std::string& model) const;
  ModelResult decode(const std::string& body) const;
  bool cancelled() const;
  // One attempt: its result when the call ends with it (a reply, or a
  // failure no retry can mend); nullopt when it may be tried again.
  std::optional<ModelResult> attempt_once(const ModelRequest& request, Call& call);
  std::optional<ModelResult> answered(const ModelRequest& request, const http::Response& response,
                                      Call& call);
  // After a failed attempt: the wait before the next, or the call's end.
  std::optional<ModelResult> wait_to_retry(const ModelRequest& request, Call& call);
  void emit_retry(const Call& call, Millis delay, std::string_view switched_to = {});
  std::string describe_error(const http::Response& response) const;

  HttpModelClientOptions options_;
  http::Client& http_;
  Clock& clock_;
  Transcript* transcript_;
  std::function<void()> beat_;
  std::string url_;
  // The field a 400 taught us, for this model.
  std::string learned_model_;
  std::optional<openai::TokenLimitField> learned_field_;
};

}  // namespace hb::runner
