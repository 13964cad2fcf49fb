#include "net/prometheus_text.h"

#include <sstream>
#include <utility>

#include <prometheus/text_serializer.h>

namespace gleaner::net {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily metric_family(std::string name, std::string help, MetricType type) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

void add_series(MetricFamily& family, double value, MetricLabels labels) {
  ClientMetric m;
  m.label = std::move(labels);
  if (family.type == MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  family.metric.push_back(std::move(m));
}

MetricFamily gauge_family(std::string name, std::string help, double value) {
  auto f = metric_family(std::move(name), std::move(help), MetricType::Gauge);
  add_series(f, value);
  return f;
}

MetricFamily counter_family(std::string name, std::string help, double value) {
  auto f = metric_family(std::move(name), std::move(help), MetricType::Counter);
  add_series(f, value);
  return f;
}

MetricFamily labelled_family(std::string name, std::string help, const std::string& label,
                             const std::map<std::string, uint64_t>& totals, MetricType type,
                             size_t max_values) {
  auto f = metric_family(std::move(name), std::move(help), type);
  double other = 0;
  bool has_other = false;
  for (const auto& [value, total] : totals) {
    if (f.metric.size() + 1 >= max_values) {
      other += static_cast<double>(total);
      has_other = true;
      continue;
    }
    add_series(f, static_cast<double>(total), {{label, value}});
  }
  if (has_other) add_series(f, other, {{label, "other"}});
  return f;
}

MetricFamily histogram_family(std::string name, std::string help,
                              const prometheus::Histogram& histogram) {
  auto f = metric_family(std::move(name), std::move(help), MetricType::Histogram);
  f.metric.push_back(histogram.Collect());
  return f;
}

std::string serialize_families(const std::vector<MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace gleaner::net
