// A run's metadata (spec.metadata; issue 18): a small string map a wakeup's
// caller attaches (a task id, a priority), kept on the run and shown to the
// model. One check for the wakeup endpoint, the operator's copy into the
// context document and the runner's parse. Pure.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "api/contract_limits.h"

namespace hb::api {

using RunMetadata = std::map<std::string, std::string>;

// "" when `key` is usable: 1..kRunMetadataKeyCharsMax of [A-Za-z0-9-_.],
// starting and ending alphanumeric (a label name's shape).
std::string run_metadata_key_problem(const std::string& key);
// "" when `metadata` is an object of at most kRunMetadataEntriesMax usable
// keys with string values of at most kRunMetadataValueBytesMax bytes; else
// what is wrong, naming the key and the limit.
std::string run_metadata_problem(const nlohmann::json& metadata);
// The usable entries of whatever is stored (a run made with kubectl may hold
// keys the schema cannot refuse): the rest are left out, at most
// kRunMetadataEntriesMax kept.
RunMetadata usable_run_metadata(const nlohmann::json* metadata);

}  // namespace hb::api
