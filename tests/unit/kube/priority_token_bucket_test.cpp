#include "kube/priority_token_bucket.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace hb::kube {
namespace {

using namespace std::chrono_literals;
using Ticket = PriorityTokenBucket::Ticket;

const PriorityTokenBucket::TimePoint kStart{};

TEST(PriorityTokenBucket, SpendsTheBurstAtOnceThenOneTokenPerInterval) {
  PriorityTokenBucket bucket(/*qps=*/10, /*burst=*/3, kStart);
  for (int i = 0; i < 5; ++i) bucket.enqueue({RequestClass::kLifecycle, 0});
  EXPECT_EQ(bucket.grant(kStart).size(), 3u);
  EXPECT_EQ(bucket.next_token_at(), kStart + 100ms);
  EXPECT_TRUE(bucket.grant(kStart + 99ms).empty());
  EXPECT_EQ(bucket.grant(kStart + 100ms).size(), 1u);
  EXPECT_EQ(bucket.grant(kStart + 200ms).size(), 1u);
  EXPECT_EQ(bucket.waiting(), 0u);
  EXPECT_FALSE(bucket.next_token_at().has_value());
}

TEST(PriorityTokenBucket, ADispatchNeverWaitsBehindBookkeepingThatQueuedFirst) {
  PriorityTokenBucket bucket(10, 1, kStart);
  bucket.enqueue({RequestClass::kLifecycle, 0});
  ASSERT_EQ(bucket.grant(kStart).size(), 1u);  // the burst is spent: saturated
  const Ticket bookkeeping = bucket.enqueue({RequestClass::kBookkeeping, 0});
  const Ticket lifecycle = bucket.enqueue({RequestClass::kLifecycle, 0});
  const Ticket dispatch = bucket.enqueue({RequestClass::kDispatch, 0});
  EXPECT_EQ(bucket.grant(kStart + 100ms), std::vector<Ticket>{dispatch});
  EXPECT_EQ(bucket.grant(kStart + 200ms), std::vector<Ticket>{lifecycle});
  EXPECT_EQ(bucket.grant(kStart + 300ms), std::vector<Ticket>{bookkeeping});
}

TEST(PriorityTokenBucket, AWithdrawnTicketLeavesTheLineAndTakesNoToken) {
  PriorityTokenBucket bucket(10, 1, kStart);
  bucket.enqueue({RequestClass::kLifecycle, 0});
  ASSERT_EQ(bucket.grant(kStart).size(), 1u);
  const Ticket gave_way = bucket.enqueue({RequestClass::kLifecycle, 0});
  const Ticket after = bucket.enqueue({RequestClass::kBookkeeping, 0});
  EXPECT_TRUE(bucket.withdraw(gave_way));
  EXPECT_FALSE(bucket.withdraw(gave_way)) << "not waiting any more";
  EXPECT_EQ(bucket.waiting(), 1u);
  EXPECT_EQ(bucket.grant(kStart + 100ms), std::vector<Ticket>{after});
  EXPECT_FALSE(bucket.withdraw(after)) << "served: not waiting";
  EXPECT_FALSE(bucket.next_token_at().has_value());
}

TEST(PriorityTokenBucket, WithinAClassTheEarliestSlotFirstThenArrival) {
  PriorityTokenBucket bucket(10, 1, kStart);
  bucket.enqueue({RequestClass::kDispatch, 0});
  ASSERT_EQ(bucket.grant(kStart).size(), 1u);
  const Ticket late_slot = bucket.enqueue({RequestClass::kDispatch, 1'800'000'060});
  const Ticket early_first = bucket.enqueue({RequestClass::kDispatch, 1'800'000'000});
  const Ticket early_second = bucket.enqueue({RequestClass::kDispatch, 1'800'000'000});
  std::vector<Ticket> order;
  for (int i = 1; i <= 3; ++i) {
    for (Ticket t : bucket.grant(kStart + i * 100ms)) order.push_back(t);
  }
  EXPECT_EQ(order, (std::vector<Ticket>{early_first, early_second, late_slot}));
}

TEST(PriorityTokenBucket, AClockReadOutOfOrderAddsNoTokens) {
  PriorityTokenBucket bucket(10, 1, kStart + 1s);
  bucket.enqueue({});
  bucket.enqueue({});
  EXPECT_EQ(bucket.grant(kStart + 1s).size(), 1u);
  EXPECT_TRUE(bucket.grant(kStart).empty());
  EXPECT_TRUE(bucket.grant(kStart + 1s).empty());
}

// Randomised: whatever the mix of classes, the bucket never grants more than
// burst + qps * elapsed, serves every waiter in the end (nothing dropped),
// and never serves a waiter while a better one that was already queued waits.
TEST(PriorityTokenBucket, SaturatedByMixedClassesItKeepsTheBudgetAndTheOrder) {
  constexpr double kQps = 20;
  constexpr int kBurst = 30;
  std::mt19937 random(7);
  for (int trial = 0; trial < 50; ++trial) {
    PriorityTokenBucket bucket(kQps, kBurst, kStart);
    std::map<Ticket, std::tuple<int, int64_t, Ticket>> key_of;
    std::size_t enqueued = 0, granted = 0;
    auto now = kStart;
    for (int step = 0; step < 400; ++step) {
      now += std::chrono::milliseconds(random() % 60);
      for (int n = random() % 3; n > 0; --n) {
        const RequestPriority p{static_cast<RequestClass>(random() % kRequestClassCount),
                                static_cast<int64_t>(random() % 5)};
        const Ticket t = bucket.enqueue(p);
        key_of[t] = {static_cast<int>(p.cls), p.order, t};
        ++enqueued;
      }
      for (Ticket t : bucket.grant(now)) {
        for (const auto& [other, key] : key_of) {
          ASSERT_FALSE(key < key_of.at(t)) << "a better waiter was passed over";
        }
        key_of.erase(t);
        ++granted;
      }
      const double elapsed = std::chrono::duration<double>(now - kStart).count();
      ASSERT_LE(granted, kBurst + kQps * elapsed + 1e-9);
    }
    while (bucket.waiting() > 0) {
      now = *bucket.next_token_at();
      granted += bucket.grant(now).size();
    }
    EXPECT_EQ(granted, enqueued);
  }
}

}  // namespace
}  // namespace hb::kube
