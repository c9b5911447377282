// `truegreen k8s promote` over HTTPS, as in a cluster: a loopback TLS stub API server with a
// certificate made here by the openssl tool. The client trusts only the CA it is given and checks
// the certificate names the address it dialled; a wrong CA or a certificate for another name is
// refused before any request (and so before the token) is sent.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <optional>

#include "tests/support/test_util.h"

namespace tg::testing {
namespace {

using ::testing::HasSubstr;
using Json = common::Json;

// Makes a self-signed EC certificate (its own CA) for `san` in dir/name.{crt,key}.
bool MakeCert(const TempDir& d, const std::string& name, const std::string& san) {
  ProcessResult r = RunProcess({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                                "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                                "/CN=truegreen-test", "-addext", "subjectAltName=" + san, "-keyout",
                                d / (name + ".key"), "-out", d / (name + ".crt")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0;
}

// Answers every request with a Service selecting `color` (GET) or the patched one (PATCH);
// records the requests' first lines and Authorization headers.
class TlsStub {
 public:
  TlsStub(const std::string& cert, const std::string& key) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    EXPECT_EQ(SSL_CTX_use_certificate_chain_file(ctx_, cert.c_str()), 1);
    EXPECT_EQ(SSL_CTX_use_PrivateKey_file(ctx_, key.c_str(), SSL_FILETYPE_PEM), 1);
    acceptor_.emplace([this](int c) { Accept(c); });  // after ctx_: connections use it
    EXPECT_GT(acceptor_->port(), 0);
  }
  ~TlsStub() {
    acceptor_.reset();  // stops the accept thread before ctx_ goes
    SSL_CTX_free(ctx_);
  }
  std::string Url() const { return "https://127.0.0.1:" + std::to_string(acceptor_->port()); }
  std::vector<std::string> Seen() {
    std::lock_guard<std::mutex> l(mu_);
    return seen_;
  }

 private:
  void Accept(int c) {
    timeval tv{5, 0};
    ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, c);
    if (SSL_accept(ssl) == 1) Serve(ssl);
    SSL_free(ssl);
  }
  void Serve(SSL* ssl) {
    std::string in;
    char buf[4096];
    std::size_t end = std::string::npos, want = 0;
    while (end == std::string::npos || in.size() < end + 4 + want) {
      int n = SSL_read(ssl, buf, sizeof(buf));
      if (n <= 0) return;
      in.append(buf, static_cast<std::size_t>(n));
      if (end == std::string::npos && (end = in.find("\r\n\r\n")) != std::string::npos) {
        std::size_t cl = in.find("Content-Length: ");
        if (cl != std::string::npos && cl < end) want = std::stoul(in.substr(cl + 16));
      }
    }
    std::string auth;
    std::size_t a = in.find("Authorization: ");
    if (a != std::string::npos) auth = in.substr(a + 15, in.find("\r\n", a) - a - 15);
    const std::string first = in.substr(0, in.find("\r\n"));
    {
      std::lock_guard<std::mutex> l(mu_);
      seen_.push_back(first + " | " + auth);
    }
    const std::string color = first.rfind("PATCH", 0) == 0 ? "green" : "blue";
    const std::string body =
        Json{{"spec", {{"selector", {{"truegreen.dev/color", color}}}}}}.dump();
    const std::string out =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    SSL_write(ssl, out.data(), static_cast<int>(out.size()));
    SSL_shutdown(ssl);
  }

  SSL_CTX* ctx_ = nullptr;
  std::mutex mu_;
  std::vector<std::string> seen_;
  std::optional<LoopbackAcceptor> acceptor_;  // last: stopped first
};

std::vector<std::string> Promote(const std::string& url, const TempDir& d, const std::string& ca) {
  return {"k8s",          "promote",      "--service", "truegreen",      "--color",
          "green",        "--api-server", url,         "--namespace",    "prod",
          "--token-file", d / "token",    "--ca-file", d / (ca + ".crt")};
}

TEST(AuditK8sTls, VerifiesTheCaAndTheAddressBeforeSendingTheToken) {
  if (!std::filesystem::exists("/usr/bin/openssl")) {
    GTEST_SKIP() << "the openssl tool (Debian package openssl) is needed to make a certificate";
  }
  TempDir d;
  WriteFile(d / "token", "tls-token\n");
  ASSERT_TRUE(MakeCert(d, "server", "IP:127.0.0.1"));
  ASSERT_TRUE(MakeCert(d, "other", "IP:127.0.0.1"));
  ASSERT_TRUE(MakeCert(d, "wrongname", "DNS:api.example.test"));

  TlsStub good(d / "server.crt", d / "server.key");
  ProcessResult ok = RunTruegreen(Promote(good.Url(), d, "server"));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("(was blue)"));
  std::vector<std::string> seen = good.Seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], "GET /api/v1/namespaces/prod/services/truegreen HTTP/1.1 | Bearer tls-token");
  EXPECT_THAT(seen[1], HasSubstr("PATCH /api/v1/namespaces/prod/services/truegreen"));

  // A CA that did not sign the server's certificate: refused, nothing sent.
  ProcessResult wrong_ca = RunTruegreen(Promote(good.Url(), d, "other"));
  EXPECT_EQ(wrong_ca.exit_code, 3) << wrong_ca.err;
  EXPECT_THAT(wrong_ca.err, HasSubstr("certificate verify failed"));
  EXPECT_EQ(good.Seen().size(), 2u);

  // The right CA, but the certificate names another host than the address dialled.
  TlsStub misnamed(d / "wrongname.crt", d / "wrongname.key");
  ProcessResult wrong_name = RunTruegreen(Promote(misnamed.Url(), d, "wrongname"));
  EXPECT_EQ(wrong_name.exit_code, 3) << wrong_name.err;
  EXPECT_THAT(wrong_name.err, HasSubstr("certificate verify failed"));
  EXPECT_TRUE(misnamed.Seen().empty());
}

}  // namespace
}  // namespace tg::testing
