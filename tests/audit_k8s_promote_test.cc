// `truegreen k8s promote` and `truegreen k8s wait-ready` against a stub Kubernetes API server on
// loopback (plain HTTP, which the client accepts only there): the requests they send (method,
// path, Authorization header, merge-patch body, the ConfigMap PUT), and clear errors with a
// nonzero exit when the API refuses (403, 404) or the Deployment never becomes ready.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>

#include "common/strings.h"
#include "tests/support/test_util.h"

namespace tg::testing {
namespace {

using ::testing::HasSubstr;
using Json = common::Json;

struct Request {
  std::string method, path, body;
  std::map<std::string, std::string> headers;  // lower-case names
};
struct Reply {
  int status = 200;
  std::string body;
};

// One connection at a time (the client closes after each request); runs until destroyed.
class StubApiServer {
 public:
  explicit StubApiServer(std::function<Reply(const Request&)> handler)
      : handler_(std::move(handler)) {
    EXPECT_GT(acceptor_.port(), 0);
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(acceptor_.port()); }
  std::vector<Request> Requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }

 private:
  void Serve(int c) {
    std::string in;
    char buf[4096];
    std::size_t header_end = std::string::npos, want = 0;
    while (true) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 5000) <= 0) return;
      ssize_t n = ::read(c, buf, sizeof(buf));
      if (n <= 0) return;
      in.append(buf, static_cast<std::size_t>(n));
      if (header_end == std::string::npos) {
        header_end = in.find("\r\n\r\n");
        if (header_end == std::string::npos) continue;
        const std::string lower = common::Lower(std::string_view(in).substr(0, header_end));
        std::size_t cl = lower.find("content-length:");
        if (cl != std::string::npos) want = std::stoul(lower.substr(cl + 15));
      }
      if (in.size() >= header_end + 4 + want) break;
    }
    Request r;
    std::size_t line_end = in.find("\r\n");
    std::vector<std::string> first = CliWords(in.substr(0, line_end));
    if (first.size() >= 2) {
      r.method = first[0];
      r.path = first[1];
    }
    std::size_t pos = line_end + 2;
    while (pos < header_end) {
      std::size_t e = in.find("\r\n", pos);
      std::string h = in.substr(pos, e - pos);
      std::size_t colon = h.find(':');
      const std::string name = common::Lower(std::string_view(h).substr(0, colon));
      std::string value = h.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      r.headers[name] = value;
      pos = e + 2;
    }
    r.body = in.substr(header_end + 4, want);
    {
      std::lock_guard<std::mutex> l(mu_);
      requests_.push_back(r);
    }
    Reply rep = handler_(r);
    std::string out = "HTTP/1.1 " + std::to_string(rep.status) +
                      " X\r\nContent-Type: application/json\r\nContent-Length: " +
                      std::to_string(rep.body.size()) + "\r\nConnection: close\r\n\r\n" + rep.body;
    std::size_t off = 0;
    while (off < out.size()) {
      ssize_t n = ::write(c, out.data() + off, out.size() - off);
      if (n <= 0) return;
      off += static_cast<std::size_t>(n);
    }
  }

  std::function<Reply(const Request&)> handler_;
  std::mutex mu_;
  std::vector<Request> requests_;
  LoopbackAcceptor acceptor_{[this](int c) { Serve(c); }};  // last: stopped first
};

const char* kSvcPath = "/api/v1/namespaces/prod/services/truegreen";
const char* kCmPath = "/api/v1/namespaces/prod/configmaps/truegreen-baseline";

Json Service(const std::string& color) {
  return {
      {"kind", "Service"},
      {"metadata", {{"name", "truegreen"}, {"namespace", "prod"}}},
      {"spec",
       {{"selector", {{"app.kubernetes.io/name", "truegreen"}, {"truegreen.dev/color", color}}}}}};
}

// A cluster with Service truegreen (live blue) and ConfigMap truegreen-baseline.
struct FakeCluster {
  std::mutex mu;
  std::string color = "blue";
  Json configmap = {{"kind", "ConfigMap"},
                    {"metadata", {{"name", "truegreen-baseline"}, {"resourceVersion", "7"}}},
                    {"data", {{"baseline.json", "{}"}}}};
  Reply Handle(const Request& r) {
    std::lock_guard<std::mutex> l(mu);
    if (r.path == kSvcPath && r.method == "GET") return {200, Service(color).dump()};
    if (r.path == kSvcPath && r.method == "PATCH") {
      auto p = Json::parse(r.body, nullptr, false);
      color = p["spec"]["selector"]["truegreen.dev/color"];
      return {200, Service(color).dump()};
    }
    if (r.path == kCmPath && r.method == "GET") return {200, configmap.dump()};
    if (r.path == kCmPath && r.method == "PUT") {
      configmap = Json::parse(r.body);
      return {200, configmap.dump()};
    }
    return {404, R"({"kind":"Status","message":"not found here","code":404})"};
  }
};

