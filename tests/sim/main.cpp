// heartbeat-sim: runs the deterministic simulation for a range of seeds and
// prints what it found; a failing seed prints the one command that replays it.
//   heartbeat-sim [--seed=S] [--seeds=N] [--hours=H] [--agents=K] [--jobs=J] [--no-faults]
//                 [--max-concurrent-runs=N] [--policy-max-concurrent-runs=N]
//                 [--start=RFC3339] [--verbose]
// Seeds are independent: J threads (default: one per core) each run whole
// seeds, and the report is printed in seed order, so it reads the same for
// any J.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "controllers/model/json_util.h"
#include "tests/sim/world.h"

namespace {

bool flag(const char* arg, const char* name, std::string& value) {
  const std::size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0 || arg[n] != '=') return false;
  value = arg + n + 1;
  return true;
}

// Runs seeds first..first+count-1 on `jobs` threads; reports in seed order.
std::vector<hb::sim::SimReport> simulate_seeds(hb::sim::SimOptions options, uint64_t count,
                                               unsigned jobs) {
  std::vector<hb::sim::SimReport> reports(count);
  std::atomic<uint64_t> next{0};
  auto work = [&, options]() mutable {
    for (uint64_t i = next++; i < count; i = next++) {
      hb::sim::SimOptions o = options;
      o.seed = options.seed + i;
      reports[i] = hb::sim::simulate(o);
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < jobs; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  return reports;
}

}  // namespace

int main(int argc, char** argv) {
  hb::sim::SimOptions options;
  uint64_t seeds = 1;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < argc; ++i) {
    std::string v;
    if (flag(argv[i], "--seed", v)) {
      options.seed = std::stoull(v);
    } else if (flag(argv[i], "--seeds", v)) {
      seeds = std::stoull(v);
    } else if (flag(argv[i], "--hours", v)) {
      options.hours = std::stod(v);
    } else if (flag(argv[i], "--agents", v)) {
      options.agents = std::stoi(v);
    } else if (flag(argv[i], "--max-concurrent-runs", v)) {
      options.max_concurrent_runs = std::stoll(v);
    } else if (flag(argv[i], "--policy-max-concurrent-runs", v)) {
      options.policy_max_concurrent_runs = std::stoll(v);
    } else if (flag(argv[i], "--jobs", v)) {
      jobs = static_cast<unsigned>(std::max(1, std::stoi(v)));
    } else if (flag(argv[i], "--start", v)) {
      if (!hb::controllers::parse_rfc3339(v)) {
        std::fprintf(stderr, "--start=%s: not an RFC 3339 time (2026-03-29T00:30:00Z)\n",
                     v.c_str());
        return 2;
      }
      options.start = v;
    } else if (std::strcmp(argv[i], "--no-faults") == 0) {
      options.faults = false;
    } else if (std::strcmp(argv[i], "--verbose") == 0) {
      options.verbose = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--seed=S] [--seeds=N] [--hours=H] [--agents=K] [--jobs=J] "
                   "[--max-concurrent-runs=N] [--policy-max-concurrent-runs=N] [--no-faults] "
                   "[--start=RFC3339] [--verbose]\n",
                   argv[0]);
      return 2;
    }
  }
  spdlog::set_level(options.verbose
                        ? (std::getenv("HB_SIM_DEBUG") ? spdlog::level::debug : spdlog::level::info)
                        : spdlog::level::off);
  uint64_t failed = 0, runs = 0, counted = 0, reconciles = 0, crashes = 0, faults = 0, pods = 0;
  uint64_t jumps = 0, leader_changes = 0, freezes = 0, holds = 0, policy_holds = 0;
  uint64_t team_budget_stops = 0, policy_pauses = 0, outages = 0, final_before_running = 0;
  uint64_t reapplies = 0, price_changes = 0, stamp_edits = 0;
  uint64_t jobs_by_next_process = 0, runs_left_by_failed_pass = 0, crashes_after_run_create = 0;
  uint64_t jobs_before_run = 0, crashes_after_job_first = 0, runs_by_next_process = 0;
  double overshoot_cents = 0, overshoot_calls = 0;  // the worst seed's
  int64_t overshoot_runs = 0;
  double run_overshoot_calls = 0;         // the most one run went over, any seed
  double run_overshoot_after_change = 0;  // the same, of runs a person changed limits under
  // One seed at a time when its story is logged, so the lines do not interleave.
  if (options.verbose) jobs = 1;
  const auto threads = static_cast<unsigned>(std::min<uint64_t>(jobs, seeds));
  const auto wall_start = std::chrono::steady_clock::now();
  const std::vector<hb::sim::SimReport> reports = simulate_seeds(options, seeds, threads);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  for (const hb::sim::SimReport& r : reports) {
    const uint64_t s = r.seed;
    options.seed = s;
    runs += r.runs_created;
    counted += r.runs_counted;
    reconciles += r.reconciles;
    crashes += r.crashes;
    jumps += r.clock_jumps;
    leader_changes += r.leader_changes;
    freezes += r.freezes;
    holds += r.concurrency_holds;
    policy_holds += r.policy_holds;
    team_budget_stops += r.policy_budget_stops;
    policy_pauses += r.policy_pauses;
    reapplies += r.reapplies;
    price_changes += r.price_changes;
    stamp_edits += r.stamp_edits;
    jobs_by_next_process += r.jobs_by_next_process;
    runs_left_by_failed_pass += r.runs_left_by_failed_pass;
    crashes_after_run_create += r.crashes_after_run_create;
    jobs_before_run += r.jobs_before_run;
    crashes_after_job_first += r.crashes_after_job_first;
    runs_by_next_process += r.runs_by_next_process;
    if (r.team_overshoot_calls > overshoot_calls) {
      overshoot_calls = r.team_overshoot_calls;
      overshoot_cents = r.team_overshoot_cents;
      overshoot_runs = r.team_overshoot_runs;
    }
    run_overshoot_calls = std::max(run_overshoot_calls, r.run_overshoot_calls);
    run_overshoot_after_change =
        std::max(run_overshoot_after_change, r.run_overshoot_calls_after_change);
    outages += r.run_status_outages;
    final_before_running += r.final_before_running;
    faults += r.api_faults;
    pods += r.node.pods;
    if (options.verbose || !r.violations.empty()) {
      std::printf(
          "seed %llu: %zu violation(s), %llu runs, %llu counted, %llu reconciles "
          "(%llu failed), %llu crashes, %llu relists, %llu API faults, %llu steps, %.2f s\n",
          static_cast<unsigned long long>(s), r.violations.size(),
          static_cast<unsigned long long>(r.runs_created),
          static_cast<unsigned long long>(r.runs_counted),
          static_cast<unsigned long long>(r.reconciles),
          static_cast<unsigned long long>(r.reconcile_errors),
          static_cast<unsigned long long>(r.crashes), static_cast<unsigned long long>(r.relists),
          static_cast<unsigned long long>(r.api_faults), static_cast<unsigned long long>(r.steps),
          r.wall_seconds);
    }
    for (const std::string& v : r.violations) std::printf("  violation: %s\n", v.c_str());
    if (!r.violations.empty()) {
      ++failed;
      std::printf("  replay: %s\n", hb::sim::replay_command(argv[0], options).c_str());
    }
  }
  std::printf(
      "simulated %llu seed(s) x %.1f h, %d agents: %llu violating seed(s); %llu runs "
      "(%llu Pods), %llu counted, %llu reconciles, %llu crashes, %llu leader changes, %llu "
      "frozen leaders, %llu clock jumps, %llu API faults, %llu crashes right after a run "
      "create, %llu Jobs made by another process than their run, %llu runs left without their "
      "Job by a failed pass, %llu Jobs made before their run, %llu crashes right after one, "
      "%llu runs made from their Job by another process, "
      "%llu runs held by the concurrency cap, "
      "%llu runs held by a policy cap, %llu agents stopped by a team budget, %llu policy "
      "pauses, %llu Agents deleted and applied again, %llu price changes, %llu run stamps "
      "rewritten, %llu run status "
      "outages, %llu runs final before Running was stored; "
      "worst team budget overshoot %.4f cents (%.2f model calls, by %lld runs; the most by one "
      "run %.2f calls, %.2f under a person's change of limits); "
      "%.2f s wall on %u thread(s), %.0f heartbeats/s\n",
      static_cast<unsigned long long>(seeds), options.hours, options.agents,
      static_cast<unsigned long long>(failed), static_cast<unsigned long long>(runs),
      static_cast<unsigned long long>(pods), static_cast<unsigned long long>(counted),
      static_cast<unsigned long long>(reconciles), static_cast<unsigned long long>(crashes),
      static_cast<unsigned long long>(leader_changes), static_cast<unsigned long long>(freezes),
      static_cast<unsigned long long>(jumps), static_cast<unsigned long long>(faults),
      static_cast<unsigned long long>(crashes_after_run_create),
      static_cast<unsigned long long>(jobs_by_next_process),
      static_cast<unsigned long long>(runs_left_by_failed_pass),
      static_cast<unsigned long long>(jobs_before_run),
      static_cast<unsigned long long>(crashes_after_job_first),
      static_cast<unsigned long long>(runs_by_next_process), static_cast<unsigned long long>(holds),
      static_cast<unsigned long long>(policy_holds),
      static_cast<unsigned long long>(team_budget_stops),
      static_cast<unsigned long long>(policy_pauses), static_cast<unsigned long long>(reapplies),
      static_cast<unsigned long long>(price_changes), static_cast<unsigned long long>(stamp_edits),
      static_cast<unsigned long long>(outages),
      static_cast<unsigned long long>(final_before_running), overshoot_cents, overshoot_calls,
      static_cast<long long>(overshoot_runs), run_overshoot_calls, run_overshoot_after_change, wall,
      threads, wall > 0 ? runs / wall : 0.0);
  return failed == 0 ? 0 : 1;
}
