// A Kubernetes LabelSelector (matchLabels, matchExpressions with In, NotIn,
// Exists, DoesNotExist), parsed once with errors that name the field, then
// matched against an object's labels. Pure. An empty selector selects
// everything (as a HeartbeatPolicy's does: every Agent of its namespace).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "controllers/model/json_util.h"

namespace hb::controllers {

// Bounds the apiserver's own validation keeps (a label value is at most 63
// bytes); the counts bound the work a hostile selector can ask for.
inline constexpr std::size_t kSelectorRequirementsMax = 32;
inline constexpr std::size_t kSelectorValuesMax = 64;
inline constexpr std::size_t kLabelKeyBytesMax = 253 + 1 + 63;
inline constexpr std::size_t kLabelValueBytesMax = 63;

enum class SelectorOp { kIn, kNotIn, kExists, kDoesNotExist };

struct SelectorRequirement {
  std::string key;
  SelectorOp op = SelectorOp::kExists;
  std::vector<std::string> values;  // sorted (In, NotIn)
};

struct LabelSelector {
  std::vector<SelectorRequirement> requirements;  // matchLabels become In {value}
  bool empty() const { return requirements.empty(); }
};

struct SelectorParse {
  LabelSelector selector;
  std::vector<std::string> errors;  // each names the field under `path`
};

// `selector`: the LabelSelector object (null or absent: empty). `path`
// names it in errors ("spec.selector").
SelectorParse parse_label_selector(const Json* selector, const std::string& path);

bool selector_matches(const LabelSelector& selector,
                      const std::map<std::string, std::string>& labels);

// metadata.labels of an object as a map (non-string values are skipped).
std::map<std::string, std::string> labels_of(const Json& object);

}  // namespace hb::controllers
