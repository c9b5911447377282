// The in-cluster defaults of the Kubernetes API client (service account files, the
// KUBERNETES_SERVICE_* variables), --api-server parsing and its loopback-only plain HTTP, and
// object-name validation. Requests themselves are tested through the binary against stub servers
// (tests/audit_k8s_promote_test.cc, tests/audit_k8s_tls_test.cc).
#include "deploy/k8s_client.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "tests/support/test_util.h"

namespace tg::deploy {
namespace {

using testing::ScopedEnv;

void ServiceAccount(const testing::TempDir& d, bool with_namespace = true) {
  testing::WriteFile(d / "token", "abc.def\n");
  testing::WriteFile(d / "ca.crt", "-----BEGIN CERTIFICATE-----\n");
  if (with_namespace) testing::WriteFile(d / "namespace", "prod\n");
}

TEST(K8sClient, InClusterDefaultsComeFromTheServiceAccount) {
  testing::TempDir sa;
  ServiceAccount(sa);
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "6443");
  K8sApiOverrides o;
  o.secrets_dir = sa.path();
  auto c = ResolveK8sApiConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->scheme, "https");
  EXPECT_EQ(c->host, "10.96.0.1");
  EXPECT_EQ(c->port, "6443");
  EXPECT_EQ(c->token, "abc.def");  // trailing newline dropped
  EXPECT_EQ(c->ca_file, sa / "ca.crt");
  EXPECT_EQ(c->namespace_name, "prod");

  // An IPv6 service address.
  ScopedEnv host6("KUBERNETES_SERVICE_HOST", "fd00::1");
  auto c6 = ResolveK8sApiConfig(o);
  ASSERT_TRUE(c6.ok()) << c6.status().message();
  EXPECT_EQ(c6->host, "fd00::1");

  // Flags win over the defaults.
  testing::WriteFile(sa / "other-token", "xyz");
  o.token_file = sa / "other-token";
  o.namespace_name = "staging";
  o.api_server = "https://api.example.test";
  auto f = ResolveK8sApiConfig(o);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->host, "api.example.test");
  EXPECT_EQ(f->port, "443");
  EXPECT_EQ(f->token, "xyz");
  EXPECT_EQ(f->namespace_name, "staging");
}

TEST(K8sClient, MissingPiecesSayWhatToGive) {
  testing::TempDir sa;
  ServiceAccount(sa, false);
  K8sApiOverrides o;
  o.secrets_dir = sa.path();
  {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", nullptr);
    auto c = ResolveK8sApiConfig(o);
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find("--api-server"), std::string::npos);
  }
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  auto no_ns = ResolveK8sApiConfig(o);
  ASSERT_FALSE(no_ns.ok());
  EXPECT_EQ(no_ns.status().code(), common::StatusCode::kInvalidArg);
  EXPECT_NE(no_ns.status().message().find("--namespace"), std::string::npos);
  o.namespace_name = "Bad_NS";
  auto bad_ns = ResolveK8sApiConfig(o);
  ASSERT_FALSE(bad_ns.ok());
  EXPECT_NE(bad_ns.status().message().find("Bad_NS"), std::string::npos);
  o.namespace_name = "prod";
  o.ca_file = sa / "no-ca.crt";
  auto no_ca = ResolveK8sApiConfig(o);
  ASSERT_FALSE(no_ca.ok());
  EXPECT_NE(no_ca.status().message().find("--ca-file"), std::string::npos);
}

TEST(K8sClient, ApiServerUrlsAndPlainHttpOnlyToLoopback) {
  testing::TempDir sa;
  ServiceAccount(sa);
  K8sApiOverrides o;
  o.secrets_dir = sa.path();
  o.namespace_name = "ns";
  for (const char* ok : {"http://127.0.0.1:8001", "http://localhost:8001", "http://[::1]:8001",
                         "https://10.0.0.1:6443/", "https://[fd00::1]"}) {
    o.api_server = ok;
    auto c = ResolveK8sApiConfig(o);
    EXPECT_TRUE(c.ok()) << ok << ": " << c.status().message();
  }
  o.api_server = "http://127.0.0.1:8001";
  auto stub = ResolveK8sApiConfig(o);
  ASSERT_TRUE(stub.ok());
  EXPECT_EQ(stub->token, "");  // no token to a loopback stub unless --token-file is given
  for (const char* bad : {"http://10.0.0.1:6443", "ftp://127.0.0.1", "https://", "127.0.0.1:80",
                          "https://host/path", "https://a b", "https://h:99999999"}) {
    o.api_server = bad;
    auto c = ResolveK8sApiConfig(o);
    EXPECT_FALSE(c.ok()) << bad;
    if (!c.ok()) {
      EXPECT_EQ(c.status().code(), common::StatusCode::kInvalidArg) << bad;
    }
  }
}

TEST(K8sClient, ObjectNames) {
  for (const char* ok : {"truegreen", "truegreen-baseline", "a", "tg.v2-blue"}) {
    EXPECT_TRUE(IsK8sObjectName(ok)) << ok;
  }
  for (const char* bad : {"", "Truegreen", "-x", "x-", "a/b", "a b", "../x", "x%2f"}) {
    EXPECT_FALSE(IsK8sObjectName(bad)) << bad;
  }
  EXPECT_FALSE(IsK8sObjectName(std::string(254, 'a')));
}

}  // namespace
}  // namespace tg::deploy
