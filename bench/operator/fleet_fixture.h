// The fleet both memory benchmarks build: copies of objects the operator,
// kube-controller-manager and the fake kubelet made on the local control
// plane (fixtures/fleet_objects.json, managedFields stripped), renamed per
// agent and run, with what differs between real objects drawn from one
// seeded generator (UIDs, times, each run's output its own prose).
#pragma once

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace hb::bench {

using FixtureJson = nlohmann::json;

inline constexpr const char* kFixturePath = HB_BENCH_FIXTURES "/fleet_objects.json";
inline constexpr const char* kFixtureNamespace = "fleet";

// Text substitution: every occurrence of each template name or uid becomes
// the copy's own, so labels, owners, annotations and references agree.
inline std::string substitute(std::string text,
                              const std::vector<std::pair<std::string, std::string>>& pairs) {
  for (const auto& [from, to] : pairs) {
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  return text;
}

// What varies between real objects, drawn from one seeded generator so
// every run of the bench fills the same fleet.
inline constexpr uint64_t kVarietySeed = 20261127;

class Variety {
 public:
  explicit Variety(uint64_t seed = kVarietySeed) : rng_(seed) {}
  // A version-4 UUID as the API server makes them: 122 random bits.
  std::string uid() {
    const uint64_t high = rng_(), low = rng_();
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%08llx-%04llx-4%03llx-%04llx-%012llx",
                  static_cast<unsigned long long>(high >> 32),
                  static_cast<unsigned long long>((high >> 16) & 0xffff),
                  static_cast<unsigned long long>(high & 0xfff),
                  static_cast<unsigned long long>(0x8000 | (low >> 48 & 0x3fff)),
                  static_cast<unsigned long long>(low & 0xffffffffffffULL));
    return buffer;
  }
  // Prose of `bytes` characters: words of a model's report in random order.
  std::string prose(int bytes) {
    static const std::vector<std::string> kWords = {
        "checked", "the",       "queue",   "opened",  "issue",   "closed",   "two",     "pull",
        "request", "review",    "tests",   "passed",  "failed",  "deploy",   "staging", "found",
        "nothing", "to",        "do",      "updated", "memory",  "notes",    "latency", "p99",
        "rose",    "after",     "release", "rolled",  "back",    "alert",    "paged",   "on-call",
        "summary", "of",        "today",   "three",   "tickets", "waiting",  "for",     "answer",
        "from",    "team",      "cost",    "budget",  "within",  "limits",   "will",    "retry",
        "next",    "heartbeat", "merged",  "branch",  "main",    "database", "backup",  "verified",
        "disk",    "usage",     "at",      "percent", "and",     "a",        "new"};
    std::string out;
    std::uniform_int_distribution<std::size_t> word(0, kWords.size() - 1);
    while (out.size() < static_cast<std::size_t>(bytes)) {
      if (!out.empty()) out += (rng_() % 9 == 0) ? ". " : " ";
      out += kWords[word(rng_)];
    }
    out.resize(static_cast<std::size_t>(bytes));
    return out;
  }
  uint64_t below(uint64_t n) { return rng_() % n; }

 private:
  std::mt19937_64 rng_;
};

inline std::string rfc3339(int64_t unix_seconds) {
  const std::time_t t = unix_seconds;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

// The fixtures' times, each replaced per copy.
inline constexpr const char* kFixtureCreated = "2026-11-27T05:59:03Z";  // the Agent and its Lease
inline constexpr const char* kFixtureStarted = "2026-11-27T06:00:03Z";
inline constexpr const char* kFixtureFinished = "2026-11-27T06:00:05Z";
inline constexpr const char* kFixtureNext = "2026-11-27T06:01:03Z";
inline constexpr const char* kFixtureCleanup = "2026-11-27T06:02:03Z";  // the Job's TTL
inline constexpr const char* kOutputPlaceholder = "@OUTPUT@";
inline constexpr int64_t kFixtureDayStart = 1795737600;  // 2026-11-27T00:00:00Z

struct Templates {
  std::string agent, run, run_in_flight, job, pod, lease;
  std::string agent_name, agent_uid, run_name, run_uid, job_uid, pod_name, pod_uid, lease_uid;
};

inline Templates load_templates(int output_bytes) {
  std::ifstream in(kFixturePath);
  if (!in) throw std::runtime_error(std::string("cannot read ") + kFixturePath);
  FixtureJson all = FixtureJson::parse(in);
  (void)output_bytes;
  const std::string output = kOutputPlaceholder;  // each copy's own prose
  all["run"]["status"]["output"] = output;
  FixtureJson& states = all["pod"]["status"]["containerStatuses"];
  for (FixtureJson& c : states) {
    if (!c["state"].contains("terminated")) continue;
    FixtureJson message =
        FixtureJson::parse(c["state"]["terminated"]["message"].get<std::string>());
    message["output"] = output;
    c["state"]["terminated"]["message"] = message.dump();
  }
  Templates t;
  t.agent = all["agent"].dump();
  t.run = all["run"].dump();
  FixtureJson running = all["run"];
  for (const char* unset : {"costRecorded", "finishedAt", "exitCode", "stopReason", "output"}) {
    running["status"].erase(unset);
  }
  running["status"]["phase"] = "Running";
  t.run_in_flight = running.dump();
  t.job = all["job"].dump();
  t.pod = all["pod"].dump();
  t.lease = all["lease"].dump();
  t.agent_name = all["agent"]["metadata"]["name"];
  t.agent_uid = all["agent"]["metadata"]["uid"];
  t.run_name = all["run"]["metadata"]["name"];
  t.run_uid = all["run"]["metadata"]["uid"];
  t.job_uid = all["job"]["metadata"]["uid"];
  t.pod_name = all["pod"]["metadata"]["name"];
  t.pod_uid = all["pod"]["metadata"]["uid"];
  t.lease_uid = all["lease"]["metadata"]["uid"];
  return t;
}

}  // namespace hb::bench
