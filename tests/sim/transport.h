// The simulation's HTTP edge: an http::Client that answers the real
// kube::Client from the in-memory ApiServer, with faults drawn from the
// seed (5xx, 429 with Retry-After, conflicts, timeouts, and a write applied
// whose answer is lost). Each actor (operator, runner) has its own.
#pragma once

#include <random>

#include "kube/http.h"
#include "tests/sim/api_server.h"

namespace hb::sim {

// Probabilities per request.
struct FaultRates {
  double server_error = 0;  // 500 before the request is applied
  double throttled = 0;     // 429 with Retry-After
  double conflict = 0;      // 409 on a write that would have succeeded
  double timeout = 0;       // no answer, nothing applied
  double lost_answer = 0;   // a write applied, its answer lost (a timeout)
};

struct TransportStats {
  uint64_t requests = 0;
  uint64_t faults = 0;
};

class Transport final : public http::Client {
 public:
  Transport(ApiServer& server, Actor actor, std::mt19937_64& rng)
      : server_(server), actor_(actor), rng_(rng) {}

  http::Response send(const http::Request& request) override;
  http::Response stream(const http::Request& request, const http::ChunkHandler&) override;

  void set_faults(const FaultRates& rates) { rates_ = rates; }
  const TransportStats& stats() const { return stats_; }

 private:
  Answer apply(const http::Request& request);
  bool draw(double p);

  ApiServer& server_;
  Actor actor_;
  std::mt19937_64& rng_;
  FaultRates rates_;
  TransportStats stats_;
};

}  // namespace hb::sim
