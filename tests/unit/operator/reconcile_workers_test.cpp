// The reconcile workers settle each key in the queue by the reconcile's
// outcome and count it (operator/reconcile_workers.h), on a fake clock.
#include "operator/reconcile_workers.h"

#include <gtest/gtest.h>

#include "kube/errors.h"

namespace hb::operator_ {
namespace {

using namespace std::chrono_literals;
using controllers::ReconcileResult;
using Steady = std::chrono::steady_clock;

struct Workers {
  Steady::time_point now = Steady::time_point{} + 1h;
  controllers::WorkQueue queue{[this] { return now; }};
  controllers::Metrics metrics;
  std::atomic<int> active{0};
  std::vector<std::string> reconciled;
  std::function<kube::Result<ReconcileResult>()> outcome = [] { return ReconcileResult{}; };
  ReconcileWorkerDeps deps{queue,
                           [this](const std::string& ns, const std::string& name) {
                             reconciled.push_back(ns + "|" + name);
                             EXPECT_EQ(active, 1) << "counted as active while it runs";
                             now += 2500ms;  // the reconcile takes 2.5 s
                             return outcome();
                           },
                           metrics,
                           "agent",
                           active,
                           [this] { return now; }};
  Workers() { controllers::describe_operator_metrics(metrics); }

