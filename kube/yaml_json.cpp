#include "kube/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <system_error>

namespace hb::kube {
namespace {

// [-+]?[0-9]+
bool is_int(std::string_view t) {
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) t.remove_prefix(1);
  return !t.empty() && t.find_first_not_of("0123456789") == std::string_view::npos;
}

// [-+]? (digits [. digits?] | . digits) ([eE] [-+]? digits)?
bool is_float(std::string_view t) {
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) t.remove_prefix(1);
  size_t i = 0, int_digits = 0, frac_digits = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i, ++int_digits;
  if (i < t.size() && t[i] == '.') {
    ++i;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i, ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '-' || t[i] == '+')) ++i;
    size_t exp_digits = 0;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == t.size();
}

nlohmann::json scalar_to_json(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return text;  // quoted
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL")
    return nullptr;
  // from_chars takes no '+'; a number out of the double's or int64's range stays text.
  std::string_view digits = text;
  if (digits.front() == '+') digits.remove_prefix(1);
  const char* end = digits.data() + digits.size();
  if (is_int(text)) {
    long long value = 0;
    const auto [at, ec] = std::from_chars(digits.data(), end, value);
    return ec == std::errc() && at == end ? nlohmann::json(value) : nlohmann::json(text);
  }
  if (is_float(text)) {
    double value = 0;
    const auto [at, ec] = std::from_chars(digits.data(), end, value);
    return ec == std::errc() && at == end ? nlohmann::json(value) : nlohmann::json(text);
  }
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

// "SOURCE: PROBLEM at line N: DETAIL" (yaml-cpp's marks count from 0).
Error yaml_error(const std::string& source, const std::string& problem, const YAML::Mark& mark,
                 const std::string& detail) {
  Error error;
  error.kind = ErrorKind::kConfig;
  error.context = source;
  error.message = problem;
  if (!mark.is_null()) error.message += " at line " + std::to_string(mark.line + 1);
  error.message += ": " + detail;
  return error;
}

}  // namespace

Result<std::vector<nlohmann::json>> yaml_documents_to_json(const std::string& text,
                                                           const std::string& source) {
  std::vector<nlohmann::json> out;
  // yaml-cpp reports errors by throwing: caught here, at the calls into it.
  try {
    for (const auto& doc : YAML::LoadAll(text)) {
      if (doc.IsNull() || !doc.IsDefined()) continue;
      out.push_back(to_json(doc));
    }
  } catch (const YAML::ParserException& e) {
    return yaml_error(source, "not valid YAML", e.mark, e.msg);
  } catch (const YAML::Exception& e) {  // a map key that is not a scalar
    return yaml_error(source, "cannot be JSON", e.mark, e.msg);
  }
  return out;
}

Result<std::vector<nlohmann::json>> yaml_file_to_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    Error error;
    error.kind = ErrorKind::kConfig;
    error.context = path;
    error.message = "cannot read the file";
    return error;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return yaml_documents_to_json(ss.str(), path);
}

}  // namespace hb::kube
