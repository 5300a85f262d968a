#include "controllers/shell/run_index.h"

#include <algorithm>
#include <limits>

#include "api/hb_assert.h"
#include "controllers/model/run_view.h"

namespace hb::controllers {

// Kubernetes object names are at most 253 bytes; an entry holds up to this.
constexpr std::size_t kRunNameBytesMax = std::numeric_limits<uint16_t>::max();

namespace {

// What the operator's run names begin with for this agent ("<name>-").
std::string run_name_prefix(std::string_view agent_key) {
  const std::size_t slash = agent_key.find('/');
  std::string prefix(slash == std::string_view::npos ? agent_key : agent_key.substr(slash + 1));
  prefix += '-';
  return prefix;
}

}  // namespace

std::optional<std::string_view> RunIndex::Agent::kept_form(std::string_view full,
                                                           std::string_view prefix) const {
  if (prefix_bytes == 0) return full;
  if (full.substr(0, prefix.size()) != prefix) return std::nullopt;
  return full.substr(prefix_bytes);
}

std::string RunIndex::Agent::full_name(const Entry& e, std::string_view prefix) const {
  std::string out(prefix.substr(0, prefix_bytes));
  out += name_of(e);
  return out;
}

void RunIndex::Agent::put_prefix_back(std::string_view prefix) {
  std::string full;
  full.reserve(names.size() - dead_bytes + runs.size() * prefix_bytes);
  for (Entry& e : runs) {
    const std::string name = full_name(e, prefix);
    e.offset = static_cast<uint32_t>(full.size());
    e.length = static_cast<uint16_t>(name.size());
    full.append(name);
  }
  names = std::move(full);
  dead_bytes = 0;
  prefix_bytes = 0;
}

std::vector<RunIndex::Entry>::const_iterator RunIndex::Agent::find(std::string_view name) const {
  return std::lower_bound(runs.begin(), runs.end(), name,
                          [this](const Entry& e, std::string_view n) { return name_of(e) < n; });
}

RunIndex::Entry* RunIndex::Agent::find_mutable(std::string_view name) {
  auto at = find(name);
  if (at == runs.end() || name_of(*at) != name) return nullptr;
  return &runs[static_cast<std::size_t>(at - runs.begin())];
}

void RunIndex::Agent::compact() {
  std::string live;
  live.reserve(names.size() - dead_bytes);
  for (Entry& e : runs) {
    const std::string_view name = name_of(e);
    e.offset = static_cast<uint32_t>(live.size());
    live.append(name);
  }
  names = std::move(live);
  dead_bytes = 0;
}

// Room left for more names when `names` grows: a little, not the doubling
// std::string does (at 10,000 agents that slack would be 40% of the names,
// 193 of 481 bytes an agent). Growing copies at most an agent's names (a few KB
// at the largest history), once every few runs.
constexpr std::size_t kNamesHeadroomBytesMin = 48;
constexpr std::size_t kNamesHeadroomFraction = 8;  // names.size() / this
// Erased names' bytes are packed away once they are more than this part.
constexpr std::size_t kDeadNamesFractionMax = 4;  // names.size() / this

void RunIndex::Agent::append_name(std::string_view name) {
  if (names.size() + name.size() > names.capacity()) {
    std::string grown;
    grown.reserve(names.size() + name.size() +
                  std::max(kNamesHeadroomBytesMin, names.size() / kNamesHeadroomFraction));
    grown.append(names);
    names = std::move(grown);
  }
  names.append(name);
}

bool RunIndex::set(const std::string& agent_key, std::string_view full_name,
                   const IndexedRun& facts) {
  HB_ASSERT(full_name.size() <= kRunNameBytesMax);
  Agent& agent = by_agent_[agent_key];
  const std::string prefix = run_name_prefix(agent_key);
  if (agent.runs.empty()) {
    agent.names.clear();
    const bool prefixed = full_name.size() > prefix.size() && full_name.starts_with(prefix);
    agent.prefix_bytes = prefixed ? static_cast<uint16_t>(prefix.size()) : 0;
  }
  std::optional<std::string_view> kept = agent.kept_form(full_name, prefix);
  if (!kept) {
    agent.put_prefix_back(prefix);
    kept = full_name;
  }
  const std::string_view run_name = *kept;
  if (Entry* e = agent.find_mutable(run_name)) {
    const bool became_settled = facts.settled && !e->settled;
    e->finished_at = facts.finished_at;
    e->settled = facts.settled;
    e->output_kept = facts.output_kept;
    return became_settled;
  }
  Entry e{facts.finished_at, static_cast<uint32_t>(agent.names.size()),
          static_cast<uint16_t>(std::min(run_name.size(), kRunNameBytesMax)), facts.settled,
          facts.output_kept};
  const auto at = agent.find(run_name);  // before the name is appended: `names` may move
  const auto place = static_cast<std::size_t>(at - agent.runs.begin());
  agent.append_name(run_name.substr(0, e.length));
  agent.runs.insert(agent.runs.begin() + static_cast<std::ptrdiff_t>(place), e);
  return facts.settled;
}

void RunIndex::forget_if_empty(Agents::iterator it) {
  if (it->second.runs.empty() && !it->second.context_runs) by_agent_.erase(it);
}

void RunIndex::erase(const std::string& agent_key, std::string_view run_name) {
  auto it = by_agent_.find(agent_key);
  if (it == by_agent_.end()) return;
  Agent& agent = it->second;
  const std::optional<std::string_view> kept =
      agent.kept_form(run_name, run_name_prefix(agent_key));
  if (!kept) return;
  auto at = agent.find(*kept);
  if (at != agent.runs.end() && agent.name_of(*at) == *kept) {
    agent.dead_bytes += at->length;
    agent.runs.erase(at);
    if (agent.runs.empty()) {
      agent.names.clear();
      agent.names.shrink_to_fit();
      agent.dead_bytes = 0;
    } else if (agent.dead_bytes * kDeadNamesFractionMax > agent.names.size()) {
      agent.compact();
    }
  }
  forget_if_empty(it);
}

const RunIndex::Entry* RunIndex::entry(const std::string& agent_key,
                                       std::string_view run_name) const {
  auto it = by_agent_.find(agent_key);
  if (it == by_agent_.end()) return nullptr;
  const Agent& agent = it->second;
  const std::optional<std::string_view> kept =
      agent.kept_form(run_name, run_name_prefix(agent_key));
  if (!kept) return nullptr;
  auto at = agent.find(*kept);
  return at != agent.runs.end() && agent.name_of(*at) == *kept ? &*at : nullptr;
}

bool RunIndex::settled(const std::string& agent_key, std::string_view run_name) const {
  const Entry* e = entry(agent_key, run_name);
  return e != nullptr && e->settled;
}

bool RunIndex::unsettled(const std::string& agent_key, std::string_view run_name) const {
  const Entry* e = entry(agent_key, run_name);
  return e != nullptr && !e->settled;
}

std::vector<std::string> RunIndex::names(const std::string& agent_key) const {
  std::vector<std::string> out;
  if (auto it = by_agent_.find(agent_key); it != by_agent_.end()) {
    const std::string prefix = run_name_prefix(agent_key);
    out.reserve(it->second.runs.size());
    for (const Entry& e : it->second.runs) out.push_back(it->second.full_name(e, prefix));
  }
  return out;
}

bool RunIndex::set_context_runs(const std::string& agent_key, std::optional<int> context_runs) {
  if (!context_runs) {
    auto it = by_agent_.find(agent_key);
    if (it == by_agent_.end()) return false;
    it->second.context_runs.reset();
    forget_if_empty(it);
    return false;
  }
  Agent& agent = by_agent_[agent_key];
  const int wanted = std::max(0, *context_runs);
  const bool lowered = !agent.context_runs || wanted < *agent.context_runs;
  agent.context_runs = wanted;
  return lowered;
}

std::optional<int> RunIndex::context_runs(const std::string& agent_key) const {
  auto it = by_agent_.find(agent_key);
  return it == by_agent_.end() ? std::nullopt : it->second.context_runs;
}

int RunIndex::settled_later(const Agent& agent, std::string_view prefix, std::string_view name,
                            TimePoint finished_at) {
  // Kept names compare among themselves as the full names do; a name
  // without their prefix is compared in full.
  const std::optional<std::string_view> kept = agent.kept_form(name, prefix);
  int later = 0;
  for (const Entry& other : agent.runs) {
    if (!other.settled) continue;
    if (kept) {
      const std::string_view other_name = agent.name_of(other);
      if (other_name == *kept) continue;
      if (finished_after(other.finished_at, other_name, finished_at, *kept)) ++later;
    } else if (finished_after(other.finished_at, agent.full_name(other, prefix), finished_at,
                              name)) {
      ++later;
    }
  }
  return later;
}

bool RunIndex::in_output_window(const std::string& agent_key, std::string_view run_name,
                                TimePoint finished_at) const {
  auto it = by_agent_.find(agent_key);
  if (it == by_agent_.end() || !it->second.context_runs) return true;
  return settled_later(it->second, run_name_prefix(agent_key), run_name, finished_at) <
         *it->second.context_runs;
}

void RunIndex::set_output_kept(const std::string& agent_key, std::string_view run_name, bool kept) {
  auto it = by_agent_.find(agent_key);
  if (it == by_agent_.end()) return;
  const std::optional<std::string_view> name =
      it->second.kept_form(run_name, run_name_prefix(agent_key));
  if (!name) return;
  if (Entry* e = it->second.find_mutable(*name)) e->output_kept = kept;
}

std::vector<std::string> RunIndex::outputs_past_window(const std::string& agent_key) const {
  std::vector<std::string> out;
  auto it = by_agent_.find(agent_key);
  if (it == by_agent_.end() || !it->second.context_runs) return out;
  const Agent& agent = it->second;
  // Newest first, as settled_later counts; sorted once, so a long history
  // (historyLimits up to 100 + 100) is cheap.
  std::vector<const Entry*> settled;
  for (const Entry& e : agent.runs) {
    if (e.settled) settled.push_back(&e);
  }
  std::sort(settled.begin(), settled.end(), [&agent](const Entry* a, const Entry* b) {
    return finished_after(a->finished_at, agent.name_of(*a), b->finished_at, agent.name_of(*b));
  });
  const auto window = static_cast<std::size_t>(*agent.context_runs);
  const std::string prefix = run_name_prefix(agent_key);
  for (std::size_t i = window; i < settled.size(); ++i) {
    if (settled[i]->output_kept) out.push_back(agent.full_name(*settled[i], prefix));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hb::controllers
