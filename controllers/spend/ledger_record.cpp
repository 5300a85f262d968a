#include "controllers/spend/ledger_record.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "api/hb_assert.h"
#include "api/object_names.h"
#include "api/saturating.h"
#include "controllers/model/names.h"
#include "controllers/model/run_cost.h"
#include "controllers/schedule/spend.h"
#include "controllers/schedule/spend_day.h"
#include "controllers/schedule/stable_hash.h"

namespace hb::controllers {

namespace {

constexpr double kMicroCentsPerCentDouble = 1e6;
// The record counts in the resolution the status spend is rounded to.
static_assert(kMicroCentsPerCentDouble == kSpendUnitsPerCent);
// Salt of the ledger name's hash (any fixed number: names must never change).
constexpr uint64_t kLedgerNameSalt = 0x6c6564676572ULL;  // "ledger"

// "YYYY-MM" of the month before `period` ("2026-01" -> "2025-12").
std::string month_before(const std::string& period) {
  int year = 0;
  int month = 0;
  if (std::sscanf(period.c_str(), "%d-%d", &year, &month) != 2) return period;
  HB_ASSERT_MSG(month >= 1 && month <= 12, "the period is a spend_period month");
  if (--month == 0) {
    month = 12;
    --year;
  }
  char out[32];
  std::snprintf(out, sizeof out, "%04d-%02d", year, month);
  // drop_old_periods keeps the keys from this one on: it must sort first.
  HB_ASSERT(std::string_view(out) < period);
  return out;
}

void drop_old_periods(LedgerRecord& record, TimePoint now) {
  static_assert(kLedgerPeriodsKept == 2, "the oldest month kept is the one before now's");
  const std::string oldest = month_before(schedule::spend_period(now));
  record.periods.erase(record.periods.begin(), record.periods.lower_bound(oldest));
  std::erase_if(record.days,
                [&](const auto& day) { return schedule::day_expired(day.first, now); });
  HB_ASSERT_MSG(record.periods.empty() || record.periods.begin()->first >= oldest,
                "no month older than the one before now's is kept");
}

// A charge's policies, each once.
std::vector<std::string> distinct_policies(const LedgerCharge& charge) {
  std::vector<std::string> names = charge.policies;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  HB_ASSERT(names.size() <= charge.policies.size());
  return names;
}

// The charge's cents (`more`) and, the first time, its tokens.
void add_spend(PeriodSpend& spend, const LedgerCharge& charge, int64_t more, bool first_time) {
  HB_ASSERT_MSG(more >= 0 && (first_time || more > 0),
                "a charge only ever adds to what was counted; a repeat adds only a rise");
  spend.micro_cents = saturating_add(spend.micro_cents, more);
  if (first_time) {
    spend.input_tokens = saturating_add(spend.input_tokens, charge.input_tokens);
    spend.output_tokens = saturating_add(spend.output_tokens, charge.output_tokens);
  }
}

void add_to_policy(PeriodSpend& period, const std::string& policy, int64_t micro_cents) {
  HB_ASSERT_MSG(micro_cents >= 0, "a policy's part of a charge only adds");
  int64_t& sum = period.policy_micro_cents[policy];
  sum = saturating_add(sum, micro_cents);
}

// A charge's part in the days: the agent's day, and each policy's own.
void add_to_days(LedgerRecord& record, const LedgerCharge& charge, int64_t more, bool first_time) {
  const std::string agent_day =
      charge.day.empty() ? schedule::spend_day(charged_at(charge), nullptr) : charge.day;
  PeriodSpend& day = record.days[agent_day];
  add_spend(day, charge, more, first_time);
  for (const std::string& name : distinct_policies(charge)) {
    const auto own = charge.policy_days.find(name);
    add_to_policy(own == charge.policy_days.end() ? day : record.days[own->second], name, more);
  }
}

// Each month's or day's spend by its key, to check a charge never lowers it.
std::map<std::string, int64_t> spent_by_key(const std::map<std::string, PeriodSpend>& spends) {
  std::map<std::string, int64_t> out;
  for (const auto& [key, spend] : spends) out.emplace(key, spend.micro_cents);
  return out;
}

// A key dropped as too old is not a fall.
bool none_fell(const std::map<std::string, int64_t>& before,
               const std::map<std::string, PeriodSpend>& after) {
  for (const auto& [key, micro_cents] : before) {
    const auto it = after.find(key);
    if (it != after.end() && it->second.micro_cents < micro_cents) return false;
  }
  return true;
}

}  // namespace

int64_t to_micro_cents(double cents) {
  const int64_t micro_cents = saturating_int64(std::round(cents * kMicroCentsPerCentDouble));
  HB_ASSERT_MSG(cents < 0 || micro_cents >= 0, "a non-negative figure stays non-negative");
  return micro_cents;
}

std::string ledger_object_name(const std::string& ns, const std::string& agent) {
  // The prefix, a namespace (a DNS-1123 label), a dash and the hash: a name.
  static_assert(std::char_traits<char>::length(kLedgerNamePrefix) + api::kDns1123LabelCharsMax + 1 +
                    16 <=
                kObjectNameCharsMax);
  char hash[17];
  std::snprintf(
      hash, sizeof hash, "%016llx",
      static_cast<unsigned long long>(schedule::stable_hash(ns + "/" + agent, kLedgerNameSalt)));
  std::string name = kLedgerNamePrefix + ns + "-" + hash;
  HB_ASSERT_MSG(name.size() <= kObjectNameCharsMax || ns.size() > api::kDns1123LabelCharsMax,
                "a namespace's ledger name is a valid object name");
  return name;
}

TimePoint charged_at(const LedgerCharge& charge) {
  return charge.admitted_at.value_or(charge.finished_at);
}

void stamp_days(
    std::vector<LedgerCharge>& charges, const date::time_zone* agent_zone,
    const std::function<const date::time_zone*(const std::string& policy)>& policy_zone) {
  for (LedgerCharge& charge : charges) {
    charge.day = schedule::spend_day(charged_at(charge), agent_zone);
    charge.policy_days.clear();
    for (const std::string& policy : charge.policies) {
      charge.policy_days[policy] = schedule::spend_day(charged_at(charge), policy_zone(policy));
    }
    HB_ASSERT_MSG(!charge.day.empty() && charge.policy_days.size() <= charge.policies.size(),
                  "every charge has its agent's day and at most a day per policy");
  }
}

LedgerRecord charge_runs(LedgerRecord record, const std::vector<LedgerCharge>& charges,
                         TimePoint now) {
  const std::map<std::string, int64_t> months_before = spent_by_key(record.periods);
  const std::map<std::string, int64_t> days_before = spent_by_key(record.days);
  for (const LedgerCharge& charge : charges) {
    const int64_t micro_cents = std::max<int64_t>(0, to_micro_cents(charge.cost_cents));
    auto counted = std::find_if(record.counted.begin(), record.counted.end(),
                                [&](const CountedCharge& c) { return c.run == charge.run; });
    const bool first_time = counted == record.counted.end();
    int64_t more = micro_cents;
    std::string period = schedule::spend_period(charged_at(charge));
    if (!first_time) {
      // Charged before (its mark did not land) and observed higher now:
      // only the difference, into the month it was first added to.
      more = micro_cents - counted->micro_cents;
      if (more <= 0) continue;
      counted->micro_cents = micro_cents;
      period = counted->period;
    } else {
      record.counted.push_back({charge.run, micro_cents, period});
    }
    PeriodSpend& spend = record.periods[period];
    add_spend(spend, charge, more, first_time);
    for (const std::string& name : distinct_policies(charge)) add_to_policy(spend, name, more);
    add_to_days(record, charge, more, first_time);
  }
  if (record.counted.size() > kLedgerCountedMax) {
    // Only when marks failed kLedgerCountedMax times over (a new run starts
    // after its predecessor's mark): keep the newest.
    record.counted.erase(record.counted.begin(),
                         record.counted.end() - static_cast<std::ptrdiff_t>(kLedgerCountedMax));
  }
  drop_old_periods(record, now);
  HB_ASSERT(record.counted.size() <= kLedgerCountedMax);
  HB_ASSERT_MSG(none_fell(months_before, record.periods) && none_fell(days_before, record.days),
                "a charge never lowers what a month or a day spent");
  return record;
}

std::vector<LedgerCharge> first_charges(const LedgerRecord& record,
                                        const std::vector<LedgerCharge>& charges) {
  std::vector<LedgerCharge> first;
  for (const LedgerCharge& charge : charges) {
    const bool counted = std::any_of(record.counted.begin(), record.counted.end(),
                                     [&](const CountedCharge& c) { return c.run == charge.run; });
    if (!counted) first.push_back(charge);
  }
  HB_ASSERT(first.size() <= charges.size());
  return first;
}

LedgerRecord forget_marked(LedgerRecord record,
                           const std::function<bool(const std::string& run)>& still_unmarked) {
  const std::size_t before = record.counted.size();
  std::erase_if(record.counted, [&](const CountedCharge& c) { return !still_unmarked(c.run); });
  HB_ASSERT_MSG(record.counted.size() <= before, "forgetting marks only removes");
  return record;
}

Spend spend_in(const LedgerRecord& record, const std::string& period) {
  Spend spend;
  spend.period = period;
  const auto it = record.periods.find(period);
  if (it == record.periods.end()) return spend;
  spend.cents = static_cast<double>(it->second.micro_cents) / kMicroCentsPerCentDouble;
  spend.input_tokens = it->second.input_tokens;
  spend.output_tokens = it->second.output_tokens;
  return spend;
}

double spend_on_day(const LedgerRecord& record, const std::string& day) {
  const auto it = record.days.find(day);
  return it == record.days.end()
             ? 0.0
             : static_cast<double>(it->second.micro_cents) / kMicroCentsPerCentDouble;
}

std::string agent_zone_in(const LedgerRecord& record) {
  // Keys sort by date first; a day only a policy's part landed in (its own
  // zone) charged the agent nothing there.
  for (auto it = record.days.rbegin(); it != record.days.rend(); ++it) {
    const PeriodSpend& day = it->second;
    if (day.micro_cents > 0 || day.input_tokens > 0 || day.output_tokens > 0) {
      return std::string(schedule::zone_of_key(it->first));
    }
  }
  return "";
}

std::vector<LedgerEntry> counted_entries(const LedgerRecord& record) {
  std::vector<LedgerEntry> out;
  for (const CountedCharge& c : record.counted) {
    LedgerEntry entry;
    entry.name = c.run;
    entry.cost_cents = static_cast<double>(c.micro_cents) / kMicroCentsPerCentDouble;
    out.push_back(std::move(entry));
  }
  HB_ASSERT(out.size() == record.counted.size());
  return out;
}

namespace {

Json period_json(const PeriodSpend& p) {
  Json policies = Json::object();
  for (const auto& [name, micros] : p.policy_micro_cents) policies[name] = micros;
  return {{"microCents", p.micro_cents},
          {"inputTokens", p.input_tokens},
          {"outputTokens", p.output_tokens},
          {"policies", std::move(policies)}};
}

bool is_int(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number_integer();
}

std::optional<PeriodSpend> parse_period(const Json& j) {
  if (!is_int(j, "microCents") || !is_int(j, "inputTokens") || !is_int(j, "outputTokens")) {
    return std::nullopt;
  }
  PeriodSpend p{j["microCents"].get<int64_t>(),
                j["inputTokens"].get<int64_t>(),
                j["outputTokens"].get<int64_t>(),
                {}};
  if (j.contains("policies")) {
    if (!j["policies"].is_object()) return std::nullopt;
    for (const auto& [name, micros] : j["policies"].items()) {
      if (!micros.is_number_integer()) return std::nullopt;
      p.policy_micro_cents[name] = micros.get<int64_t>();
    }
  }
  return p;
}

}  // namespace

Json ledger_configmap(const LedgerRecord& record, const std::string& home,
                      const std::string& resource_version) {
  Json periods = Json::object();
  for (const auto& [period, spend] : record.periods) periods[period] = period_json(spend);
  Json days = Json::object();
  for (const auto& [day, spend] : record.days) days[day] = period_json(spend);
  Json counted = Json::array();
  for (const CountedCharge& c : record.counted) {
    counted.push_back({{"run", c.run}, {"microCents", c.micro_cents}, {"period", c.period}});
  }
  const Json data = {{"namespace", record.ns},
                     {"agent", record.agent},
                     {"periods", std::move(periods)},
                     {"days", std::move(days)},
                     {"counted", std::move(counted)}};
  Json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata",
              {{"name", ledger_object_name(record.ns, record.agent)},
               {"namespace", home},
               {"labels",
                {{kLabelLedger, kLedgerKindAgent},
                 {kLabelLedgerNamespace, record.ns},
                 {"app.kubernetes.io/managed-by", "heartbeat-operator"}}},
               {"annotations", {{"heartbeat.dev/agent", record.agent}}}}},
             {"data", {{kLedgerDataKey, data.dump()}}}};
  if (!resource_version.empty()) cm["metadata"]["resourceVersion"] = resource_version;
  return cm;
}

