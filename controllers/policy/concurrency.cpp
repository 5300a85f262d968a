#include "controllers/policy/concurrency.h"

#include <algorithm>
#include <map>
#include <optional>

#include "api/hb_assert.h"
#include "controllers/model/policy_spec.h"
#include "controllers/model/run_view.h"

namespace hb::controllers {

// A policy's cap is one the operator-wide gate can hold.
static_assert(kPolicyMaxConcurrentRunsMax <= kMaxConcurrentRunsMax);

bool starts_before(const StartCandidate& a, const StartCandidate& b) {
  return a.order != b.order ? a.order < b.order : a.agent < b.agent;
}

std::string limit_name(std::string_view pool) {
  if (pool == kOperatorPool) return std::string(kOperatorLimit);
  // A policy selects agents of its own namespace, so its name says enough.
  const std::size_t slash = pool.find('/');
  const std::string_view name = slash == std::string_view::npos ? pool : pool.substr(slash + 1);
  HB_ASSERT_MSG(!name.empty(), "a policy's pool names the policy");
  return "HeartbeatPolicy " + std::string(name) + ", maxConcurrentRuns";
}

Admission admit_start(int64_t cap, int64_t in_use,
                      const std::vector<const StartCandidate*>& waiting_in_order,
                      const StartCandidate& candidate, std::string_view limit) {
  HB_ASSERT_MSG(in_use >= 0, "places in use are a count");
  if (cap <= 0) return Admission::yes();
  const int64_t free_places = std::max<int64_t>(cap - in_use, 0);
  int64_t ahead = 0;
  for (const StartCandidate* w : waiting_in_order) {
    if (!starts_before(*w, candidate)) break;
    if (w->agent != candidate.agent) ++ahead;
  }
  if (ahead < free_places) {
    HB_ASSERT_MSG(in_use + ahead < cap, "an admitted start never passes the cap");
    return Admission::yes(ahead);
  }
  std::string message = "waiting: " + std::to_string(std::min(in_use, cap)) + " of " +
                        std::to_string(cap) + " concurrent runs in use (" + std::string(limit) +
                        "); " + std::to_string(ahead) + " run(s) asked for earlier start first";
  return Admission::no(ahead, std::move(message));
}

Admission admit_start_in_pools(const std::vector<PoolState>& pools,
                               const StartCandidate& candidate) {
  Admission result = Admission::yes();
  for (const PoolState& p : pools) {
    Admission a = admit_start(p.cap, p.in_use, p.line, candidate, limit_name(p.pool));
    if (a.admitted) {
      if (result.admitted) result.ahead = std::max(result.ahead, a.ahead);
    } else if (result.admitted || a.ahead > result.ahead) {
      result = std::move(a);
    }
  }
  HB_ASSERT_MSG(result.admitted == result.message.empty(), "a refusal says why, and only it");
  return result;
}

Admission admit_from_snapshot(const GateSnapshot& gate, const StartCandidate& candidate) {
  const std::vector<std::string>& held = gate.runs_holding_place;
  if (std::find(held.begin(), held.end(), candidate.run) != held.end()) return Admission::yes();
  std::vector<PoolState> pools;
  pools.reserve(gate.pools.size());
  for (const PoolSnapshot& p : gate.pools) {
    PoolState state{p.pool, p.cap, p.in_use, {}};
    state.line.reserve(p.line.size());
    for (const StartCandidate& w : p.line) state.line.push_back(&w);
    HB_ASSERT_MSG(std::is_sorted(state.line.begin(), state.line.end(),
                                 [](const StartCandidate* a, const StartCandidate* b) {
                                   return starts_before(*a, *b);
                                 }),
                  "a snapshot's line is in start order");
    pools.push_back(std::move(state));
  }
  return admit_start_in_pools(pools, candidate);
}

std::vector<std::string> agents_to_wake(
    int64_t cap, int64_t in_use, const std::vector<const StartCandidate*>& waiting_in_order) {
  std::vector<std::string> agents;
  const int64_t free_places =
      cap <= 0 ? static_cast<int64_t>(waiting_in_order.size()) : std::max<int64_t>(cap - in_use, 0);
  for (const StartCandidate* w : waiting_in_order) {
    if (static_cast<int64_t>(agents.size()) >= free_places) break;
    agents.push_back(w->agent);
  }
  HB_ASSERT(cap <= 0 || in_use + static_cast<int64_t>(agents.size()) <= std::max(cap, in_use));
  return agents;
}

std::vector<std::string> agents_to_wake_in_pools(
    const std::vector<PoolState>& pools,
    const std::vector<const StartCandidate*>& waiting_in_order) {
  // Per agent: the lines it stands in, and those that would admit it. Within
  // a line each agent stands once, so its position is the count ahead of it.
  std::map<std::string, std::pair<int, int>> lines_and_admits;
  for (const PoolState& p : pools) {
    for (const StartCandidate* w : p.line) ++lines_and_admits[w->agent].first;
    for (const std::string& agent : agents_to_wake(p.cap, p.in_use, p.line)) {
      ++lines_and_admits[agent].second;
    }
  }
  std::vector<std::string> agents;
  for (const StartCandidate* w : waiting_in_order) {
    const auto it = lines_and_admits.find(w->agent);
    HB_ASSERT_MSG(it == lines_and_admits.end() || it->second.second <= it->second.first,
                  "a line admits only an agent standing in it");
    if (it == lines_and_admits.end() || it->second.first == it->second.second) {
      agents.push_back(w->agent);
    }
  }
  HB_ASSERT(agents.size() <= waiting_in_order.size());
  return agents;
}

bool run_holds_place(const Json* run, bool has_job) {
  if (run == nullptr) return false;
  const std::optional<RunPhase> phase = parse_run_phase(string_view_at(*run, "status/phase"));
  if (phase && is_final(*phase)) return false;
  return has_job || phase == RunPhase::kRunning;
}

std::string agent_of_run(std::string_view run_key, const Json& run) {
  const std::string_view name = string_view_at(run, "spec/agentRef/name");
  const std::size_t slash = run_key.find('/');
  if (name.empty() || slash == std::string_view::npos) return {};
  HB_ASSERT_MSG(slash > 0, "a run's key begins with its namespace");
  return object_key(run_key.substr(0, slash), name);
}

}  // namespace hb::controllers
