// Turns one HTTP request into the stand-in model's reply: routes by path
// (OpenAI `.../chat/completions`, Anthropic `.../v1/messages`, `GET /healthz`,
// `GET .../models`), decides (decision.h) and encodes the reply in the
// request's wire format. Pure: the time comes in as arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace hb::fake_model {

struct HttpReply {
  int status = 200;
  std::string body;
  bool hang = false;
  std::string summary;                     // for the one-line request log
  std::optional<int> retry_after_seconds;  // a retry-after header when set
};

// Usage figures: about four bytes of request per prompt token, as English
// text averages, so a heartbeat's cost is realistic and never zero.
inline constexpr std::size_t kBytesPerToken = 4;
inline constexpr int kCompletionTokensBase = 8;

int prompt_tokens_for(std::size_t request_bytes);
int completion_tokens_for(std::size_t reply_bytes);

HttpReply respond(const std::string& method, const std::string& path, const std::string& body,
                  const std::string& now_rfc3339, int64_t now_unix_seconds);

}  // namespace hb::fake_model
