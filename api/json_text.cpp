#include "api/json_text.h"

namespace hb::api {
namespace {

// The builder json::parse uses, told not to throw; it keeps the message of
// the error it would have thrown (sax_parse calls this by name, not virtually).
class DomBuilderKeepingTheError : public nlohmann::detail::json_sax_dom_parser<nlohmann::json> {
 public:
  explicit DomBuilderKeepingTheError(nlohmann::json& root)
      : json_sax_dom_parser(root, /*allow_exceptions=*/false) {}
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& error) {
    message = error.what();
    return false;
  }
  std::string message;
};

}  // namespace

Expected<nlohmann::json, JsonTextError> parse_json_text(std::string_view text) {
  nlohmann::json root;
  DomBuilderKeepingTheError builder(root);
  if (!nlohmann::json::sax_parse(text, &builder)) return JsonTextError{builder.message};
  return root;
}

}  // namespace hb::api
