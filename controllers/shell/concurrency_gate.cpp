#include "controllers/shell/concurrency_gate.h"

#include <algorithm>

#include "api/hb_assert.h"
#include "controllers/model/json_util.h"
#include "controllers/model/run_view.h"

namespace hb::controllers {

ConcurrencyGate::ConcurrencyGate(int64_t cap, SteadyClock steady, Wake wake, PoolsOf pools_of)
    : cap_(cap),
      steady_(std::move(steady)),
      wake_(std::move(wake)),
      pools_of_(std::move(pools_of)) {
  HB_ASSERT(cap_ >= 0 && cap_ <= kMaxConcurrentRunsMax);
}

// A run is in started_ or in reserved_, never both: a run shown started
// loses its reservation, and a started run is never reserved again.
int64_t ConcurrencyGate::in_use_locked() const {
  return static_cast<int64_t>(started_.size() + reserved_.size());
}

const std::vector<PoolCap>& ConcurrencyGate::policy_pools_locked(const std::string& agent,
                                                                 Membership& memo) const {
  if (const auto it = memo.find(agent); it != memo.end()) return it->second;
  std::vector<PoolCap> pools;
  if (pools_of_ && !agent.empty()) pools = pools_of_(agent);
  std::erase_if(pools, [](const PoolCap& p) { return p.pool.empty() || p.cap <= 0; });
  return memo.emplace(agent, std::move(pools)).first->second;  // map nodes do not move
}

bool ConcurrencyGate::in_pool_locked(const std::string& agent, const std::string& pool,
                                     Membership& memo) const {
  if (pool.empty()) return true;  // the operator-wide pool holds every run
  const std::vector<PoolCap>& pools = policy_pools_locked(agent, memo);
  return std::any_of(pools.begin(), pools.end(), [&](const PoolCap& p) { return p.pool == pool; });
}

std::vector<PoolCap> ConcurrencyGate::pools_locked(const std::string& agent,
                                                   Membership& memo) const {
  std::vector<PoolCap> pools;
  if (cap_ > 0) pools.push_back({std::string(kOperatorPool), cap_});
  for (const PoolCap& p : policy_pools_locked(agent, memo)) {
    const bool seen =
        std::any_of(pools.begin(), pools.end(), [&](const PoolCap& q) { return q.pool == p.pool; });
    if (!seen) pools.push_back(p);
  }
  return pools;
}

int64_t ConcurrencyGate::in_use_locked(const std::string& pool, Membership& memo) const {
  if (pool.empty()) return in_use_locked();
  int64_t n = 0;
  for (const auto& [run, agent] : started_) n += in_pool_locked(agent, pool, memo) ? 1 : 0;
  for (const auto& [run, r] : reserved_) n += in_pool_locked(r.agent, pool, memo) ? 1 : 0;
  return n;
}

std::vector<PoolState> ConcurrencyGate::states_locked(const std::vector<PoolCap>& pools,
                                                      Membership& memo) const {
  std::vector<PoolState> states;
  states.reserve(pools.size());
  for (const PoolCap& p : pools) {
    PoolState s{p.pool, p.cap, in_use_locked(p.pool, memo), {}};
    for (const StartCandidate* w : line_) {
      if (in_pool_locked(w->agent, p.pool, memo)) s.line.push_back(w);
    }
    states.push_back(std::move(s));
  }
  return states;
}

std::string ConcurrencyGate::known_agent_locked(const std::string& run_key) const {
  if (const auto s = started_.find(run_key); s != started_.end()) return s->second;
  if (const auto r = reserved_.find(run_key); r != reserved_.end()) return r->second.agent;
  return {};
}

namespace {
// Where held_by_ files a run: under its agent, or, attributed to none (a Job
// seen before its run), under its namespace ("ns/"), which no agent key equals.
std::string held_by_key(const std::string& run_key, const std::string& agent) {
  if (!agent.empty()) return agent;
  return run_key.substr(0, run_key.find('/') + 1);
}
}  // namespace

void ConcurrencyGate::reindex_locked(const std::string& run_key) {
  if (const auto was = held_as_.find(run_key); was != held_as_.end()) {
    const auto runs = held_by_.find(was->second);
    HB_ASSERT(runs != held_by_.end() && runs->second.erase(run_key) == 1);
    if (runs->second.empty()) held_by_.erase(runs);
    held_as_.erase(was);
  }
  if (!started_.contains(run_key) && !reserved_.contains(run_key)) return;
  const std::string key = held_by_key(run_key, known_agent_locked(run_key));
  held_by_[key].insert(run_key);
  held_as_.emplace(run_key, key);
  HB_ASSERT(held_as_.size() == started_.size() + reserved_.size());
}

bool ConcurrencyGate::erase_waiting_locked(const std::string& agent) {
  auto it = waiting_.find(agent);
  if (it == waiting_.end()) return false;
  line_.erase(&it->second.candidate);
  waiting_.erase(it);
  return true;
}

bool ConcurrencyGate::expire_locked(std::chrono::steady_clock::time_point now) {
  std::size_t reservations = 0;
  while (!reservation_ends_.empty() && reservation_ends_.front().first <= now) {
    auto r = reserved_.find(reservation_ends_.front().second);
    if (r != reserved_.end() && r->second.expires <= now) {
      reserved_.erase(r);
      reindex_locked(reservation_ends_.front().second);
      ++reservations;
    }
    reservation_ends_.pop_front();
  }
  std::vector<std::string> lapsed;
  for (const auto& [agent, w] : waiting_) {
    if (w.expires <= now) lapsed.push_back(agent);
  }
  for (const std::string& agent : lapsed) erase_waiting_locked(agent);
  return reservations != 0 || !lapsed.empty();
}

std::vector<const StartCandidate*> ConcurrencyGate::line_locked() const {
  return {line_.begin(), line_.end()};
}

bool ConcurrencyGate::holds_place_locked(const StartCandidate& candidate) {
  std::string* agent = nullptr;
  if (auto s = started_.find(candidate.run); s != started_.end()) {
    agent = &s->second;
  } else if (auto r = reserved_.find(candidate.run); r != reserved_.end()) {
    agent = &r->second.agent;
  }
  if (agent == nullptr) return false;
  if (agent->empty()) {  // a Job was seen before its run
    *agent = candidate.agent;
    reindex_locked(candidate.run);
  }
  return true;
}

Admission ConcurrencyGate::admit_locked(const StartCandidate& candidate,
                                        std::chrono::steady_clock::time_point now,
                                        bool may_reserve) {
  // Asking again for a run that holds a place keeps that place.
  const bool held = holds_place_locked(candidate);
  Admission a = Admission::yes();
  if (!held) {
    Membership memo;
    a = admit_start_in_pools(states_locked(pools_locked(candidate.agent, memo), memo), candidate);
  }
  erase_waiting_locked(candidate.agent);
  if (a.admitted && may_reserve) {
    if (!held && tracking()) {
      reserved_[candidate.run] = Reservation{now + kReservationTtl, candidate.agent};
      reservation_ends_.emplace_back(now + kReservationTtl, candidate.run);
      reindex_locked(candidate.run);
    }
    return a;
  }
  auto [it, inserted] = waiting_.emplace(candidate.agent, Waiting{candidate, now + kWaitingTtl});
  HB_ASSERT(inserted);
  line_.insert(&it->second.candidate);
  return a;
}

GateSnapshot ConcurrencyGate::snapshot(const std::string& agent,
                                       const std::vector<std::string>& run_keys) {
  const auto now = steady_();
  std::unique_lock lock(mutex_);
  const bool lapsed = expire_locked(now);
  GateSnapshot snap;
  Membership memo;
  for (PoolState& state : states_locked(pools_locked(agent, memo), memo)) {
    PoolSnapshot pool{std::move(state.pool), state.cap, state.in_use, {}};
    pool.line.reserve(state.line.size());
    for (const StartCandidate* w : state.line) pool.line.push_back(*w);
    snap.pools.push_back(std::move(pool));
  }
  std::set<std::string> held;
  for (const std::string& run : run_keys) {
    if (held_as_.contains(run)) held.insert(run);
  }
  for (const std::string& key : {agent, held_by_key(agent, {})}) {
    if (const auto runs = held_by_.find(key); runs != held_by_.end()) {
      held.insert(runs->second.begin(), runs->second.end());
    }
  }
  snap.runs_holding_place.assign(held.begin(), held.end());
  if (lapsed) wake_admissible(lock, agent);
  return snap;
}

bool ConcurrencyGate::stand_in_line(const StartCandidate& candidate) {
  const auto now = steady_();
  std::unique_lock lock(mutex_);
  const bool lapsed = expire_locked(now);
  const Admission a = admit_locked(candidate, now, /*may_reserve=*/false);
  if (lapsed) wake_admissible(lock, candidate.agent);
  return a.admitted;
}

Admission ConcurrencyGate::admit(const StartCandidate& candidate) {
  const auto now = steady_();
  std::unique_lock lock(mutex_);
  const bool lapsed = expire_locked(now);
  Admission a = admit_locked(candidate, now);
  // Lapsed places (or a lapsed place in line ahead) may let others start.
  if (lapsed) wake_admissible(lock, candidate.agent);
  return a;
}

void ConcurrencyGate::wake_admissible(std::unique_lock<std::mutex>& lock,
                                      const std::string& except) {
  Membership memo;
  std::map<std::string, int64_t> caps;  // every pool a waiting agent stands in
  for (const auto& [agent, w] : waiting_) {
    for (const PoolCap& p : pools_locked(agent, memo)) caps.emplace(p.pool, p.cap);
  }
  std::vector<PoolCap> pools;
  for (const auto& [pool, cap] : caps) pools.push_back({pool, cap});
  const std::vector<std::string> agents =
      agents_to_wake_in_pools(states_locked(pools, memo), line_locked());
  lock.unlock();  // the queue takes its own lock
  for (const std::string& agent : agents) {
    if (agent != except) wake_(agent);
  }
}

void ConcurrencyGate::release(const std::string& run_key) {
  std::unique_lock lock(mutex_);
  if (reserved_.erase(run_key) == 0) return;
  reindex_locked(run_key);
  wake_admissible(lock);
}

void ConcurrencyGate::withdraw(const std::string& agent) {
  std::unique_lock lock(mutex_);
  // Standing first in one pool's line, it may have held back those behind
  // it while another pool held it.
  if (erase_waiting_locked(agent)) wake_admissible(lock);
}

void ConcurrencyGate::observe_run(const std::string& run_key, const Json* run, bool has_job) {
  if (!tracking()) return;
  const std::optional<RunPhase> phase =
      run != nullptr ? parse_run_phase(string_view_at(*run, "status/phase")) : std::nullopt;
  const bool ended = run != nullptr && phase && is_final(*phase);
  const bool started = run_holds_place(run, has_job);
  const auto now = steady_();
  std::unique_lock lock(mutex_);
  const int64_t before = in_use_locked();
  std::string agent = run != nullptr ? agent_of_run(run_key, *run) : std::string();
  if (agent.empty()) agent = known_agent_locked(run_key);
  if (started) {
    started_[run_key] = agent;
  } else if (ended || run == nullptr) {
    // A run once seen started keeps its place until it is final or gone: the
    // watchdog deletes a stalled run's Job before it stores Failed, and the
    // Job's informer may show that while the run's still shows Queued (its
    // stored Running not seen yet). Until Failed the run is going on.
    started_.erase(run_key);
  }
  if (run == nullptr && has_job) {
    // A Job whose run the cache does not hold: not yet (the watches race)
    // or no more (the garbage collector is behind). It holds a place as a
    // reservation would, so the caps err on the safe side, but an orphan
    // cannot hold it past kReservationTtl.
    if (reserved_.emplace(run_key, Reservation{now + kReservationTtl, agent}).second) {
      reservation_ends_.emplace_back(now + kReservationTtl, run_key);
    }
  } else if (started || ended || run == nullptr) {
    // A Queued run without its Job keeps its reservation: its start is under way.
    reserved_.erase(run_key);
  }
  reindex_locked(run_key);
  // A run only leaves or joins every pool of its agent at once, so a place
  // frees in some pool exactly when the fleet's count drops.
  if (in_use_locked() < before) wake_admissible(lock);
}

void ConcurrencyGate::pools_changed() {
  std::unique_lock lock(mutex_);
  wake_admissible(lock);
}

int64_t ConcurrencyGate::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_locked();
}

int64_t ConcurrencyGate::in_use(const std::string& pool) const {
  std::lock_guard lock(mutex_);
  Membership memo;
  return in_use_locked(pool, memo);
}

std::size_t ConcurrencyGate::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_.size();
}

std::map<std::string, int64_t> ConcurrencyGate::started_by_agent() const {
  std::map<std::string, int64_t> out;
  std::lock_guard lock(mutex_);
  for (const auto& [run, agent] : started_) ++out[agent];
  return out;
}

}  // namespace hb::controllers