ParsedLedger parse_ledger_configmap(const Json& configmap) {
  const Json* text = find_path(configmap, std::string("data/") + kLedgerDataKey);
  if (text == nullptr || !text->is_string())
    return {std::nullopt, "no data." + std::string(kLedgerDataKey)};
  const Json data = Json::parse(text->get<std::string>(), nullptr, false);
  if (!data.is_object() || !data.contains("namespace") || !data["namespace"].is_string() ||
      !data.contains("agent") || !data["agent"].is_string()) {
    return {std::nullopt, "no namespace and agent"};
  }
  LedgerRecord record;
  record.ns = data["namespace"].get<std::string>();
  record.agent = data["agent"].get<std::string>();
  if (ledger_object_name(record.ns, record.agent) != string_at(configmap, "metadata/name")) {
    return {std::nullopt, "its name is not the one of " + record.ns + "/" + record.agent};
  }
  const Json periods = data.value("periods", Json::object());
  if (!periods.is_object()) return {std::nullopt, "periods is not an object"};
  for (const auto& [period, j] : periods.items()) {
    std::optional<PeriodSpend> p = parse_period(j);
    if (!p) return {std::nullopt, "period " + period + " is malformed"};
    record.periods[period] = std::move(*p);
  }
  const Json days = data.value("days", Json::object());
  if (!days.is_object()) return {std::nullopt, "days is not an object"};
  for (const auto& [day, j] : days.items()) {
    std::optional<PeriodSpend> p = parse_period(j);
    if (!p || schedule::day_of_key(day).empty())
      return {std::nullopt, "day " + day + " is malformed"};
    record.days[day] = std::move(*p);
  }
  const Json counted = data.value("counted", Json::array());
  if (!counted.is_array()) return {std::nullopt, "counted is not a list"};
  for (const Json& c : counted) {
    if (!c.is_object() || !c.contains("run") || !c["run"].is_string() || !is_int(c, "microCents") ||
        !c.contains("period") || !c["period"].is_string()) {
      return {std::nullopt, "a counted run is malformed"};
    }
    record.counted.push_back({c["run"].get<std::string>(), c["microCents"].get<int64_t>(),
                              c["period"].get<std::string>()});
  }
  return {std::move(record), ""};
}

}  // namespace hb::controllers