  double reconciles(const std::string& result) {
    return metrics.value("controller_runtime_reconcile_total",
                         {{"controller", "agent"}, {"result", result}});
  }
};

TEST(ReconcileWorkers, ASuccessForgetsTheKeysFailures) {
  Workers w;
  w.queue.add_rate_limited("team/bot");
  w.queue.add_rate_limited("team/bot");
  w.now += 1s;
  ASSERT_TRUE(process_next_key(w.deps));
  EXPECT_EQ(w.reconciled, std::vector<std::string>{"team|bot"});
  EXPECT_EQ(w.queue.backoff_for("team/bot"), controllers::kWorkqueueBackoffMin);
  EXPECT_EQ(w.reconciles("success"), 1);
  EXPECT_EQ(w.active, 0);
  EXPECT_EQ(w.queue.stats().processing, 0u) << "done";
  EXPECT_EQ(w.queue.try_get(), std::nullopt);
}

TEST(ReconcileWorkers, ARequeueAfterComesBackThen) {
  Workers w;
  w.outcome = [] { return ReconcileResult{90s}; };
  w.queue.add("team/bot");
  ASSERT_TRUE(process_next_key(w.deps));
  EXPECT_EQ(w.reconciles("requeue_after"), 1);
  EXPECT_EQ(w.reconciles("success"), 0);
  // Asked for at the reconcile's end (the clock moved 2.5 s during it).
  EXPECT_EQ(w.queue.next_ready_at(), w.now + 90s);
}

kube::Error error_of(kube::ErrorKind kind, int code, std::optional<int> retry_after = {}) {
  kube::Error e;
  e.kind = kind;
  e.code = code;
  e.message = "refused";
  e.retry_after_seconds = retry_after;
  e.context = "update agent";
  return e;
}

TEST(ReconcileWorkers, AnErrorRetriesWithBackoffAndIsCounted) {
  Workers w;
  w.outcome = [] { return error_of(kube::ErrorKind::kServerError, 500); };
  w.queue.add("team/bot");
  ASSERT_TRUE(process_next_key(w.deps));
  EXPECT_EQ(w.reconciles("error"), 1);
  EXPECT_EQ(w.metrics.value("controller_runtime_reconcile_errors_total", {{"controller", "agent"}}),
            1);
  EXPECT_EQ(w.queue.stats().retries, 1u);
  EXPECT_EQ(w.queue.next_ready_at(), w.now + controllers::kWorkqueueBackoffMin);
  EXPECT_EQ(w.queue.backoff_for("team/bot"), 2 * controllers::kWorkqueueBackoffMin);
  EXPECT_EQ(w.active, 0);
}

TEST(ReconcileWorkers, AConflictIsRetriedLikeAnyError) {
  Workers w;
  w.outcome = [] { return error_of(kube::ErrorKind::kConflict, 409); };
  w.queue.add("team/bot");
  ASSERT_TRUE(process_next_key(w.deps));
  EXPECT_EQ(w.reconciles("error"), 1);
  EXPECT_EQ(w.queue.stats().retries, 1u);
}

TEST(ReconcileWorkers, AThrottledAnswerWaitsWhatTheServerAskedWithinABound) {
  Workers w;
  w.outcome = [] { return error_of(kube::ErrorKind::kTooManyRequests, 429, 7); };
  w.queue.add("team/bot");
  ASSERT_TRUE(process_next_key(w.deps));
  EXPECT_EQ(w.queue.next_ready_at(), w.now + 7s) << "Retry-After, not the 5 ms backoff";
  EXPECT_EQ(w.queue.backoff_for("team/bot"), 2 * controllers::kWorkqueueBackoffMin)
      << "still counted as a failure";

  Workers hostile;  // a server asking for a day is obeyed for kRetryAfterSecondsMax
  hostile.outcome = [] { return error_of(kube::ErrorKind::kTooManyRequests, 429, 86400); };
  hostile.queue.add("team/bot");
  ASSERT_TRUE(process_next_key(hostile.deps));
  EXPECT_EQ(hostile.queue.next_ready_at(),
            hostile.now + std::chrono::seconds(kRetryAfterSecondsMax));
}

TEST(ReconcileWorkers, APassThatGaveWayIsQueuedAgainAtOnceWithoutCountingAFailure) {
  Workers w;
  w.outcome = [] { return error_of(kube::ErrorKind::kGaveWay, 0); };
  w.queue.add("team/bot");
  ASSERT_TRUE(process_next_key(w.deps));
  EXPECT_EQ(w.reconciles("gave_way"), 1);
  EXPECT_EQ(w.reconciles("error"), 0);
  EXPECT_EQ(w.metrics.value("controller_runtime_reconcile_errors_total", {{"controller", "agent"}}),
            0);
  EXPECT_EQ(w.queue.stats().retries, 0u);
  EXPECT_EQ(w.queue.backoff_for("team/bot"), controllers::kWorkqueueBackoffMin) << "no backoff";
  EXPECT_EQ(w.queue.try_get(), std::optional<std::string>("team/bot")) << "ready now";
}

TEST(ReconcileWorkers, AnExceptionIsABugThatStillRetriesTheKey) {
  Workers w;
  w.outcome = []() -> kube::Result<ReconcileResult> { throw std::runtime_error("boom"); };
  w.queue.add("team/bot");
  ASSERT_TRUE(process_next_key(w.deps));
  EXPECT_EQ(w.reconciles("error"), 1);
  EXPECT_EQ(w.queue.stats().retries, 1u);
  EXPECT_EQ(w.active, 0);
}

TEST(ReconcileWorkers, TheDurationIsMeasuredOnTheInjectedClock) {
  Workers w;
  w.queue.add("team/bot");
  ASSERT_TRUE(process_next_key(w.deps));
  const std::string text = w.metrics.render();
  EXPECT_NE(text.find("controller_runtime_reconcile_time_seconds_sum{controller=\"agent\"} 2.5"),
            std::string::npos)
      << text;
}

TEST(ReconcileWorkers, WorkersEndWhenTheQueueShutsDown) {
  Workers w;
  w.queue.shutdown();
  EXPECT_FALSE(process_next_key(w.deps));
  controllers::WorkQueue queue;
  std::atomic<int> done{0};
  ReconcileWorkerDeps deps{
      queue,
      [&](const std::string&, const std::string&) -> kube::Result<ReconcileResult> {
        ++done;
        return ReconcileResult{};
      },
      w.metrics, "agent", w.active};
  std::vector<std::thread> threads = start_reconcile_workers(3, deps);
  EXPECT_EQ(threads.size(), 3u);
  queue.add("a/1");
  queue.add("a/2");
  queue.shutdown();  // wakes the blocked ones; what was queued may be left
  for (std::thread& t : threads) t.join();
  EXPECT_LE(done, 2);
  EXPECT_EQ(w.active, 0);
}

}  // namespace
}  // namespace hb::operator_
