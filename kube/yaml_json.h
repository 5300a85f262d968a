// YAML manifests to JSON objects (for applying crds/ and examples/ with our
// own client). Plain scalars become numbers, booleans or null where YAML 1.2's
// core schema says so; quoted scalars stay strings.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kube/errors.h"

namespace hb::kube {

// Every non-empty document of a (multi-document) YAML text, or a kConfig
// Error naming `source` and the line of a syntax error.
Result<std::vector<nlohmann::json>> yaml_documents_to_json(const std::string& text,
                                                           const std::string& source);
Result<std::vector<nlohmann::json>> yaml_file_to_json(const std::string& path);

}  // namespace hb::kube