std::vector<std::string> Promote(const StubApiServer& s, const std::string& token_file,
                                 std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"k8s",         "promote", "--service",    "truegreen",
                                "--color",     "green",   "--api-server", s.Url(),
                                "--namespace", "prod",    "--token-file", token_file};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(AuditK8sPromote, PatchesTheSelectorAndStoresTheBaseline) {
  TempDir d;
  WriteFile(d / "token", "s3cret-token\n");
  WriteFile(d / "run.json", R"({"api":"openai","points":[{"p95_us":1200}]})");
  FakeCluster cluster;
  StubApiServer api([&](const Request& r) { return cluster.Handle(r); });
  ProcessResult r = RunTruegreen(
      Promote(api, d / "token",
              {"--baseline-configmap", "truegreen-baseline", "--baseline-file", d / "run.json"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("PROMOTED"));
  EXPECT_THAT(r.out, HasSubstr("(was blue)"));
  std::vector<Request> reqs = api.Requests();
  ASSERT_EQ(reqs.size(), 4u);
  for (const Request& q : reqs) {
    // The token file's content, trailing newline removed, on every request.
    EXPECT_EQ(q.headers.at("authorization"), "Bearer s3cret-token") << q.method << " " << q.path;
  }
  EXPECT_EQ(reqs[1].method, "PATCH");
  EXPECT_EQ(reqs[1].path, kSvcPath);
  EXPECT_EQ(reqs[1].headers.at("content-type"), "application/merge-patch+json");
  EXPECT_EQ(Json::parse(reqs[1].body),
            Json::parse(R"({"spec":{"selector":{"truegreen.dev/color":"green"}}})"));
  EXPECT_EQ(reqs[3].method, "PUT");
  Json put = Json::parse(reqs[3].body);
  EXPECT_EQ(put["metadata"]["resourceVersion"], "7");  // optimistic concurrency kept
  EXPECT_EQ(put["metadata"]["annotations"]["truegreen.dev/baseline-color"], "green");
  EXPECT_EQ(Json::parse(put["data"]["baseline.json"].get<std::string>())["points"][0]["p95_us"],
            1200);
  EXPECT_EQ(cluster.color, "green");
  // The token never appears in the output.
  EXPECT_EQ((r.out + r.err).find("s3cret"), std::string::npos);

  // --json: one object saying what changed.
  ProcessResult j = RunTruegreen([&] {
    auto a = Promote(api, d / "token");
    a.insert(a.begin(), "--json");
    return a;
  }());
  ASSERT_EQ(j.exit_code, 0) << j.err;
  Json o = Json::parse(j.out);
  EXPECT_EQ(o["previous"], "green");
  EXPECT_EQ(o["color"], "green");
  EXPECT_EQ(o["baseline_stored"], false);
}

TEST(AuditK8sPromote, ApiRefusalsAreClearErrors) {
  TempDir d;
  WriteFile(d / "token", "t");
  StubApiServer forbidden([](const Request& r) -> Reply {
    if (r.method == "GET") return {200, Service("blue").dump()};
    return {
        403,
        R"({"kind":"Status","message":"services \"truegreen\" is forbidden: User cannot patch","code":403})"};
  });
  ProcessResult r = RunTruegreen(Promote(forbidden, d / "token"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("403 Forbidden"));
  EXPECT_THAT(r.err, HasSubstr("cannot patch"));
  EXPECT_THAT(r.err, HasSubstr("Service prod/truegreen"));

  StubApiServer missing([](const Request&) -> Reply {
    return {404, R"({"kind":"Status","message":"services \"truegreen\" not found","code":404})"};
  });
  ProcessResult m = RunTruegreen(Promote(missing, d / "token"));
  EXPECT_EQ(m.exit_code, 2) << m.err;
  EXPECT_THAT(m.err, HasSubstr("404 Not Found"));
  EXPECT_THAT(m.err, HasSubstr("not found"));
  ASSERT_EQ(missing.Requests().size(), 1u);  // nothing patched after a failed read

  // A Service without the colour label is not a blue-green Service: nothing is patched.
  StubApiServer plain([](const Request&) -> Reply {
    return {200, R"({"spec":{"selector":{"app":"x"}}})"};
  });
  ProcessResult p = RunTruegreen(Promote(plain, d / "token"));
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_THAT(p.err, HasSubstr("not a blue-green Service"));
  EXPECT_EQ(plain.Requests().size(), 1u);

  // The baseline ConfigMap missing: the switch happened, the error says so and what to do.
  FakeCluster cluster;
  StubApiServer no_cm([&](const Request& q) -> Reply {
    if (q.path == kCmPath) return {404, R"({"message":"configmaps not found"})"};
    return cluster.Handle(q);
  });
  WriteFile(d / "run.json", "{}");
  ProcessResult b = RunTruegreen(
      Promote(no_cm, d / "token",
              {"--baseline-configmap", "truegreen-baseline", "--baseline-file", d / "run.json"}));
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_THAT(b.err, HasSubstr("now selects truegreen.dev/color=green"));
  EXPECT_THAT(b.err, HasSubstr("seed the first baseline"));

  // An unreadable baseline file fails before anything changes.
  FakeCluster untouched;
  StubApiServer api([&](const Request& q) { return untouched.Handle(q); });
  WriteFile(d / "bad.json", "{not json");
  ProcessResult bad = RunTruegreen(
      Promote(api, d / "token",
              {"--baseline-configmap", "truegreen-baseline", "--baseline-file", d / "bad.json"}));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("bad.json"));
  EXPECT_TRUE(api.Requests().empty());
}

