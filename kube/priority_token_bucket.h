// A token bucket whose waiters are served by priority (request_priority.h),
// not by arrival: qps tokens a second, at most `burst` saved, never more
// granted than that. Pure: time is passed in, so the order is table-tested;
// kube::Client does the waiting.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "kube/request_priority.h"

namespace hb::kube {

class PriorityTokenBucket {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Ticket = uint64_t;

  PriorityTokenBucket(double qps, int burst, TimePoint start);

  // Queues a request; it is served by grant() once a token is free and no
  // waiter ahead of it (a lower class, then a lower order, then earlier) waits.
  Ticket enqueue(RequestPriority priority);
  // Takes a ticket that was not served out of the line (its request gave
  // way, request_priority.h); false when it was not waiting.
  bool withdraw(Ticket ticket);
  // Hands out every token available at `now`, best waiter first; returns the
  // tickets served, in that order.
  std::vector<Ticket> grant(TimePoint now);
  // When the next token frees up for a waiter; nullopt when nobody waits.
  std::optional<TimePoint> next_token_at() const;
  std::size_t waiting() const { return waiters_.size(); }

 private:
  void refill(TimePoint now);

  double qps_;
  double burst_;
  double tokens_;
  TimePoint tokens_at_;
  Ticket next_ticket_ = 0;
  // (class, order, ticket): the set's order is the service order.
  std::set<std::tuple<uint8_t, int64_t, Ticket>> waiters_;
};

}  // namespace hb::kube
