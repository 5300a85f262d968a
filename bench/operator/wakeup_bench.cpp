// The wakeup endpoint through the real HTTP server (loopback, keep-alive) with
// a fake backend (agents in memory, creates answered at once): requests/s
// held with the per-agent bucket on: 2,000 agents woken in turn (each bucket
// refilling between its turns) and one agent flooded (its bucket answers
// 429). Prints numbers; asserts nothing.
//   build/bench/operator/hb_operator_wakeup_bench
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "http/http.h"
#include "operator/wakeup.h"
#include "tests/support/raw_client.h"

namespace {

using namespace hb;
using Clock = std::chrono::steady_clock;
using controllers::Json;

constexpr int kAgents = 2000;
constexpr int kRequests = 20000;
const std::string kToken = "bench-token-0123456789abcdef";

double run(int port, bool one_agent, int& created, int& limited) {
  test_support::RawClient c(port);
  const auto t0 = Clock::now();
  for (int i = 0; i < kRequests; ++i) {
    const std::string name = one_agent ? "a0" : "a" + std::to_string(i % kAgents);
    const std::string body = R"({"reason":"bench"})";
    c.send("POST /api/v1/namespaces/team/agents/" + name +
           "/wakeup HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kToken +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    const int status = test_support::status_of(c.read_response());
    created += status == 201;
    limited += status == 429;
  }
  return kRequests / std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main() {
  spdlog::set_level(spdlog::level::warn);  // a line per wakeup would be the measurement
  std::map<std::string, Json> agents;
  for (int i = 0; i < kAgents; ++i) {
    const std::string name = "a" + std::to_string(i);
    agents[name] = {{"metadata", {{"namespace", "team"}, {"name", name}, {"uid", "u" + name}}},
                    {"spec", {{"heartbeat", {{"prompt", "x"}}}}}};
  }
  int serial = 0;
  operator_::WakeupBackend backend{
      [&](const std::string&, const std::string& name) -> std::optional<Json> {
        auto it = agents.find(name);
        if (it == agents.end()) return std::nullopt;
        return it->second;
      },
      [&](const std::string&, const Json& run) -> kube::Result<Json> {
        Json made = run;
        made["metadata"]["name"] = "r" + std::to_string(serial++);
        return made;
      },
      [](const std::string&, const std::string&) -> kube::Result<Json> { return Json::object(); },
      [] { return std::chrono::system_clock::now(); }};
  const operator_::TokenDigest digest = operator_::token_digest(kToken);
  operator_::WakeupLimits limits;
  // The source and namespace buckets are the bench's one client: wide open,
  // so what is measured is the per-agent bucket and the handler.
  limits.per_source = {1e9, 1e9};
  limits.per_namespace = {1e9, 1e9};
  operator_::WakeupService service(
      std::move(backend), {[&](const std::string&) { return std::optional(digest); }, nullptr},
      [](const std::string&) {}, [] { return true; }, limits);
  auto server = http::make_server("127.0.0.1:0",
                                  [&](const http::ServerRequest& r) { return service.handle(r); });
  int created = 0, limited = 0;
  const double spread = run(server->port(), false, created, limited);
  std::printf(
      "%d agents in turn, 10 requests each: %.0f requests/s (%d created, %d answered 429)\n",
      kAgents, spread, created, limited);
  created = limited = 0;
  const double flood = run(server->port(), true, created, limited);
  std::printf("one agent flooded: %.0f requests/s (%d created, %d answered 429)\n", flood, created,
              limited);
  return 0;
}
