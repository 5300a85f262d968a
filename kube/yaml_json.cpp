#include "kube/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace hb::kube {
namespace {

nlohmann::json scalar_to_json(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return text;  // quoted
  static const std::regex kInt(R"(^[-+]?[0-9]+$)");
  static const std::regex kFloat(R"(^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$)");
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL")
    return nullptr;
  if (std::regex_match(text, kInt)) {
    try {
      return std::stoll(text);
    } catch (const std::out_of_range&) {
      return text;
    }
  }
  if (std::regex_match(text, kFloat)) return std::stod(text);
  return text;
}

nlohmann::json to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = to_json(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(to_json(item));
      return out;
    }
    case YAML::NodeType::Scalar:
      return scalar_to_json(node);
    default:
      return nullptr;
  }
}

}  // namespace

std::vector<nlohmann::json> yaml_documents_to_json(const std::string& text,
                                                   const std::string& source) {
  std::vector<nlohmann::json> out;
  try {
    for (const auto& doc : YAML::LoadAll(text)) {
      if (doc.IsNull() || !doc.IsDefined()) continue;
      out.push_back(to_json(doc));
    }
  } catch (const YAML::ParserException& e) {
    throw std::runtime_error(source + ": not valid YAML at line " +
                             std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return out;
}

std::vector<nlohmann::json> yaml_file_to_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return yaml_documents_to_json(ss.str(), path);
}

}  // namespace hb::kube
