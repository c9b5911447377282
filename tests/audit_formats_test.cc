// SARIF 2.1.0 and JUnit XML from every audit command and logscan, validated outside the binary
// (Debian's python3-jsonschema against the official SARIF 2.1.0 schema in tests/data/schemas and
// the stricter docs/schemas/sarif-2.1.0-subset.schema.json; xmllint against Jenkins xUnit's
// junit-10.xsd, plus Apache Ant's required attributes, for JUnit); the severity gate (--fail-on)
// and suppressions (reported, never dropped; expired ones do not suppress).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/support/test_util.h"

namespace tg::testing {
namespace {

const std::string kPin = "@sha256:" + std::string(64, 'a');

// A Dockerfile with an error (no USER: DL3002) and a warning (MAINTAINER: DL4000).
std::string WriteDockerfile(const TempDir& d) {
  WriteFile(d / "Dockerfile",
            "FROM debian:12" + kPin +
                " AS b\nRUN make\nFROM scratch\nMAINTAINER me\nCOPY --from=b /out/ /\n");
  WriteFile(d / ".dockerignore", "*\n");
  return d / "Dockerfile";
}

ProcessResult ValidateSarif(const std::string& file) {
  const std::string script =
      "import json,sys,jsonschema\n"
      "schema=json.load(open(sys.argv[1]))\n"
      "doc=json.load(open(sys.argv[2]))\n"
      "jsonschema.Draft7Validator.check_schema(schema)\n"
      "jsonschema.validate(doc, schema)\n"
      "print('valid', len(doc['runs'][0]['results']))\n";
  ProcessResult subset =
      RunProcess({SystemPython(), "-c", script,
                  SourceDir() + "/docs/schemas/sarif-2.1.0-subset.schema.json", file});
  if (subset.exit_code != 0) return subset;
  // The official schema is draft-04: jsonschema picks the validator from its $schema.
  const std::string full =
      "import json,sys,jsonschema\n"
      "schema=json.load(open(sys.argv[1]))\n"
      "doc=json.load(open(sys.argv[2]))\n"
      "cls=jsonschema.validators.validator_for(schema)\n"
      "cls.check_schema(schema)\n"
      "cls(schema).validate(doc)\n"
      "assert doc['$schema'].endswith('sarif-schema-2.1.0.json')\n"
      "run=doc['runs'][0]\n"
      "assert run['originalUriBaseIds']['%SRCROOT%']['uri'].endswith('/')\n"
      "for r in run['tool']['driver']['rules']: assert r['help']['text'], r\n"
      "for r in run['results']:\n"
      "  for l in r.get('locations', []):\n"
      "    a=l['physicalLocation']['artifactLocation']\n"
      "    assert a['uri'].startswith('/') or a['uriBaseId']=='%SRCROOT%', a\n"
      "print('valid (official schema)')\n";
  return RunProcess({SystemPython(), "-c", full,
                     SourceDir() + "/tests/data/schemas/sarif-schema-2.1.0.json", file});
}

// Well-formed, and the structure CI readers expect: testsuites > testsuite > testcase, with
// counts that match the children.
ProcessResult ValidateJunit(const std::string& file) {
  const std::string script =
      "import sys,xml.etree.ElementTree as ET\n"
      "root=ET.parse(sys.argv[1]).getroot()\n"
      "assert root.tag=='testsuites', root.tag\n"
      "for s in root.findall('testsuite'):\n"
      "  cases=s.findall('testcase')\n"
      "  assert int(s.get('tests'))==len(cases)\n"
      "  assert int(s.get('failures'))==sum(1 for c in cases if c.find('failure') is not None)\n"
      "  assert int(s.get('skipped'))==sum(1 for c in cases if c.find('skipped') is not None)\n"
      "  for c in cases: assert c.get('name') and c.get('classname')\n"
      "  for a in "
      "('name','tests','failures','errors','time','timestamp','hostname','package','id'):\n"
      "    assert s.get(a) is not None, 'Ant schema: testsuite@'+a\n"
      "  for c in cases: assert c.get('time') is not None, 'Ant schema: testcase@time'\n"
      "assert root.get('skipped') is None, 'junit-10.xsd: no testsuites@skipped'\n"
      "print('valid', root.get('tests'), root.get('failures'))\n";
  ProcessResult r = RunProcess({SystemPython(), "-c", script, file});
  if (r.exit_code != 0 || !std::filesystem::exists("/usr/bin/xmllint")) return r;
  return RunProcess({"/usr/bin/xmllint", "--noout", "--schema",
                     SourceDir() + "/tests/data/schemas/junit-10.xsd", file});
}

TEST(AuditFormats, JunitSchemaValidatorIsPresent) {
  if (!std::filesystem::exists("/usr/bin/xmllint")) {
    GTEST_SKIP() << "xmllint (Debian libxml2-utils) is absent: JUnit is checked for structure "
                    "and Ant's attributes only, not against junit-10.xsd";
  }
  // The validator must be able to fail: a testsuites@skipped (what Jenkins refused) is invalid.
  TempDir d;
  WriteFile(d / "bad.xml",
            "<testsuites skipped=\"0\"><testsuite name=\"a\" tests=\"0\" failures=\"0\" "
            "errors=\"0\"/></testsuites>\n");
  ProcessResult r = RunProcess({"/usr/bin/xmllint", "--noout", "--schema",
                                SourceDir() + "/tests/data/schemas/junit-10.xsd", d / "bad.xml"});
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
}

TEST(AuditFormats, DockerfileSarifAndJunitValidate) {
  TempDir d;
  std::string df = WriteDockerfile(d);
  ProcessResult r = RunTruegreen(
      {"audit", "dockerfile", df, "--sarif", d / "out.sarif", "--junit", d / "out.xml"});
  EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
  ProcessResult s = ValidateSarif(d / "out.sarif");
  EXPECT_EQ(s.exit_code, 0) << s.out << s.err;
  auto j = nlohmann::json::parse(ReadFile(d / "out.sarif"));
  bool error = false, warning = false;
  for (const auto& res : j["runs"][0]["results"]) {
    error = error || (res["ruleId"] == "dockerfile.user-root" && res["level"] == "error");
    warning = warning || (res["ruleId"] == "dockerfile.maintainer" && res["level"] == "warning");
  }
  EXPECT_TRUE(error && warning) << j.dump(2);
  ProcessResult x = ValidateJunit(d / "out.xml");
  EXPECT_EQ(x.exit_code, 0) << x.out << x.err;
  EXPECT_NE((x.out + x.err).find("valid"), std::string::npos) << x.out << x.err;
  // --format sarif puts the same log on stdout.
  ProcessResult f = RunTruegreen({"audit", "dockerfile", df, "--format", "sarif"});
  EXPECT_EQ(nlohmann::json::parse(f.out)["version"], "2.1.0") << f.out;
}

TEST(AuditFormats, K8sAndLogscanSarifValidate) {
  TempDir d;
  WriteFile(d / "m.yaml",
            "kind: Pod\nmetadata: {name: p}\nspec:\n  hostNetwork: true\n"
            "  containers: [{name: c, image: busybox}]\n");
  ProcessResult r = RunTruegreen({"audit", "k8s", d / "m.yaml", "--format", "sarif"});
  EXPECT_EQ(r.exit_code, 6) << r.err;
  WriteFile(d / "k.sarif", r.out);
  ProcessResult s = ValidateSarif(d / "k.sarif");
  EXPECT_EQ(s.exit_code, 0) << s.out << s.err;

  WriteFile(
      d / "log.txt",
      "Failed to initialize NVML: Unknown Error\n"
      "[W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 CreateExecutionProviderInstance]"
      " Failed to create CUDAExecutionProvider. Please reference "
      "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html\n");
  ProcessResult l =
      RunTruegreen({"logscan", d / "log.txt", "--junit", d / "l.xml", "--sarif", d / "l.sarif"});
  EXPECT_EQ(l.exit_code, 3) << l.out << l.err;
  EXPECT_EQ(ValidateSarif(d / "l.sarif").exit_code, 0);
  EXPECT_EQ(ValidateJunit(d / "l.xml").exit_code, 0);
}

// A truncated audit (--max-findings below the findings there are) stays valid in SARIF and JUnit,
// carries the truncation in both (a result and a tool execution notification; a failed
// testcase), and fails even with --fail-on error and every listed rule suppressed.
TEST(AuditFormats, TruncatedAuditIsValidAndFails) {
  TempDir d;
  WriteFile(d / "m.yaml",
            "kind: Pod\nmetadata: {name: p}\nspec:\n  hostNetwork: true\n"
            "  containers: [{name: c, image: busybox}, {name: e, image: busybox}]\n");
  WriteFile(d / "s.yaml",
            "suppressions:\n  - {rule: k8s.host-namespaces, reason: r}\n"
            "  - {rule: audit.findings-truncated, reason: r}\n");
  ProcessResult r =
      RunTruegreen({"audit", "k8s", d / "m.yaml", "--max-findings", "1", "--suppressions",
                    d / "s.yaml", "--sarif", d / "t.sarif", "--junit", d / "t.xml"});
  EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
  EXPECT_NE(r.err.find("audit.findings-truncated cannot be suppressed"), std::string::npos)
      << r.err;
  ProcessResult s = ValidateSarif(d / "t.sarif");
  EXPECT_EQ(s.exit_code, 0) << s.out << s.err;
  auto j = nlohmann::json::parse(ReadFile(d / "t.sarif"));
  const auto& run = j["runs"][0];
  ASSERT_EQ(run["results"].size(), 2u) << run.dump(2);
  EXPECT_EQ(run["results"][1]["ruleId"], "audit.findings-truncated");
  EXPECT_FALSE(run["results"][1].contains("suppressions"));
  EXPECT_EQ(run["invocations"][0]["executionSuccessful"], false);
  EXPECT_EQ(run["invocations"][0]["toolExecutionNotifications"][0]["level"], "error");
  ProcessResult x = ValidateJunit(d / "t.xml");
  EXPECT_EQ(x.exit_code, 0) << x.out << x.err;
  const std::string xml = ReadFile(d / "t.xml");
  EXPECT_NE(xml.find("classname=\"audit.findings-truncated\""), std::string::npos) << xml;
}

TEST(AuditFormats, FailOnSetsTheGate) {
  TempDir d;
  WriteFile(d / "Dockerfile",
            "FROM debian:12" + kPin +
                " AS b\nRUN make\nFROM scratch\nMAINTAINER me\nCOPY --from=b /out/ /\n"
                "USER 65532\n");
  WriteFile(d / ".dockerignore", "*\n");
  // Only a warning: passes at the default gate, fails with --fail-on warning.
  EXPECT_EQ(RunTruegreen({"audit", "dockerfile", d / "Dockerfile"}).exit_code, 0);
  EXPECT_EQ(
      RunTruegreen({"audit", "dockerfile", d / "Dockerfile", "--fail-on", "warning"}).exit_code, 6);
  ProcessResult bad = RunTruegreen({"audit", "dockerfile", d / "Dockerfile", "--fail-on", "x"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--fail-on 'x'"), std::string::npos) << bad.err;
}

TEST(AuditFormats, SuppressionsAreReportedNotDropped) {
  TempDir d;
  std::string df = WriteDockerfile(d);
  WriteFile(d / "s.yaml",
            "suppressions:\n  - rule: dockerfile.user-root\n    reason: runs under a PSP "
            "that sets the uid\n    expires: 2999-12-31\n");
  ProcessResult r = RunTruegreen({"--json", "audit", "dockerfile", df, "--suppressions",
                                  d / "s.yaml", "--junit", d / "j.xml"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;  // the only error is suppressed
  auto j = nlohmann::json::parse(r.out);
  bool found = false;
  for (const auto& f : j["findings"]) {
    if (f["rule"] != "dockerfile.user-root") continue;
    found = true;
    EXPECT_EQ(f["suppressed"], true);
    EXPECT_NE(f["suppression"].get<std::string>().find("PSP"), std::string::npos);
  }
  EXPECT_TRUE(found) << "a suppressed finding must still be reported\n" << r.out;
  EXPECT_NE(ReadFile(d / "j.xml").find("<skipped"), std::string::npos);
  ProcessResult text = RunTruegreen({"audit", "dockerfile", df, "--suppressions", d / "s.yaml"});
  EXPECT_NE(text.out.find("[suppressed]"), std::string::npos) << text.out;

  // An expired suppression suppresses nothing and says so.
  WriteFile(d / "old.yaml",
            "suppressions:\n  - rule: dockerfile.user-root\n    reason: temporary\n"
            "    expires: 2000-01-01\n");
  ProcessResult e = RunTruegreen({"audit", "dockerfile", df, "--suppressions", d / "old.yaml"});
  EXPECT_EQ(e.exit_code, 6) << e.out;
  EXPECT_NE(e.out.find("expired on 2000-01-01"), std::string::npos) << e.out;
}

TEST(AuditFormats, BadSuppressionFileNamesLineAndField) {
  TempDir d;
  std::string df = WriteDockerfile(d);
  WriteFile(d / "s.yaml",
            "suppressions:\n  - rule: dockerfile.user-root\n    expires: soon\n"
            "    reason: x\n");
  ProcessResult r = RunTruegreen({"audit", "dockerfile", df, "--suppressions", d / "s.yaml"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("s.yaml:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("expires"), std::string::npos) << r.err;
  WriteFile(d / "t.yaml", "suppressions:\n  - rule: dockerfile.user-root\n");
  r = RunTruegreen({"audit", "dockerfile", df, "--suppressions", d / "t.yaml"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("reason"), std::string::npos) << r.err;
}

TEST(AuditFormats, LogscanUserPatternsAndSuppressions) {
  TempDir d;
  WriteFile(d / "p.yaml",
            "patterns:\n  - id: app.oom\n    regex: out of memory\n"
            "    category: memory\n    advice: lower the batch\n");
  WriteFile(d / "log.txt", "step 1\nCUDA out of memory\n");
  ProcessResult r = RunTruegreen({"--json", "logscan", d / "log.txt", "--patterns", d / "p.yaml"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("app.oom"), std::string::npos) << r.out;
  // Suppressed by its pattern id: still listed, exit 0.
  WriteFile(d / "s.yaml", "suppressions:\n  - rule: app.oom\n    reason: known, tracked\n");
  r = RunTruegreen({"--json", "logscan", d / "log.txt", "--patterns", d / "p.yaml",
                    "--suppressions", d / "s.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("known, tracked"), std::string::npos) << r.out;
  // A broken pattern file is exit 2 naming its line.
  WriteFile(d / "bad.yaml",
            "patterns:\n  - id: x\n    regex: \"[\"\n    category: c\n"
            "    advice: a\n");
  r = RunTruegreen({"logscan", d / "log.txt", "--patterns", d / "bad.yaml"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("bad.yaml:3:"), std::string::npos) << r.err;
}

TEST(AuditFormats, ReportFileMustBeRegular) {
  TempDir d;
  std::string df = WriteDockerfile(d);
  ProcessResult r = RunTruegreen({"audit", "dockerfile", df, "--sarif", d.path()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tg::testing
