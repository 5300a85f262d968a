// OpenAI Chat Completions wire format (POST {baseURL}/chat/completions), as
// spoken by OpenAI, Ollama, vLLM and LiteLLM.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "runner/conversation.h"

namespace hb::runner::openai {

// The request field that carries ModelRequest::max_tokens. OpenAI's reasoning
// models (o1, o3, o4-mini, gpt-5, ...) reject max_tokens and want
// max_completion_tokens; Ollama, vLLM, LiteLLM and older servers know only
// max_tokens.
enum class TokenLimitField { kMaxTokens, kMaxCompletionTokens };
std::string_view to_string(TokenLimitField field);  // the JSON field name
TokenLimitField other_field(TokenLimitField field);

// The official OpenAI API: host api.openai.com, or Azure OpenAI
// (*.openai.azure.com), which serves the same models.
bool is_official_openai(const std::string& base_url);
// o1, o3, o4, ... (alone or with a "-suffix": o3-mini, o1-2024-12-17) and
// gpt-5 or later (gpt-5, gpt-5-mini, gpt-5.1); case-insensitive, any
// "provider/" prefix ignored.
bool is_reasoning_model(const std::string& model);
// kMaxCompletionTokens for a reasoning model on the official API, else kMaxTokens.
TokenLimitField token_limit_field_for(const std::string& base_url, const std::string& model);
// A 400 (or 422) saying that the field sent is not supported ("Unsupported
// parameter: 'max_tokens' ... Use 'max_completion_tokens' instead", "Unrecognized
// request argument supplied: max_completion_tokens", "extra inputs are not
// permitted" at max_completion_tokens): the request may be sent once more with
// the other field. Such an answer carries no usage, so nothing is charged twice.
bool rejects_token_limit_field(int status, const std::string& body, TokenLimitField sent);

nlohmann::json encode_request(const ModelRequest& request,
                              TokenLimitField field = TokenLimitField::kMaxTokens);
// A kBadResponse ProviderError when the body is not a chat completion.
ModelResult decode_response(const std::string& body);
// "message (type, code)" from an error body, or a prefix of the raw body.
std::string error_message(const std::string& body);
// code or type "insufficient_quota": billing, never retried.
bool is_insufficient_quota(const std::string& body);

}  // namespace hb::runner::openai
