// OpenAI Chat Completions wire format (POST {baseURL}/chat/completions), as
// spoken by OpenAI, Ollama, vLLM and LiteLLM.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runner/conversation.h"

namespace hb::runner::openai {

nlohmann::json encode_request(const ModelRequest& request);
// Throws ProviderError(kBadResponse) when the body is not a chat completion.
ModelReply decode_response(const std::string& body);
// "message (type, code)" from an error body, or a prefix of the raw body.
std::string error_message(const std::string& body);
// code or type "insufficient_quota": billing, never retried.
bool is_insufficient_quota(const std::string& body);

}  // namespace hb::runner::openai
