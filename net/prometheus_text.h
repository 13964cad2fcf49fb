#pragma once
// What both binaries' /metrics answer: metric families built from plain values at scrape
// time and rendered by prometheus-cpp's TextSerializer (text exposition format 0.0.4).
// Rendering from values rather than keeping long-lived series objects means a series whose
// subject is gone (a pod, a node) disappears from /metrics at once, with nothing to clean.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>

namespace gleaner::net {

using MetricLabels = std::vector<prometheus::ClientMetric::Label>;

prometheus::MetricFamily metric_family(std::string name, std::string help,
                                       prometheus::MetricType type);
// One series of a counter or gauge family.
void add_series(prometheus::MetricFamily& family, double value, MetricLabels labels = {});
prometheus::MetricFamily gauge_family(std::string name, std::string help, double value);
prometheus::MetricFamily counter_family(std::string name, std::string help, double value);
// A family keyed by one label, a series per entry of `totals`; beyond `max_values` series
// the rest are summed into one labelled "other", so a bug that invents label values cannot
// blow up the series count.
prometheus::MetricFamily labelled_family(
    std::string name, std::string help, const std::string& label,
    const std::map<std::string, uint64_t>& totals,
    prometheus::MetricType type = prometheus::MetricType::Counter, size_t max_values = 32);
// A histogram family of one series: `histogram`'s buckets, sum and count now.
prometheus::MetricFamily histogram_family(std::string name, std::string help,
                                          const prometheus::Histogram& histogram);

std::string serialize_families(const std::vector<prometheus::MetricFamily>& families);

}  // namespace gleaner::net