TEST(AuditK8sPromote, PlainHttpOnlyToLoopbackAndTheTokenIsRequired) {
  TempDir d;
  ProcessResult r = RunTruegreen({"k8s", "promote", "--service", "tg", "--color", "green",
                                  "--api-server", "http://10.0.0.1:6443", "--namespace", "ns"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("only to a loopback address"));
  ProcessResult no_ca =
      RunTruegreen({"k8s", "promote", "--service", "tg", "--color", "green", "--api-server",
                    "https://10.0.0.1:6443", "--namespace", "ns", "--token-file", d / "none"});
  EXPECT_EQ(no_ca.exit_code, 2);
  EXPECT_THAT(no_ca.err, HasSubstr("--token-file"));
  // Outside a cluster and without --api-server, it says what to give.
  ProcessResult outside =
      RunProcess({TruegreenPath(), "k8s", "promote", "--service", "tg", "--color", "green"},
                 {{"KUBERNETES_SERVICE_HOST", kUnset}});
  EXPECT_EQ(outside.exit_code, 2);
  EXPECT_THAT(outside.err, HasSubstr("--api-server"));
}

Json DeploymentJson(int want, int ready) {
  return {{"metadata", {{"name", "truegreen-green"}, {"generation", 3}}},
          {"spec", {{"replicas", want}}},
          {"status",
           {{"observedGeneration", 3},
            {"replicas", want},
            {"updatedReplicas", want},
            {"readyReplicas", ready},
            {"availableReplicas", ready}}}};
}

TEST(AuditK8sPromote, WaitReadyPollsUntilTheRolloutIsCompleteOrTimesOut) {
  TempDir d;
  WriteFile(d / "token", "t");
  std::atomic<int> polls{0};
  StubApiServer api([&](const Request& r) -> Reply {
    if (r.path != "/apis/apps/v1/namespaces/prod/deployments/truegreen-green") return {404, "{}"};
    // Ready from the third poll on.
    return {200, DeploymentJson(2, ++polls >= 3 ? 2 : 1).dump()};
  });
  const std::vector<std::string> base = {
      "k8s",         "wait-ready", "--deployment", "truegreen-green", "--api-server", api.Url(),
      "--namespace", "prod",       "--token-file", d / "token",       "--interval-s", "0.05"};
  ProcessResult r = RunTruegreen(base);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("READY"));
  EXPECT_THAT(r.err, HasSubstr("1/2 ready"));
  EXPECT_GE(polls.load(), 3);

  StubApiServer never([](const Request&) -> Reply { return {200, DeploymentJson(2, 1).dump()}; });
  std::vector<std::string> args = base;
  args[5] = never.Url();
  args.insert(args.end(), {"--timeout-s", "0.3"});
  ProcessResult t = RunTruegreen(args);
  EXPECT_EQ(t.exit_code, 3) << t.err;
  EXPECT_THAT(t.err, HasSubstr("not ready after"));

  StubApiServer forbidden([](const Request&) -> Reply {
    return {403, R"({"message":"deployments is forbidden"})"};
  });
  args = base;
  args[5] = forbidden.Url();
  ProcessResult f = RunTruegreen(args);
  EXPECT_EQ(f.exit_code, 2) << f.err;
  EXPECT_THAT(f.err, HasSubstr("403 Forbidden"));
  EXPECT_EQ(forbidden.Requests().size(), 1u);  // a refusal is not retried
}

}  // namespace
}  // namespace tg::testing
