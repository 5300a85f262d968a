// The operator's HTTP edge under hostile clients, in process: /healthz-like
// latency (a fresh connection per request, as the kubelet probes) quiet and
// with slow clients holding heads open, and RSS with many connections and
// after a declared 1 GiB body. Prints numbers; asserts nothing.
//   build/bench/kube/hb_http_server_bench
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "http/http.h"
#include "tests/support/raw_client.h"

namespace {

using hb::test_support::RawClient;
using Clock = std::chrono::steady_clock;

constexpr int kProbes = 2000;
constexpr int kSlowClients = 200;
constexpr int kManyConnections = 600;

long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

void probe_latency(int port, const char* label) {
  std::vector<double> ms;
  for (int i = 0; i < kProbes; ++i) {
    const auto t0 = Clock::now();
    RawClient c(port);
    c.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    if (hb::test_support::status_of(c.read_all()) != 200) std::printf("  probe failed\n");
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%-44s p50 %.3f ms  p99 %.3f ms\n", label, ms[ms.size() / 2],
              ms[ms.size() * 99 / 100]);
}

}  // namespace

int main() {
  hb::http::ServerLimits limits;
  limits.connections_max = 1024;  // measure memory, not the cap
  limits.body_bytes_max = 0;
  auto server = hb::http::make_server(
      "127.0.0.1:0", [](const hb::http::ServerRequest&) { return hb::http::ServerResponse{}; },
      limits);
  const int port = server->port();
  const long idle = rss_kib();
  probe_latency(port, "quiet");
  {
    std::vector<std::unique_ptr<RawClient>> slow;
    for (int i = 0; i < kSlowClients; ++i) {
      slow.push_back(std::make_unique<RawClient>(port));
      slow.back()->send("GET /healthz HTTP/1.1\r\nHost: x\r\n");  // never finished
    }
    probe_latency(port, "with 200 slow clients holding heads open");
  }
  {
    std::vector<std::unique_ptr<RawClient>> many;
    for (int i = 0; i < kManyConnections; ++i) {
      many.push_back(std::make_unique<RawClient>(port));
      many.back()->send("G");
    }
    std::printf("RSS idle %.1f MiB, with %d open connections %.1f MiB\n", idle / 1024.0,
                kManyConnections, rss_kib() / 1024.0);
  }
  const long before = rss_kib();
  RawClient big(port);
  big.send("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n");
  big.send(std::string(16 << 20, 'x'));
  const int status = hb::test_support::status_of(big.read_all());
  std::printf("a declared 1 GiB body: %d, RSS %+.1f MiB\n", status, (rss_kib() - before) / 1024.0);
  return 0;
}
