// Drops members a cache has no use for from compact JSON text, without
// building a tree: the informer's cheap transform (client-go's
// SetTransform), e.g. the operator's copy of the context document on every
// cached Job and Pod.
#pragma once

#include <string>
#include <string_view>

namespace hb::kube {

// Removes every member `"key":"..."` whose value is a string from compact
// JSON text (no whitespace between tokens, as the API server and
// nlohmann::json::dump write it), with one adjoining comma. Returns how many
// were removed. Inside a JSON string every quote is escaped, so the pattern
// can only match a real member; text it cannot vouch for (an unterminated
// value) is left as it is.
int strip_string_members(std::string& compact_json, std::string_view key);

}  // namespace hb::kube
