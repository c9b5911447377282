// Dockerfile rules: a positive and a negative case for every rule, on real files in a temporary
// build context.
#include "audit/dockerfile/dockerfile_audit.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/support/test_util.h"

namespace tg::audit {
namespace {

const std::string kPin = "@sha256:" + std::string(64, 'c');
const std::string kGoodIgnore =
    "*\n!src\n**/.git\n**/*.ipynb\n**/.ipynb_checkpoints\n**/__pycache__\n.cache\n"
    "**/*.onnx\n**/*.onnx_data\n**/*.safetensors\n**/*.ckpt\n**/*.bin\n**/*.pt\n**/*.pth\n";

struct Audit {
  std::vector<Finding> findings;
  bool Has(const std::string& rule) const {
    return std::any_of(findings.begin(), findings.end(),
                       [&](const Finding& f) { return f.rule == rule; });
  }
  const Finding* First(const std::string& rule) const {
    for (const auto& f : findings) {
      if (f.rule == rule) return &f;
    }
    return nullptr;
  }
  std::string Dump() const { return RenderFindingsText(findings); }
};

// Writes Dockerfile (+ .dockerignore unless `ignore` is null) into a fresh context and audits it.
Audit AuditText(const std::string& dockerfile, const char* ignore = kGoodIgnore.c_str()) {
  testing::TempDir dir;
  testing::WriteFile(dir / "Dockerfile", dockerfile);
  if (ignore != nullptr) testing::WriteFile(dir / ".dockerignore", ignore);
  auto df = ParseDockerfile(dockerfile, dir / "Dockerfile");
  EXPECT_TRUE(df.ok()) << df.status().message();
  if (!df.ok()) return {};
  auto rep = AuditDockerfile(*df, {dir / "Dockerfile", dir.path()});
  EXPECT_TRUE(rep.ok()) << rep.status().message();
  return rep.ok() ? Audit{rep->findings} : Audit{};
}

std::string Clean() {
  return "FROM debian:12" + kPin +
         " AS build\n"
         "RUN apt-get update && apt-get install -y --no-install-recommends gcc cmake \\\n"
         " && make\n"
         "FROM scratch\n"
         "COPY --from=build /out/rootfs/ /\n"
         "USER 65532:65532\n"
         "ENTRYPOINT [\"/usr/bin/app\"]\n";
}

TEST(DockerfileAudit, CleanMultiStagePasses) {
  Audit a = AuditText(Clean());
  EXPECT_TRUE(a.findings.empty()) << a.Dump();
}

TEST(DockerfileAudit, MultiStage) {
  Audit bad = AuditText("FROM debian:12" + kPin + "\nRUN echo build > /x\n");
  ASSERT_TRUE(bad.Has("dockerfile.multi-stage")) << bad.Dump();
  EXPECT_EQ(bad.First("dockerfile.multi-stage")->line, 1);
  // A single stage that only assembles prebuilt files runs nothing: fine.
  Audit ok = AuditText("FROM scratch\nCOPY app /app\n");
  EXPECT_FALSE(ok.Has("dockerfile.multi-stage")) << ok.Dump();
}

TEST(DockerfileAudit, RuntimeBuildTools) {
  std::string head = "FROM debian:12" + kPin + " AS build\nRUN true\nFROM debian:12" + kPin + "\n";
  struct Case {
    std::string body;
    bool bad;
  } cases[] = {
      {"RUN apt-get update && apt-get install -y build-essential && rm -rf /var/lib/apt/lists/*\n",
       true},
      {"RUN apt-get update && apt-get install -y libssl-dev && rm -rf /var/lib/apt/lists/*\n",
       true},
      {"RUN apk add --no-cache gcc musl-dev\n", true},
      {"RUN pip install --no-cache-dir cmake==3.28\n", true},
      {"RUN nvcc -o k k.cu\n", true},
      {"RUN [\"/bin/sh\", \"-c\", \"make install\"]\n", true},
      {"RUN <<EOF\napt-get install -y g++-12\nrm -rf /var/lib/apt/lists/*\nEOF\n", true},
      {"COPY --from=build /usr/local/cuda /usr/local/cuda\n", true},
      {"COPY --from=build /usr/bin/gcc /usr/bin/gcc\n", true},
      {"COPY --from=build / /\n", true},
      // Negatives: runtime packages, artifacts, libraries.
      {"RUN apt-get update && apt-get install -y libssl3 ca-certificates "
       "&& rm -rf /var/lib/apt/lists/*\n",
       false},
      {"COPY --from=build /usr/local/cuda/lib64/libcudart.so.13 /usr/lib/\n", false},
      {"COPY --from=build /out/bin/app /usr/bin/app\n", false},
      {"RUN pip install --no-cache-dir numpy==1.26\n", false},
  };
  for (const auto& c : cases) {
    Audit a = AuditText(head + c.body);
    EXPECT_EQ(a.Has("dockerfile.runtime-build-tools"), c.bad) << c.body << a.Dump();
    if (c.bad && a.Has("dockerfile.runtime-build-tools")) {
      EXPECT_EQ(a.First("dockerfile.runtime-build-tools")->line, 4) << c.body;
    }
  }
  // The same install in the build stage is fine, and the runtime stage inherits through FROM.
  Audit inherited = AuditText("FROM debian:12" + kPin +
                              " AS build\nRUN apt-get install -y gcc "
                              "&& rm -rf /var/lib/apt/lists/*\nFROM build AS runtime\nCOPY x /x\n");
  EXPECT_TRUE(inherited.Has("dockerfile.runtime-build-tools")) << inherited.Dump();
}

TEST(DockerfileAudit, IsBuildToolPackage) {
  for (const char* p : {"gcc", "g++-12", "build-essential", "libpython3-dev", "cmake>=3.25",
                        "cuda-nvcc-13-0", "openssl-devel", "libcudnn9-dev-cuda-13", "clang"}) {
    EXPECT_TRUE(IsBuildToolPackage(p)) << p;
  }
  for (const char* p : {"libssl3", "ca-certificates", "python3", "numpy", "libgcc-s1",
                        "libcudnn9-cuda-13", "devscripts-el"}) {
    EXPECT_FALSE(IsBuildToolPackage(p)) << p;
  }
}

TEST(DockerfileAudit, RuntimeDevelBase) {
  std::string build = "FROM debian:12" + kPin + " AS build\nRUN true\n";
  Audit bad = AuditText(build + "FROM nvidia/cuda:13.0.0-cudnn-devel-ubuntu24.04" + kPin + "\n");
  EXPECT_TRUE(bad.Has("dockerfile.runtime-devel-base")) << bad.Dump();
  Audit ok = AuditText(build + "FROM nvidia/cuda:13.0.0-cudnn-runtime-ubuntu24.04" + kPin + "\n");
  EXPECT_FALSE(ok.Has("dockerfile.runtime-devel-base")) << ok.Dump();
}

TEST(DockerfileAudit, BaseDigest) {
  Audit bad =
      AuditText("FROM debian:12 AS build\nRUN true\nFROM scratch\nCOPY --from=build /a /a\n");
  ASSERT_TRUE(bad.Has("dockerfile.base-digest")) << bad.Dump();
  EXPECT_EQ(bad.First("dockerfile.base-digest")->line, 1);
  Audit copy_from_image = AuditText("FROM scratch\nCOPY --from=busybox:1.36 /bin/busybox /bb\n");
  EXPECT_TRUE(copy_from_image.Has("dockerfile.base-digest")) << copy_from_image.Dump();
  Audit arg_no_default = AuditText("ARG BASE\nFROM ${BASE} AS build\nRUN true\nFROM scratch\n");
  ASSERT_TRUE(arg_no_default.Has("dockerfile.base-digest"));
  EXPECT_NE(arg_no_default.First("dockerfile.base-digest")->message.find("BASE"),
            std::string::npos);
  // Negatives: digest via ARG default, scratch, stage names.
  Audit ok = AuditText("ARG BASE=debian:12" + kPin +
                       "\nFROM ${BASE} AS build\nRUN true\n"
                       "FROM scratch\nCOPY --from=build /a /a\nCOPY --from=0 /b /b\n");
  EXPECT_FALSE(ok.Has("dockerfile.base-digest")) << ok.Dump();
}

TEST(DockerfileAudit, PackageCache) {
  std::string head = "FROM debian:12" + kPin + " AS build\nRUN true\nFROM debian:12" + kPin + "\n";
  struct Case {
    std::string body;
    bool bad;
  } cases[] = {
      {"RUN apt-get update && apt-get install -y curl\n", true},
      {"RUN apt-get update\nRUN apt-get install -y curl && rm -rf /var/lib/apt/lists/*\n", true},
      {"RUN apt-get update && apt-get install -y curl && rm -rf /var/lib/apt/lists/*\n", false},
      {"RUN --mount=type=cache,target=/var/lib/apt/lists apt-get update && "
       "apt-get install -y curl\n",
       false},
      {"RUN pip install requests\n", true},
      {"RUN python3 -m pip install requests\n", true},
      {"RUN pip install --no-cache-dir requests\n", false},
      {"ENV PIP_NO_CACHE_DIR=1\nRUN pip install requests\n", false},
      {"RUN pip install requests && rm -rf /root/.cache/pip\n", false},
      {"RUN apk add curl\n", true},
      {"RUN apk add --no-cache curl\n", false},
      {"RUN dnf install -y curl\n", true},
      {"RUN dnf install -y curl && dnf clean all\n", false},
      {"RUN conda install -y numpy\n", true},
      {"RUN conda install -y numpy && conda clean -afy\n", false},
      {"RUN npm ci\n", true},
      {"RUN npm ci && npm cache clean --force\n", false},
      {"RUN sh -c 'apt-get update && apt-get install -y curl'\n", true},
  };
  for (const auto& c : cases) {
    Audit a = AuditText(head + c.body);
    EXPECT_EQ(a.Has("dockerfile.package-cache"), c.bad) << c.body << a.Dump();
  }
  // Build stages do not ship: their caches are not findings.
  Audit build_only = AuditText("FROM debian:12" + kPin +
                               " AS build\nRUN apt-get update && "
                               "apt-get install -y curl\nFROM scratch\nCOPY --from=build /x /x\n");
  EXPECT_FALSE(build_only.Has("dockerfile.package-cache")) << build_only.Dump();
}

TEST(DockerfileAudit, DockerignorePresence) {
  Audit missing = AuditText(Clean(), nullptr);
  ASSERT_TRUE(missing.Has("dockerfile.dockerignore")) << missing.Dump();
  // <Dockerfile>.dockerignore next to the Dockerfile counts (BuildKit reads it first).
  testing::TempDir dir;
  testing::WriteFile(dir / "deploy/Dockerfile", Clean());
  testing::WriteFile(dir / "deploy/Dockerfile.dockerignore", kGoodIgnore);
  auto df = ParseDockerfile(Clean(), dir / "deploy/Dockerfile");
  ASSERT_TRUE(df.ok());
  auto rep = AuditDockerfile(*df, {dir / "deploy/Dockerfile", dir.path()});
  ASSERT_TRUE(rep.ok());
  EXPECT_TRUE(rep->findings.empty()) << RenderFindingsText(rep->findings);
  EXPECT_EQ(rep->dockerignore, dir / "deploy/Dockerfile.dockerignore");
}

TEST(DockerfileAudit, DockerignoreCoverage) {
  struct Case {
    std::string ignore;
    std::string category;  // expected in the message, "" = clean
  } cases[] = {
      {kGoodIgnore, ""},
      {"**/*.ipynb\n**/.ipynb_checkpoints\n**/__pycache__\n.cache\n**/*.onnx\n**/*.onnx_data\n"
       "**/*.safetensors\n**/*.ckpt\n**/*.bin\n**/*.pt\n**/*.pth\n",
       "version control"},
      {".git\n**/__pycache__\n.cache\n**/*.onnx\n**/*.onnx_data\n**/*.safetensors\n**/*.ckpt\n"
       "**/*.bin\n**/*.pt\n**/*.pth\n",
       "notebooks"},
      {".git\n**/*.ipynb\n**/.ipynb_checkpoints\n**/*.onnx\n**/*.onnx_data\n**/*.safetensors\n"
       "**/*.ckpt\n**/*.bin\n**/*.pt\n**/*.pth\n",
       "caches"},
      // '*.onnx' only matches at the top of the context.
      {".git\n**/*.ipynb\n**/.ipynb_checkpoints\n**/__pycache__\n.cache\n*.onnx\n*.onnx_data\n"
       "*.safetensors\n*.ckpt\n*.bin\n*.pt\n*.pth\n",
       "model weights"},
      // An exception re-admits weights.
      {kGoodIgnore + "!models/unet/model.onnx\n", "model weights"},
  };
  for (const auto& c : cases) {
    Audit a = AuditText(Clean(), c.ignore.c_str());
    if (c.category.empty()) {
      EXPECT_FALSE(a.Has("dockerfile.dockerignore-coverage")) << a.Dump();
      continue;
    }
    const Finding* f = a.First("dockerfile.dockerignore-coverage");
    ASSERT_NE(f, nullptr) << c.ignore;
    EXPECT_EQ(a.findings.size(), 1u) << a.Dump();
    EXPECT_NE(f->message.find(c.category), std::string::npos) << f->message;
  }
  Audit top = AuditText(Clean(),
                        ".git\n**/*.ipynb\n**/.ipynb_checkpoints\n**/__pycache__\n.cache\n"
                        "*.onnx\n**/*.onnx_data\n**/*.safetensors\n**/*.ckpt\n**/*.bin\n"
                        "**/*.pt\n**/*.pth\n");
  const Finding* f = top.First("dockerfile.dockerignore-coverage");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("models/unet/model.onnx"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("only at the top"), std::string::npos) << f->message;
}

}  // namespace
}  // namespace tg::audit

namespace tg::audit {
namespace {

TEST(DockerfileAudit, HostileLongPathsAreSurvived) {
  std::string longpath = "/" + std::string(2 << 20, 'x');
  Audit a =
      AuditText("FROM debian:12" + kPin + " AS build\nRUN true\nFROM " + std::string(100000, 'b') +
                " AS other\nFROM scratch\nCOPY --from=build " + longpath + " /x\n");
  EXPECT_TRUE(a.Has("dockerfile.base-digest")) << a.Dump().size();
  EXPECT_FALSE(a.Has("dockerfile.runtime-build-tools"));
}

}  // namespace
}  // namespace tg::audit
