// The cents held ahead for runs in flight (budget_hold_ahead.h), shared by
// every reconcile worker: deciding and holding under one lock, so two
// workers cannot both give away the same room. Held from a run's start to
// its charge; a restarted operator holds again what each in-flight run's
// Job says was held for it (kAnnotationBudgetHold), before its first start.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "controllers/spend/budget_hold_ahead.h"

namespace hb::controllers {

class BudgetHolds {
 public:
  struct Hold {
    std::string agent_key;
    std::vector<std::string> pools;  // the budgets the cents are held against
    double cents = 0;
  };

  // decide_hold against what other runs hold and, when the run may start
  // under some budget, holds what it was given (replacing its own earlier hold).
  HoldDecision take(const std::string& run_key, const std::string& agent_key,
                    const std::vector<BudgetRoom>& rooms, double worst_case_cents);
  // The run was charged, ended or never started: its cents are free again.
  void release(const std::string& run_key);
  // The agent's holds for runs not in `going_on` (run keys) end: runs
  // charged or deleted since.
  void keep_only(const std::string& agent_key, const std::set<std::string>& going_on);
  // A hold read from an in-flight run's Job (kept if the run holds already).
  void restore(const std::string& run_key, Hold hold);
  // Whether the restart's holds were read (restored_all), and marking it.
  bool restored() const;
  void restored_all();
  double held(const std::string& pool) const;
  std::size_t size() const;

 private:
  void add_locked(const std::string& run_key, Hold hold);
  void erase_locked(std::map<std::string, Hold>::iterator it);

  struct PoolSum {
    double cents = 0;
    std::size_t holds = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Hold> holds_;                      // by run key
  std::map<std::string, PoolSum> by_pool_;                 // holds_ per pool
  std::map<std::string, std::set<std::string>> by_agent_;  // holds_' run keys per agent
  bool restored_ = false;
};

}  // namespace hb::controllers
