// A small Prometheus registry: counters, gauges and histograms with labels,
// rendered in the text exposition format. Names follow controller-runtime
// (controller_runtime_reconcile_total, workqueue_depth, ...).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace hb::controllers {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Metrics {
 public:
  void counter_add(const std::string& name, const Labels& labels, double value = 1);
  void gauge_set(const std::string& name, const Labels& labels, double value);
  void observe(const std::string& name, const Labels& labels, double value);  // histogram
  // Many observations at once, already bucketed: per_bucket[i] of them in
  // the family's bucket i (not cumulative; +Inf last), summing to `sum`.
  // Ignored unless per_bucket has one count per bucket and one for +Inf.
  void observe_bucketed(const std::string& name, const Labels& labels,
                        const std::vector<uint64_t>& per_bucket, double sum);
  void describe(const std::string& name, const std::string& type, const std::string& help,
                std::vector<double> buckets = {});
  // Drops the family's series whose label text (label_text) is not in `keep`.
  void retain(const std::string& name, const std::set<std::string>& keep);
  // Called at render time (e.g. to read queue depth or request counts).
  void on_render(std::function<void(Metrics&)> collector);
  std::string render();
  double value(const std::string& name, const Labels& labels) const;  // counters/gauges, for tests
  // The series key of `labels` within a family.
  static std::string label_text(const Labels& labels);

 private:
  struct Family {
    std::string type = "counter";
    std::string help;
    std::vector<double> buckets;
    std::map<std::string, double> values;                 // label text -> value
    std::map<std::string, std::vector<uint64_t>> counts;  // histograms: per bucket (+Inf last)
    std::map<std::string, double> sums;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Family> families_;
  std::vector<std::function<void(Metrics&)>> collectors_;
};

// Registers the families the operator exports, with help texts.
void describe_operator_metrics(Metrics& metrics);

}  // namespace hb::controllers
