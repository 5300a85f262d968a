// The simulation's HTTP edge: an http::Client that answers the real
// kube::Client from the in-memory ApiServer, with faults drawn from the
// seed (5xx, 429 with Retry-After, conflicts, timeouts, and a write applied
// whose answer is lost) and latency: simulated time passes while a request
// is in flight, half before the server applies it and half after, so a
// write can land after the sender's lease or deadline ran out. Each actor
// (operator, runner) has its own.
#pragma once

#include <chrono>
#include <functional>
#include <random>

#include "http/http.h"
#include "tests/sim/api_server.h"

namespace hb::sim {

// Probabilities per request.
struct FaultRates {
  double server_error = 0;  // 500 before the request is applied
  double throttled = 0;     // 429 with Retry-After
  double conflict = 0;      // 409 on a write that would have succeeded
  double timeout = 0;       // no answer, nothing applied
  double lost_answer = 0;   // a write applied, its answer lost (a timeout)
  // Each answered request takes up to this long; a slow one (probability
  // `slow`) takes kSlowRequestMin..kSlowRequestMax instead.
  std::chrono::milliseconds latency_max{0};
  double slow = 0;
};

inline constexpr std::chrono::milliseconds kSlowRequestMin{500};
inline constexpr std::chrono::milliseconds kSlowRequestMax{3000};

// Moves simulated time forward by the given span (the World's clock).
using Elapse = std::function<void(std::chrono::milliseconds)>;

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
  // Requests it matches are answered 503 before they are applied: an outage
  // of part of the API (a webhook, an aggregated API, an etcd member) for
  // as long as the predicate says.
  using Outage = std::function<bool(const http::Request&)>;
  void set_outage(Outage outage) { outage_ = std::move(outage); }
  void set_elapse(Elapse elapse) { elapse_ = std::move(elapse); }
  const TransportStats& stats() const { return stats_; }

 private:
  Answer apply(const http::Request& request);
  bool draw(double p);
  std::chrono::milliseconds draw_latency();

  ApiServer& server_;
  Actor actor_;
  std::mt19937_64& rng_;
  FaultRates rates_;
  Elapse elapse_;
  Outage outage_;
  TransportStats stats_;
};

}  // namespace hb::sim
