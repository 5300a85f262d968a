// YAML manifests to JSON objects (for applying crds/ and examples/ with our
// own client). Plain scalars become numbers, booleans or null where YAML 1.2's
// core schema says so; quoted scalars stay strings.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hb::kube {

// Every non-empty document of a (multi-document) YAML text. Throws
// std::runtime_error naming `source` and the line on a syntax error.
std::vector<nlohmann::json> yaml_documents_to_json(const std::string& text,
                                                   const std::string& source);
std::vector<nlohmann::json> yaml_file_to_json(const std::string& path);

}  // namespace hb::kube
