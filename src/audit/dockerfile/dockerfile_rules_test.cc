// The hadolint-style Dockerfile rules: for each rule a Dockerfile that triggers it and one that
// does not, the hadolint id in the message where hadolint has one, and the severity.
#include "audit/dockerfile/dockerfile_rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "audit/report/rule_ids.h"
#include "tests/support/test_util.h"

namespace tg::audit {
namespace {

const std::string kPin = "@sha256:" + std::string(64, 'c');

std::vector<Finding> AuditFindings(const std::string& text) {
  testing::TempDir dir;
  testing::WriteFile(dir / "Dockerfile", text);
  testing::WriteFile(dir / ".dockerignore", "*\n");
  auto df = ParseDockerfile(text, dir / "Dockerfile");
  EXPECT_TRUE(df.ok()) << df.status().message();
  if (!df.ok()) return {};
  auto rep = AuditDockerfile(*df, {dir / "Dockerfile", dir.path()});
  EXPECT_TRUE(rep.ok()) << rep.status().message();
  return rep.ok() ? rep->findings : std::vector<Finding>{};
}

const Finding* Find(const std::vector<Finding>& fs, const std::string& rule) {
  for (const auto& f : fs) {
    if (f.rule == rule) return &f;
  }
  return nullptr;
}

// Build stage + scratch runtime stage running as an unprivileged user: passes everything.
std::string Good(const std::string& build_extra = "", const std::string& runtime_extra = "") {
  return "FROM debian:12" + kPin + " AS build\n" + build_extra +
         "RUN make\nFROM scratch\nCOPY --from=build /out/ /\n" + runtime_extra +
         "USER 65532:65532\nENTRYPOINT [\"/app\"]\n";
}

struct Case {
  const char* name;
  std::string dockerfile;
  const char* rule;
  bool expect;
  const char* id = nullptr;  // hadolint id expected in the message
  Severity severity = Severity::kError;
};

TEST(DockerfileRules, EveryRulePositiveAndNegative) {
  const std::string deb = "FROM debian:12" + kPin + "\n";
  std::vector<Case> cases = {
      {"clean", Good(), "", false},
      {"no USER", "FROM debian:12" + kPin + " AS b\nRUN make\nFROM scratch\nCOPY --from=b / /\n",
       "dockerfile.user-root", true},
      {"USER root last", Good() + "USER app\nUSER root\n", "dockerfile.user-root", true, "DL3002"},
      {"USER 0:0 last", Good() + "USER 0:0\n", "dockerfile.user-root", true, "DL3002"},
      {"USER root in build stage only", Good("USER root\n"), "dockerfile.user-root", false},
      {"ADD url", Good("", "ADD https://example.org/x.tgz /x\n"), "dockerfile.add-url", true},
      {"ADD url with checksum", Good("", "ADD --checksum=sha256:abc https://e.org/x /x\n"),
       "dockerfile.add-url", true, nullptr, Severity::kWarning},
      {"ADD local", Good("", "ADD app.tar /x\n"), "dockerfile.add-url", false},
      {"curl | bash", Good("RUN curl -fsSL https://get.example/i.sh | bash\n"),
       "dockerfile.pipe-to-shell", true},
      {"wget -O- | sh -s", Good("RUN wget -qO- https://x/i | sudo sh -s -- -y\n"),
       "dockerfile.pipe-to-shell", true},
      {"curl > file", Good("RUN curl -fsSLo i.sh https://x/i.sh && sha256sum -c s && sh i.sh\n"),
       "dockerfile.pipe-to-shell", false},
      {"curl | tar", Good("RUN curl -fsSL https://x/a.tgz | tar xz\n"), "dockerfile.pipe-to-shell",
       false},
      {"sudo", Good("RUN sudo apt-get update\n"), "dockerfile.sudo", true, "DL3004"},
      {"no sudo", Good("RUN echo sudoers\n"), "dockerfile.sudo", false},
      {"MAINTAINER", Good("MAINTAINER me@example.org\n"), "dockerfile.maintainer", true, "DL4000",
       Severity::kWarning},
      {"LABEL authors", Good("LABEL org.opencontainers.image.authors=me\n"),
       "dockerfile.maintainer", false},
      {"EXPOSE 80000", Good("", "EXPOSE 80000\n"), "dockerfile.expose-range", true, "DL3011"},
      {"EXPOSE 0", Good("", "EXPOSE 0/tcp\n"), "dockerfile.expose-range", true, "DL3011"},
      {"EXPOSE bad proto", Good("", "EXPOSE 80/icmp\n"), "dockerfile.expose-range", true},
      {"EXPOSE ok", Good("", "EXPOSE 8000 53/udp 65535 1000-2000\n"), "dockerfile.expose-range",
       false},
      {"EXPOSE from ARG", Good("", "EXPOSE ${PORT}\n"), "dockerfile.expose-range", false},
      {"ENV token", Good("", "ENV HF_TOKEN=hf_abc\n"), "dockerfile.secret-env", true},
      {"ENV password legacy", Good("", "ENV DB_PASSWORD hunter2\n"), "dockerfile.secret-env", true},
      {"ARG secret default", "ARG API_SECRET=xyz\n" + Good(), "dockerfile.secret-env", true},
      {"ARG key no default", Good("ARG AWS_SECRET_ACCESS_KEY\n"), "dockerfile.secret-env", true,
       nullptr, Severity::kWarning},
      {"ENV key file path", Good("", "ENV SSL_KEY_FILE=/etc/k.pem GPG_KEY_PATH=/k\n"),
       "dockerfile.secret-env", false},
      {"ENV monkey", Good("", "ENV MONKEY=1 KEYBOARD=us\n"), "dockerfile.secret-env", false},
      {"apt no-install-recommends missing",
       deb + "RUN apt-get update && apt-get install -y curl && rm -rf /var/lib/apt/lists/*\n"
             "USER 1000\n",
       "dockerfile.apt-recommends", true, "DL3015", Severity::kWarning},
      {"apt with no-install-recommends",
       deb + "RUN apt-get update && apt-get install -y --no-install-recommends curl && rm -rf "
             "/var/lib/apt/lists/*\nUSER 1000\n",
       "dockerfile.apt-recommends", false},
      {"apt lists kept",
       deb + "RUN apt-get update && apt-get install -y --no-install-recommends "
             "curl\nUSER 1000\n",
       "dockerfile.package-cache", true, "DL3009"},
      {"pip cache", deb + "RUN pip install torch\nUSER 1000\n", "dockerfile.package-cache", true,
       "DL3042"},
      {"pip no-cache-dir", deb + "RUN pip install --no-cache-dir torch\nUSER 1000\n",
       "dockerfile.package-cache", false},
      {"untagged base", "FROM debian AS b\nRUN make\nFROM scratch\nUSER 1\n", "dockerfile.base-tag",
       true, "DL3006"},
      {"latest base", "FROM debian:latest AS b\nRUN make\nFROM scratch\nUSER 1\n",
       "dockerfile.base-tag", true, "DL3007"},
      {"latest pinned by digest",
       "FROM debian:latest" + kPin +
           " AS b\nRUN make\nFROM scratch\n"
           "USER 1\n",
       "dockerfile.base-tag", false},
      {"tagged base", "FROM debian:12 AS b\nRUN make\nFROM scratch\nUSER 1\n",
       "dockerfile.base-tag", false},
      {"registry port untagged", "FROM reg:5000/debian AS b\nRUN make\nFROM scratch\nUSER 1\n",
       "dockerfile.base-tag", true, "DL3006"},
      {"ENV token by value shape",
       Good("", "ENV MODEL_SOURCE=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\n"),
       "dockerfile.secret-env", true},
      {"ARG token by value shape", "ARG X=ghp_abcdefghijklmnopqrstuvwxyz0123456789\n" + Good(),
       "dockerfile.secret-env", true},
      {"ENV placeholder token", Good("", "ENV MODEL=hf_your_token_here_your_token_here\n"),
       "dockerfile.secret-env", false},
      {"stubs on runtime LD_LIBRARY_PATH",
       Good("", "ENV LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:$LD_LIBRARY_PATH\n"),
       "dockerfile.cuda-stubs", true},
      {"stubs kept by a later ENV",
       Good("",
            "ENV LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs\n"
            "ENV LD_LIBRARY_PATH=/opt/lib:${LD_LIBRARY_PATH}\n"),
       "dockerfile.cuda-stubs", true},
      {"stubs replaced by a later ENV",
       Good("", "ENV LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs\nENV LD_LIBRARY_PATH=/opt/lib\n"),
       "dockerfile.cuda-stubs", false},
      {"stubs in the build stage only", Good("ENV LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs\n"),
       "dockerfile.cuda-stubs", false},
      {"stubs into ld.so.conf",
       deb + "RUN echo /usr/local/cuda/lib64/stubs > /etc/ld.so.conf.d/z.conf && ldconfig\n"
             "USER 1000\n",
       "dockerfile.cuda-stubs", true},
      {"cuda-compat installed",
       deb + "RUN apt-get update && apt-get install -y --no-install-recommends cuda-compat-12-4 "
             "&& rm -rf /var/lib/apt/lists/*\nUSER 1000\n",
       "dockerfile.cuda-compat", true, nullptr, Severity::kWarning},
      {"cuda-compat by dnf", deb + "RUN dnf install -y cuda-compat-12-4 && dnf clean all\nUSER 1\n",
       "dockerfile.cuda-compat", true, nullptr, Severity::kWarning},
      {"cuda compat on the loader path",
       Good("", "ENV LD_LIBRARY_PATH=/usr/local/cuda/compat:/usr/lib\n"), "dockerfile.cuda-compat",
       true},
      {"cuda-compat in the build stage only", Good("RUN apt-get install -y cuda-compat-12-4\n"),
       "dockerfile.cuda-compat", false},
      {"chpasswd literal", Good("RUN echo 'root:hunter2' | chpasswd\n"),
       "dockerfile.password-literal", true},
      {"passwd from echo", Good("RUN echo -e \"pw\\npw\" | passwd app\n"),
       "dockerfile.password-literal", true},
      {"useradd -p literal", Good("RUN useradd -m -p '$6$salt$hash' app\n"),
       "dockerfile.password-literal", true},
      {"chpasswd from a variable", Good("RUN echo \"root:${ROOT_PW}\" | chpasswd\n"),
       "dockerfile.password-literal", false},
      {"passwd -d", Good("RUN passwd -d root\n"), "dockerfile.password-literal", false},
      {"installing the sudo package", Good("RUN apt-get install -y sudo\n"), "dockerfile.sudo",
       false},
      {"sudo after an assignment", Good("RUN A=1 sudo make\n"), "dockerfile.sudo", true, "DL3004"},
      {"ONBUILD RUN sudo", Good("ONBUILD RUN sudo make\n"), "dockerfile.sudo", true, "DL3004"},
      {"ONBUILD RUN cd", Good("ONBUILD RUN cd /src && make\n"), "dockerfile.cd", true, "DL3003",
       Severity::kWarning},
      {"ONBUILD COPY is not a RUN", Good("ONBUILD COPY . /src\n"), "dockerfile.cd", false},
      {"pipx is not pip", deb + "RUN pipx install black\nUSER 1\n", "dockerfile.package-cache",
       false},
      {"pipenv is not pip", deb + "RUN pipenv install\nUSER 1\n", "dockerfile.package-cache",
       false},
      {"pip3.11", deb + "RUN pip3.11 install torch\nUSER 1\n", "dockerfile.package-cache", true,
       "DL3042"},
      {"PIP_NO_CACHE_DIR inline", deb + "RUN PIP_NO_CACHE_DIR=1 pip install torch\nUSER 1\n",
       "dockerfile.package-cache", false},
      {"PIP_NO_CACHE_DIR exported",
       deb + "RUN export PIP_NO_CACHE_DIR=1 && pip install torch\nUSER 1\n",
       "dockerfile.package-cache", false},
      {"inline PIP_NO_CACHE_DIR holds for its command only",
       deb + "RUN PIP_NO_CACHE_DIR=1 pip install a && pip install b\nUSER 1\n",
       "dockerfile.package-cache", true, "DL3042"},
      {"dnf clean before install", deb + "RUN dnf clean all && dnf install -y jq\nUSER 1\n",
       "dockerfile.package-cache", true, "DL3032"},
      {"dnf clean after install", deb + "RUN dnf install -y jq && dnf clean all\nUSER 1\n",
       "dockerfile.package-cache", false},
      {"yarn install", deb + "RUN yarn install\nUSER 1\n", "dockerfile.package-cache", true,
       "DL3060"},
      {"yarn clean before install", deb + "RUN yarn cache clean && yarn install\nUSER 1\n",
       "dockerfile.package-cache", true, "DL3060"},
      {"yarn clean after install", deb + "RUN yarn install && yarn cache clean\nUSER 1\n",
       "dockerfile.package-cache", false},
      {"zypper install", deb + "RUN zypper install -y jq\nUSER 1\n", "dockerfile.package-cache",
       true, "DL3036"},
      {"zypper clean", deb + "RUN zypper install -y jq && zypper clean -a\nUSER 1\n",
       "dockerfile.package-cache", false},
      {"cd", Good("RUN cd /src && make\n"), "dockerfile.cd", true, "DL3003", Severity::kWarning},
      {"WORKDIR", Good("WORKDIR /src\n"), "dockerfile.cd", false},
  };
  for (const Case& c : cases) {
    std::vector<Finding> fs = AuditFindings(c.dockerfile);
    if (std::string(c.rule).empty()) {
      EXPECT_TRUE(fs.empty()) << c.name << "\n" << RenderFindingsText(fs);
      continue;
    }
    const Finding* f = Find(fs, c.rule);
    EXPECT_EQ(f != nullptr, c.expect) << c.name << "\n" << RenderFindingsText(fs);
    if (f == nullptr || !c.expect) continue;
    EXPECT_EQ(f->severity, c.severity) << c.name;
    EXPECT_GT(f->line, 0) << c.name;
    if (c.id != nullptr) {
      EXPECT_NE(f->message.find(c.id), std::string::npos) << c.name << ": " << f->message;
    }
  }
}

TEST(DockerfileRules, NpmCacheHasNoHadolintId) {
  // hadolint's DL3060 is yarn's cache; npm's is the same problem without an id.
  std::vector<Finding> fs = AuditFindings("FROM debian:12" + kPin + "\nRUN npm ci\nUSER 1\n");
  const Finding* f = Find(fs, "dockerfile.package-cache");
  ASSERT_NE(f, nullptr) << RenderFindingsText(fs);
  EXPECT_EQ(f->message.find("DL3060"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("npm"), std::string::npos) << f->message;
}

TEST(DockerfileRules, TableNamesEveryRuleOnce) {
  std::vector<std::string> ids;
  for (const auto& r : DockerfileRuleTable()) {
    EXPECT_NE(r.run, nullptr) << r.id;
    // Every id is one the suppression check knows (a separate list, audit/report/rule_ids.h), and
    // the hadolint column names hadolint rules ("DL3006/DL3007") or nothing.
    EXPECT_TRUE(IsAuditRuleId(r.id)) << r.id;
    EXPECT_TRUE(std::string(r.hadolint).empty() ||
                std::regex_match(std::string(r.hadolint), std::regex("DL[0-9]{4}(/DL[0-9]{4})*")))
        << r.id << ": " << r.hadolint;
    ids.push_back(r.id);
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
}

TEST(DockerfileRules, SimpleCommandsSplitPipes) {
  DockerfileInstruction run;
  run.keyword = "RUN";
  run.args = "A=1 curl -s x | sh && echo done";
  std::vector<SimpleCommand> cmds = SimpleCommands(run);
  ASSERT_EQ(cmds.size(), 3u);
  EXPECT_EQ(cmds[0].piped_to, 1);
  EXPECT_EQ(cmds[1].words.at(0), "sh");
  EXPECT_EQ(cmds[2].piped_to, -1);
}

}  // namespace
}  // namespace tg::audit
