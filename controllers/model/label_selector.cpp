#include "controllers/model/label_selector.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "api/hb_assert.h"
#include "controllers/model/names.h"

namespace hb::controllers {

// A selector's values are label values, as the operator's own labels are.
static_assert(kLabelValueBytesMax == kLabelValueCharsMax);

namespace {

bool valid_label_value(const std::string& v) {
  if (v.size() > kLabelValueBytesMax) return false;
  return std::all_of(v.begin(), v.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.';
  });
}

// prefix/name or name: name is 1..63 of [A-Za-z0-9-_.], prefix a DNS subdomain.
bool valid_label_key(const std::string& key) {
  if (key.empty() || key.size() > kLabelKeyBytesMax) return false;
  const std::size_t slash = key.find('/');
  const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  if (name.empty() || !valid_label_value(name)) return false;
  if (slash == std::string::npos) return true;
  const std::string prefix = key.substr(0, slash);
  return !prefix.empty() && prefix.size() <= 253 &&
         std::all_of(prefix.begin(), prefix.end(), [](unsigned char c) {
           return std::islower(c) || std::isdigit(c) || c == '-' || c == '.';
         });
}

std::optional<SelectorOp> parse_op(const std::string& op) {
  if (op == "In") return SelectorOp::kIn;
  if (op == "NotIn") return SelectorOp::kNotIn;
  if (op == "Exists") return SelectorOp::kExists;
  if (op == "DoesNotExist") return SelectorOp::kDoesNotExist;
  return std::nullopt;
}

void parse_match_labels(const Json& labels, const std::string& path, SelectorParse& out) {
  if (!labels.is_object()) {
    out.errors.push_back(path + ": must be a map of label keys to values");
    return;
  }
  const std::size_t before = out.selector.requirements.size();
  std::size_t seen = 0;
  for (const auto& [key, value] : labels.items()) {
    if (++seen > kSelectorRequirementsMax + 1) break;  // refused past the bound anyway
    const std::string field = path + "." + key;
    if (!valid_label_key(key)) out.errors.push_back(field + ": not a valid label key");
    if (!value.is_string() || !valid_label_value(value.get<std::string>())) {
      out.errors.push_back(field + ": must be a label value (at most 63 of A-Z a-z 0-9 - _ .)");
      continue;
    }
    out.selector.requirements.push_back({key, SelectorOp::kIn, {value.get<std::string>()}});
  }
  HB_ASSERT_MSG(out.selector.requirements.size() - before <= kSelectorRequirementsMax + 1,
                "matchLabels are parsed no further than one past the bound");
}

void parse_expression(const Json& e, const std::string& field, SelectorParse& out) {
  const std::string key = string_at(e, "key");
  const std::optional<SelectorOp> op = parse_op(string_at(e, "operator"));
  if (!valid_label_key(key)) out.errors.push_back(field + ".key: not a valid label key");
  if (!op) {
    out.errors.push_back(field + ".operator: use In, NotIn, Exists or DoesNotExist");
    return;
  }
  SelectorRequirement r{key, *op, {}};
  const Json* values = find_path(e, "values");
  const bool takes_values = *op == SelectorOp::kIn || *op == SelectorOp::kNotIn;
  const std::size_t count = values != nullptr && values->is_array() ? values->size() : 0;
  if (takes_values && (count == 0 || count > kSelectorValuesMax)) {
    out.errors.push_back(field + ".values: In and NotIn need 1 to " +
                         std::to_string(kSelectorValuesMax) + " values");
  } else if (!takes_values && count > 0) {
    out.errors.push_back(field + ".values: must be empty for Exists and DoesNotExist");
  }
  for (std::size_t i = 0; takes_values && i < count && i < kSelectorValuesMax; ++i) {
    const Json& v = (*values)[i];
    if (!v.is_string() || !valid_label_value(v.get<std::string>())) {
      out.errors.push_back(field + ".values[" + std::to_string(i) + "]: not a label value");
    } else {
      r.values.push_back(v.get<std::string>());
    }
  }
  std::sort(r.values.begin(), r.values.end());
  HB_ASSERT_MSG(r.values.size() <= kSelectorValuesMax && (takes_values || r.values.empty()),
                "a requirement holds at most its cap of values, and only In and NotIn hold any");
  out.selector.requirements.push_back(std::move(r));
}

}  // namespace

SelectorParse parse_label_selector(const Json* selector, const std::string& path) {
  SelectorParse out;
  if (selector == nullptr || selector->is_null()) return out;
  if (!selector->is_object()) {
    out.errors.push_back(path + ": must be a label selector (matchLabels, matchExpressions)");
    return out;
  }
  if (const Json* labels = find_path(*selector, "matchLabels")) {
    parse_match_labels(*labels, path + ".matchLabels", out);
  }
  const Json* expressions = find_path(*selector, "matchExpressions");
  if (expressions == nullptr) return out;
  if (!expressions->is_array()) {
    out.errors.push_back(path + ".matchExpressions: must be a list");
    return out;
  }
  // Past the bound the selector is refused anyway: parse no more of it.
  const std::size_t parsed = std::min(expressions->size(), kSelectorRequirementsMax + 1);
  for (std::size_t i = 0; i < parsed; ++i) {
    parse_expression((*expressions)[i], path + ".matchExpressions[" + std::to_string(i) + "]", out);
  }
  if (out.selector.requirements.size() > kSelectorRequirementsMax) {
    out.errors.push_back(path + ": at most " + std::to_string(kSelectorRequirementsMax) +
                         " labels and expressions");
  }
  HB_ASSERT_MSG(!out.errors.empty() || out.selector.requirements.size() <= kSelectorRequirementsMax,
                "a selector parsed without errors is within its bound");
  return out;
}

bool selector_matches(const LabelSelector& selector,
                      const std::map<std::string, std::string>& labels) {
  for (const SelectorRequirement& r : selector.requirements) {
    // Parsing sorted the values binary_search looks in (a cheap part of it).
    HB_ASSERT(r.values.empty() || r.values.front() <= r.values.back());
    const auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const bool in = has && std::binary_search(r.values.begin(), r.values.end(), it->second);
    switch (r.op) {
      case SelectorOp::kIn:
        if (!in) return false;
        break;
      case SelectorOp::kNotIn:
        if (in) return false;
        break;
      case SelectorOp::kExists:
        if (!has) return false;
        break;
      case SelectorOp::kDoesNotExist:
        if (has) return false;
        break;
    }
  }
  return true;
}

std::map<std::string, std::string> labels_of(const Json& object) {
  std::map<std::string, std::string> out;
  const Json* labels = find_path(object, "metadata/labels");
  if (labels == nullptr || !labels->is_object()) return out;
  for (const auto& [key, value] : labels->items()) {
    if (value.is_string()) out.emplace(key, value.get<std::string>());
  }
  return out;
}

}  // namespace hb::controllers
