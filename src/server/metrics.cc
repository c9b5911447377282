#include "server/metrics.h"

#include <cmath>
#include <cstdio>

namespace tg::server {
namespace {

std::string Escape(const std::string& v, bool help) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && !help) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Num(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

// Appends `extra` (already rendered, e.g. le="5") to a rendered label set.
std::string WithLabel(const std::string& labels, const std::string& extra) {
  if (labels.empty()) return "{" + extra + "}";
  return labels.substr(0, labels.size() - 1) + "," + extra + "}";
}

const char* TypeName(int t) {
  static const char* kNames[] = {"counter", "gauge", "histogram"};
  return kNames[t];
}

}  // namespace

std::string Metrics::LabelString(const Labels& labels) {
  if (labels.empty()) return "";
  std::string s = "{";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) s += ",";
    s += labels[i].first + "=\"" + Escape(labels[i].second, false) + "\"";
  }
  return s + "}";
}

void Metrics::DeclareCounter(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> l(mu_);
  families_.try_emplace(name, Family{Type::kCounter, help, {}, {}});
}

void Metrics::DeclareGauge(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> l(mu_);
  families_.try_emplace(name, Family{Type::kGauge, help, {}, {}});
}

void Metrics::DeclareHistogram(const std::string& name, const std::string& help,
                               std::vector<double> buckets) {
  std::lock_guard<std::mutex> l(mu_);
  families_.try_emplace(name, Family{Type::kHistogram, help, std::move(buckets), {}});
}

void Metrics::Add(const std::string& name, const Labels& labels, double delta) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = families_.find(name);
  if (it == families_.end() || it->second.type == Type::kHistogram) return;
  it->second.series[LabelString(labels)].value += delta;
}

void Metrics::Set(const std::string& name, const Labels& labels, double value) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = families_.find(name);
  if (it == families_.end() || it->second.type == Type::kHistogram) return;
  it->second.series[LabelString(labels)].value = value;
}

void Metrics::Observe(const std::string& name, const Labels& labels, double value) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = families_.find(name);
  if (it == families_.end() || it->second.type != Type::kHistogram) return;
  Family& f = it->second;
  Series& s = f.series[LabelString(labels)];
  if (s.bucket_counts.empty()) s.bucket_counts.assign(f.buckets.size(), 0);
  for (std::size_t i = 0; i < f.buckets.size(); ++i) {
    if (value <= f.buckets[i]) ++s.bucket_counts[i];
  }
  s.sum += value;
  ++s.count;
}

void Metrics::Remove(const std::string& name, const Labels& labels) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = families_.find(name);
  if (it != families_.end()) it->second.series.erase(LabelString(labels));
}

double Metrics::Value(const std::string& name, const Labels& labels) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return 0.0;
  auto s = it->second.series.find(LabelString(labels));
  return s == it->second.series.end() ? 0.0 : s->second.value;
}

std::string Metrics::Render() const {
  std::lock_guard<std::mutex> l(mu_);
  std::string out;
  out.reserve(8192);
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + Escape(f.help, true) + "\n";
    out += "# TYPE " + name + " " + TypeName(static_cast<int>(f.type)) + "\n";
    for (const auto& [labels, s] : f.series) {
      if (f.type != Type::kHistogram) {
        out += name + labels + " " + Num(s.value) + "\n";
        continue;
      }
      for (std::size_t i = 0; i < f.buckets.size(); ++i) {
        out += name + "_bucket" + WithLabel(labels, "le=\"" + Num(f.buckets[i]) + "\"") + " " +
               std::to_string(s.bucket_counts[i]) + "\n";
      }
      out += name + "_bucket" + WithLabel(labels, "le=\"+Inf\"") + " " + std::to_string(s.count) +
             "\n";
      out += name + "_sum" + labels + " " + Num(s.sum) + "\n";
      out += name + "_count" + labels + " " + std::to_string(s.count) + "\n";
    }
  }
  return out;
}

std::vector<double> Metrics::LatencyBuckets() {
  return {1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25,
          0.5,  1,      2.5,  5,    10,     30,   60,   120,   300,  600};
}

std::vector<double> Metrics::CountBuckets() { return {1, 2, 4, 8, 16, 32, 64}; }

}  // namespace tg::server
