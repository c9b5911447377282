// Test helper shared by the Kubernetes audit tests: one audit's Status and report, with lookups
// by rule id. Header-only; for tests, not linked into the product.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "audit/k8s/k8s_audit.h"
#include "audit/report/report_format.h"

namespace tg::audit::test {

struct K8sOutcome {
  common::Status status = common::Status::Ok();
  K8sAuditReport report;

  // Whether any finding carries `rule`.
  bool Has(const std::string& rule) const {
    return std::any_of(report.findings.begin(), report.findings.end(),
                       [&](const K8sFinding& f) { return f.finding.rule == rule; });
  }
  // The first finding with `rule`, or nullptr; points into `report`.
  const K8sFinding* First(const std::string& rule) const {
    for (const auto& f : report.findings) {
      if (f.finding.rule == rule) return &f;
    }
    return nullptr;
  }
  // Whether the findings fail the default gate (any error).
  bool Fails() const {
    std::vector<Finding> fs;
    for (const auto& f : report.findings) fs.push_back(f.finding);
    return GateFails(fs, Severity::kError);
  }
  // The status and the text report, for failure messages.
  std::string Dump() const { return status.message() + "\n" + K8sReportToText(report); }
};

}  // namespace tg::audit::test
