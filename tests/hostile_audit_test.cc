// Hostile inputs for `audit k8s`, `audit dockerfile` and `k8s render`, table-driven through the
// real binary: each case states its exit code and a message fragment, and where the class is
// memory (alias bombs, ARG expansion) a ceiling on the child's peak RSS, read with wait4().
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "audit/report/rule_ids.h"
#include "common/json_writer.h"

#include "tests/fixtures/make_images.h"
#include "tests/support/hostile_bounds.h"
#include "tests/support/hostile_fixtures.h"
#include "tests/support/many_entry_image.h"
#include "tests/support/measured_run.h"
#include "tests/support/test_util.h"

namespace tg::testing {
namespace {

struct Child {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
  long max_rss_kib = 0;
};

// The child with stdout+stderr into one file (SpawnChild), then wait4() for the peak RSS. A CPU
// limit turns a hang into a failure instead of a stuck test.
Child RunMeasured(const std::vector<std::string>& args, const std::string& out_path) {
  std::vector<std::string> argv = {TruegreenPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  Child c;
  ChildIo io;
  io.out_file = out_path;
  io.file_mode = 0600;
  io.cpu_limit_s = 60;
  const pid_t pid = SpawnChild(std::move(argv), io);
  int status = 0;
  rusage ru{};
  if (pid > 0 && wait4(pid, &status, 0, &ru) == pid) {
    c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    c.max_rss_kib = ru.ru_maxrss;
  }
  c.out = ReadFile(out_path);
  return c;
}

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// A YAML document whose aliases expand 10 Pods ten-fold per level, 8 levels deep (10^8 objects).
std::string AliasBomb() {
  std::string y =
      "kind: List\nx0: &a0 {kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, "
      "image: i}]}}\n";
  for (int i = 1; i <= 8; ++i) {
    y += "x" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) y += std::string(j ? ", " : "") + "*a" + std::to_string(i - 1);
    y += "]\n";
  }
  return y + "items: *a8\n";
}

// 30 000 Lists, each holding the previous one through an alias.
std::string AliasChain() {
  std::string y = "kind: List\ndefs:\n  - &a0 {kind: List, items: []}\n";
  for (int i = 1; i < 30000; ++i) {
    y += "  - &a" + std::to_string(i) + " {kind: List, items: [*a" + std::to_string(i - 1) + "]}\n";
  }
  return y + "items: [*a29999]\n";
}

// 40 ARG levels, each ten references to the previous one (10^40 bytes if expanded).
std::string ArgBomb() {
  std::string d = "ARG A0=xxxxxxxxxx\n";
  for (int i = 1; i <= 40; ++i) {
    d += "ARG A" + std::to_string(i) + "=" + Repeat("${A" + std::to_string(i - 1) + "}", 10) + "\n";
  }
  return d + "FROM scratch\n";
}

// A docker-archive whose manifest names one small layer `refs` times (entries x references was
// the memory class: a few MB of manifest asked for gigabytes).
// An OCI layout whose layer blob is a FIFO with no writer (reading it would block forever).
void WriteLayoutWithFifoBlob(const std::string& dir, const std::string& work) {
  namespace im = tg::testing::images;
  im::ImageSpec spec;
  im::LayerSpec layer;
  layer.files = {im::File("app/x", "hello")};
  spec.layers.push_back(layer);
  im::WriteImage(spec, im::Format::kOciLayout, dir, work);
  for (const auto& e : std::filesystem::directory_iterator(dir + "/blobs/sha256")) {
    const std::string head = ReadFile(e.path().string()).substr(0, 2);
    if (head == "\x1f\x8b") {  // the gzip layer (manifests and configs are JSON)
      std::filesystem::remove(e.path());
      ::mkfifo(e.path().c_str(), 0600);
    }
  }
}

void WriteManyRefImage(const std::string& path, int refs) {
  const std::string script =
      "import io,json,sys,tarfile\n"
      "def add(t,name,data):\n"
      "  i=tarfile.TarInfo(name); i.size=len(data); t.addfile(i,io.BytesIO(data))\n"
      "lb=io.BytesIO(); lt=tarfile.open(fileobj=lb,mode='w')\n"
      "for k in range(50): add(lt,'f%d'%k,b'x')\n"
      "lt.close(); layer=lb.getvalue()\n"
      "import hashlib; d='sha256:'+hashlib.sha256(layer).hexdigest()\n"
      "n=int(sys.argv[2])\n"
      "cfg=json.dumps({'architecture':'amd64','os':'linux','rootfs':{'type':'layers',"
      "'diff_ids':[d]*n}}).encode()\n"
      "t=tarfile.open(sys.argv[1],'w')\n"
      "add(t,'layer.tar',layer); add(t,'config.json',cfg)\n"
      "add(t,'manifest.json',json.dumps([{'Config':'config.json','RepoTags':['x:1'],"
      "'Layers':['layer.tar']*n}]).encode())\n"
      "t.close()\n";
  ProcessResult r = RunProcess({SystemPython(), "-c", script, path, std::to_string(refs)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// An OCI layout (or, for the legacy_* modes, a docker-save tar) with one hand-made layer: `mode`
// picks what is wrong with it (media type, compression, hard links, symlinked members).
void WriteOddImage(const std::string& out, const std::string& mode) {
  const std::string script =
      "import gzip,hashlib,io,json,os,shutil,sys,tarfile\n"
      "out,mode=sys.argv[1],sys.argv[2]\n"
      "def tar(ms):\n"
      "  b=io.BytesIO(); t=tarfile.open(fileobj=b,mode='w',format=tarfile.GNU_FORMAT)\n"
      "  for n,k,a in ms:\n"
      "    i=tarfile.TarInfo(n)\n"
      "    if k=='f': i.size=len(a); t.addfile(i,io.BytesIO(a))\n"
      "    elif k=='h': i.type=tarfile.LNKTYPE; i.linkname=a; t.addfile(i)\n"
      "  t.close(); return b.getvalue()\n"
      "def gz(b): return gzip.compress(b,mtime=0)\n"
      "def sha(b): return hashlib.sha256(b).hexdigest()\n"
      "base=[('app/run.sh','f',b'#!/bin/sh\\n')]\n"
      "mt='application/vnd.oci.image.layer.v1.tar+gzip'\n"
      "layer={'good':lambda:gz(tar(base+[('app/link','h','app/run.sh')])),\n"
      " 'unknown_media':lambda:gz(tar(base)),'gzip_as_zstd':lambda:gz(tar(base)),\n"
      " 'plain_as_gzip':lambda:tar(base),'nested_gzip':lambda:gz(gz(tar(base))),\n"
      " 'hardlink_loop':lambda:gz(tar(base+[('app/a','h','app/b'),('app/b','h','app/a')])),\n"
      " 'hardlink_missing':lambda:gz(tar(base+[('app/a','h','app/nowhere')])),\n"
      " 'hardlink_later':lambda:gz(tar([('app/a','h','app/"
      "run.sh')]+base))}.get(mode,lambda:b'')()\n"
      "if mode=='unknown_media': mt='application/vnd.example.layer.v1+gzip'\n"
      "if mode=='gzip_as_zstd': mt='application/vnd.oci.image.layer.v1.tar+zstd'\n"
      "lt=tar(base)\n"
      "cfg=json.dumps({'architecture':'amd64','os':'linux','config':{'User':'1000'},\n"
      "  'rootfs':{'type':'layers','diff_ids':['sha256:'+sha(lt)]*2}}).encode()\n"
      "if mode.startswith('legacy'):\n"
      "  t=tarfile.open(out,'w')\n"
      "  def add(n,d):\n"
      "    i=tarfile.TarInfo(n); i.size=len(d); t.addfile(i,io.BytesIO(d))\n"
      "  add('a/layer.tar',lt)\n"
      "  i=tarfile.TarInfo('b/layer.tar'); i.type=tarfile.SYMTYPE\n"
      "  i.linkname='../a/layer.tar' if mode=='legacy_symlink_ok' else '../gone/layer.tar'\n"
      "  t.addfile(i); add('config.json',cfg)\n"
      "  add('manifest.json',json.dumps([{'Config':'config.json','RepoTags':['x:1'],\n"
      "    'Layers':['a/layer.tar','b/layer.tar']}]).encode()); t.close(); sys.exit(0)\n"
      "os.makedirs(out+'/blobs/sha256')\n"
      "def blob(b,m):\n"
      "  open(out+'/blobs/sha256/'+sha(b),'wb').write(b)\n"
      "  return {'mediaType':m,'digest':'sha256:'+sha(b),'size':len(b)}\n"
      "c=blob(cfg,'application/vnd.oci.image.config.v1+json')\n"
      "mm='application/vnd.oci.image.manifest.v1+json'\n"
      "m=blob(json.dumps({'schemaVersion':2,'mediaType':mm,'config':c,\n"
      "  'layers':[blob(layer,mt)]}).encode(),mm)\n"
      "open(out+'/index.json','w').write(json.dumps({'schemaVersion':2,'manifests':[m]}))\n"
      "open(out+'/oci-layout','w').write('{\"imageLayoutVersion\":\"1.0.0\"}')\n";
  ProcessResult r = RunProcess({SystemPython(), "-c", script, out, mode});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// A suppressions file of `n` entries (about 45 bytes each), each its own path: one rule and
// path twice is refused.
std::string ManySuppressions(int n) {
  std::string s = "suppressions:\n";
  for (int i = 0; i < n; ++i) {
    const std::string k = std::to_string(i);
    s += "  - {rule: k8s.image-digest, reason: r" + k + ", path: p" + k + "/}\n";
  }
  return s;
}

constexpr const char* kPod =
    "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n";

// `n` Deployments of about 580 bytes each, three findings apiece (5008 of them: the 2.9 MB case,
// 15 024 findings).
std::string ManyDeployments(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    const std::string k = std::to_string(i);
    s += "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-" + k +
         "\n  namespace: prod\n  labels: {app: app-" + k +
         ", tier: backend}\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: app-" + k +
         "}\n  template:\n    metadata:\n      labels: {app: app-" + k +
         "}\n    spec:\n      containers:\n        - name: main\n          image: "
         "example.org/app:1." +
         k +
         "\n          ports: [{containerPort: 8080}]\n          env:\n            - {name: A, "
         "value: \"1\"}\n            - {name: B, value: \"2\"}\n          resources:\n         "
         "   limits: {cpu: \"1\", memory: 1Gi}\n            requests: {cpu: \"500m\", memory: "
         "512Mi}\n";
  }
  return s;
}

// `pods` Pods of `containers` bare containers each (name and image only): four findings per
// container. 100 x 1000 is 2.9 MB and 400 000 findings (844 MB listed in full; 1.43 GB as JSON).
std::string ManyBareContainers(int pods, int containers) {
  std::string s;
  for (int p = 0; p < pods; ++p) {
    s += "---\nkind: Pod\nmetadata: {name: p" + std::to_string(p) + "}\nspec:\n  containers:\n";
    for (int c = 0; c < containers; ++c)
      s += "    - {name: c" + std::to_string(c) + ", image: i}\n";
  }
  return s;
}

struct Case {
  const char* name;
  std::function<void(const TempDir&)> setup;  // writes the inputs
  std::vector<std::string> args;              // "{dir}" is replaced by the temp dir
  int exit_code;
  const char* fragment;          // must appear in the output
  const char* absent = nullptr;  // must not appear (echoed file contents)
  long max_rss_mib = 0;          // 0 = not a memory case
  long asan_rss_mib = 0;         // see HostileBounds::asan_rss_mib
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> k = {
      {"k8s_self_cycle",
       [](const TempDir& d) {
         WriteFile(d / "m.yaml", "items: &L [{kind: List, items: *L}]\nkind: List\n");
       },
       {"audit", "k8s", "{dir}/m.yaml"},
       2,
       "cycle"},
      {"k8s_alias_chain_30000",
       [](const TempDir& d) { WriteFile(d / "m.yaml", AliasChain()); },
       {"audit", "k8s", "{dir}/m.yaml"},
       2,
       "nesting deeper than 64 levels",
       nullptr,
       256},
      {"k8s_alias_bomb",
       [](const TempDir& d) { WriteFile(d / "m.yaml", AliasBomb()); },
       {"audit", "k8s", "{dir}/m.yaml"},
       2,
       "limit on alias expansion",
       nullptr,
       128},
      {"k8s_empty_file",
       [](const TempDir& d) { WriteFile(d / "m.yaml", ""); },
       {"audit", "k8s", "{dir}/m.yaml"},
       2,
       "no Kubernetes objects"},
      {"k8s_only_empty_documents",
       [](const TempDir& d) { WriteFile(d / "m.yaml", "---\n---\n# nothing\n---\n"); },
       {"audit", "k8s", "{dir}/m.yaml"},
       2,
       "only empty documents"},
      {"k8s_scalar_document_not_echoed",
       [](const TempDir& d) { WriteFile(d / "m.yaml", "root:x:0:0:root:/root:/bin/bash\n"); },
       {"audit", "k8s", "{dir}/m.yaml"},
       2,
       "a scalar",
       "/bin/bash"},
      {"kustomize_resource_outside_root",
       [](const TempDir& d) {
         WriteFile(d / "k/kustomization.yaml",
                   "resources:\n  - ../../../../../../../../etc/passwd\n");
       },
       {"audit", "k8s", "--kustomize", "builtin", "{dir}/k"},
       2,
       "outside the kustomization directory",
       "root:x:0"},
      {"kustomize_symlink_outside_root",
       [](const TempDir& d) {
         WriteFile(d / "k/kustomization.yaml", "resources:\n  - link.yaml\n");
         WriteFile(d / "secret.yaml", "kind: Pod\nmetadata: {name: secret-content}\n");
         symlink((d / "secret.yaml").c_str(), (d / "k/link.yaml").c_str());
       },
       {"audit", "k8s", "--kustomize", "builtin", "{dir}/k"},
       2,
       "outside the kustomization directory",
       "secret-content"},
      {"kustomize_self_cycle",
       [](const TempDir& d) { WriteFile(d / "k/kustomization.yaml", "resources:\n  - .\n"); },
       {"audit", "k8s", "--kustomize", "builtin", "{dir}/k"},
       2,
       "cycle"},
      {"kustomize_unsupported_feature",
       [](const TempDir& d) {
         WriteFile(d / "k/kustomization.yaml",
                   "resources: [p.yaml]\nconfigMapGenerator:\n  - name: x\n    literals: [a=b]\n");
         WriteFile(d / "k/p.yaml", "kind: Service\nmetadata: {name: s}\n");
       },
       {"audit", "k8s", "--kustomize", "builtin", "{dir}/k"},
       2,
       "'configMapGenerator' is not supported"},
      {"kustomize_empty_resource",
       [](const TempDir& d) {
         WriteFile(d / "k/kustomization.yaml", "resources: [p.yaml]\n");
         WriteFile(d / "k/p.yaml", "---\n");
       },
       {"audit", "k8s", "--kustomize", "builtin", "{dir}/k"},
       2,
       "holds no Kubernetes objects"},
      {"dockerfile_arg_bomb",
       [](const TempDir& d) { WriteFile(d / "Dockerfile", ArgBomb()); },
       {"audit", "dockerfile", "{dir}/Dockerfile"},
       2,
       "expansion limit hit",
       nullptr,
       128},
      {"dockerfile_from_bomb",
       [](const TempDir& d) {
         WriteFile(d / "Dockerfile",
                   "ARG A=" + std::string(60000, 'x') + "\nFROM " + Repeat("$A", 30000) + "\n");
       },
       {"audit", "dockerfile", "{dir}/Dockerfile"},
       2,
       "expansion limit hit",
       nullptr,
       128},
      {"image_too_many_layer_references",
       [](const TempDir& d) { WriteManyRefImage(d / "img.tar", 5000); },
       {"audit", "image", "{dir}/img.tar"},
       2,
       "the manifest names 5000 layers",
       nullptr,
       256},
      {"image_layer_references_within_limit",
       [](const TempDir& d) { WriteManyRefImage(d / "img.tar", 200); },
       {"audit", "image", "{dir}/img.tar"},
       6,
       "image.efficiency",
       "image.hostile.entry-limit",
       256},
      {"image_fifo_is_refused_not_waited_on",
       [](const TempDir& d) { ::mkfifo((d / "img.tar").c_str(), 0600); },
       {"audit", "image", "{dir}/img.tar"},
       2,
       "not a regular file or an OCI layout directory"},
      {"image_layout_fifo_blob_is_refused",
       [](const TempDir& d) { WriteLayoutWithFifoBlob(d / "layout", d / "work"); },
       {"audit", "image", "{dir}/layout"},
       2,
       "not a regular file (a FIFO"},
      {"image_good_layout_has_no_layer_findings",
       [](const TempDir& d) { WriteOddImage(d / "img", "good"); },
       {"audit", "image", "{dir}/img"},
       0,
       "PASS",
       "image.hardlink-broken"},
      {"image_unknown_layer_media_type",
       [](const TempDir& d) { WriteOddImage(d / "img", "unknown_media"); },
       {"audit", "image", "{dir}/img"},
       6,
       "unknown layer media type 'application/vnd.example.layer.v1+gzip'",
       nullptr},
      {"image_gzip_declared_zstd",
       [](const TempDir& d) { WriteOddImage(d / "img", "gzip_as_zstd"); },
       {"audit", "image", "{dir}/img"},
       6,
       "declares zstd compression, but the magic bytes are gzip",
       nullptr},
      {"image_plain_declared_gzip",
       [](const TempDir& d) { WriteOddImage(d / "img", "plain_as_gzip"); },
       {"audit", "image", "{dir}/img"},
       6,
       "declares gzip compression, but the magic bytes are none",
       nullptr},
      {"image_gzip_nested_twice",
       [](const TempDir& d) { WriteOddImage(d / "img", "nested_gzip"); },
       {"audit", "image", "{dir}/img"},
       6,
       "gzip-compressed 2 times",
       nullptr},
      {"image_hardlink_loop",
       [](const TempDir& d) { WriteOddImage(d / "img", "hardlink_loop"); },
       {"audit", "image", "{dir}/img"},
       6,
       "hard-link loop: app/a -> app/b -> app/a",
       nullptr},
      {"image_hardlink_to_missing_member",
       [](const TempDir& d) { WriteOddImage(d / "img", "hardlink_missing"); },
       {"audit", "image", "{dir}/img"},
       6,
       "no member app/nowhere exists in this layer or any layer below",
       nullptr},
      {"image_hardlink_to_later_member",
       [](const TempDir& d) { WriteOddImage(d / "img", "hardlink_later"); },
       {"audit", "image", "{dir}/img"},
       6,
       "the target is stored later in the layer",
       nullptr},
      {"image_symlinked_layer_member_is_followed",
       [](const TempDir& d) { WriteOddImage(d / "img.tar", "legacy_symlink_ok"); },
       {"audit", "image", "{dir}/img.tar"},
       6,
       "image.efficiency",  // the same layer twice wastes its size: the image was read
       "is missing"},
      {"image_dangling_symlink_member_says_symlink",
       [](const TempDir& d) { WriteOddImage(d / "img.tar", "legacy_symlink_dangling"); },
       {"audit", "image", "{dir}/img.tar"},
       2,
       "member b/layer.tar is a symlink -> '../gone/layer.tar'",
       "is missing"},
      {"suppression_unknown_rule_id_warns_with_closest",
       [](const TempDir& d) {
         WriteFile(d / "m.yaml", kPod);
         WriteFile(d / "s.yaml", "suppressions:\n  - rule: k8s.imag-digest\n    reason: x\n");
       },
       {"audit", "k8s", "{dir}/m.yaml", "--suppressions", "{dir}/s.yaml"},
       6,
       "s.yaml:2: unknown rule id 'k8s.imag-digest': no audit reports it, so this suppression "
       "matches nothing (did you mean 'k8s.image-digest'?)"},
      {"suppression_unknown_rule_id_in_json",
       [](const TempDir& d) {
         WriteFile(d / "Dockerfile", "FROM scratch\n");
         WriteFile(d / "s.yaml", "suppressions:\n  - rule: DL3008\n    reason: x\n");
       },
       {"audit", "dockerfile", "{dir}/Dockerfile", "--suppressions", "{dir}/s.yaml", "--json"},
       6,
       "\"warnings\": [\n    \""},
      {"image_policy_unknown_disabled_rule_warns",
       [](const TempDir& d) {
         WriteOddImage(d / "img", "good");
         WriteFile(d / "p.yaml",
                   "image:\n  disable: [image.efficency, image.gpu.*]\n"
                   "  severity: {image.budgett: warning, image.layer-media-type: off}\n");
       },
       {"audit", "image", "{dir}/img", "--rules", "{dir}/p.yaml"},
       0,
       "p.yaml: image.disable (or severity: off): unknown rule id 'image.efficency': no audit "
       "reports it, so this entry changes nothing (did you mean 'image.efficiency'?)",
       "'image.gpu.*'"},  // a family that exists is not warned about
      {"image_policy_unknown_severity_rule_warns",
       [](const TempDir& d) {
         WriteOddImage(d / "img", "good");
         WriteFile(d / "p.yaml", "image:\n  severity: {image.budgett: warning}\n");
       },
       {"audit", "image", "{dir}/img", "--rules", "{dir}/p.yaml"},
       0,
       "image.severity: unknown rule id 'image.budgett'"},
      {"suppressions_over_cap_refused_before_parsing",
       [](const TempDir& d) {
         WriteFile(d / "m.yaml", kPod);
         WriteFile(d / "s.yaml", ManySuppressions(100000));  // 5 MB
       },
       {"audit", "k8s", "{dir}/m.yaml", "--suppressions", "{dir}/s.yaml"},
       2,
       "100000 suppression entries ('rule:' keys); at most 10000 are read",
       nullptr,
       100},
      {"suppressions_at_cap_accepted",
       [](const TempDir& d) {
         WriteFile(d / "m.yaml", kPod);
         WriteFile(d / "s.yaml", ManySuppressions(10000));
       },
       {"audit", "k8s", "{dir}/m.yaml", "--suppressions", "{dir}/s.yaml"},
       6,
       "FAIL",
       "at most 10000 are read"},
      // 0.4 MB of short entries: read from the parser's events (the node tree cost 52 MB).
      {"suppressions_nine_thousand_short_within_twenty_times",
       [](const TempDir& d) {
         WriteFile(d / "m.yaml", kPod);
         WriteFile(d / "s.yaml", ManySuppressions(9000));  // 0.4 MB
       },
       {"audit", "k8s", "{dir}/m.yaml", "--suppressions", "{dir}/s.yaml"},
       6,
       "FAIL",
       nullptr,
       20},  // 20 x 0.4 MB + the binary's own ~12 MB
      // The same with a bad date in the last entry: named from the events too (the tree: 54 MB).
      {"suppressions_nine_thousand_fault_at_end_within_twenty_times",
       [](const TempDir& d) {
         WriteFile(d / "m.yaml", kPod);
         WriteFile(d / "s.yaml", ManySuppressions(9000) +
                                     "  - {rule: k8s.image-digest, reason: r, expires: soon}\n");
       },
       {"audit", "k8s", "{dir}/m.yaml", "--suppressions", "{dir}/s.yaml"},
       2,
       "s.yaml:9002:50: field 'suppressions[].expires': expected a real calendar date YYYY-MM-DD, "
       "found 'soon'",
       nullptr,
       20},  // 20 x 0.4 MB + the binary's own ~12 MB
      {"suppressions_three_megabytes_within_twenty_times",
       [](const TempDir& d) {
         WriteFile(d / "m.yaml", kPod);
         std::string s = "suppressions:\n";
         for (int i = 0; i < 10000; ++i) {
           s += "  - rule: k8s.image-digest\n    reason: " + std::string(270, 'x') +
                std::to_string(i) + "\n    path: p" + std::to_string(i) + "/\n";
         }
         WriteFile(d / "s.yaml", s);  // 3.1 MB
       },
       {"audit", "k8s", "{dir}/m.yaml", "--suppressions", "{dir}/s.yaml"},
       6,
       "FAIL",
       nullptr,
       75},  // 20 x 3 MB + the binary's own ~12 MB
      {"k8s_documents_over_cap_refused",
       [](const TempDir& d) {
         WriteFile(d / "m.yaml", Repeat(std::string("---\n") + kPod, 10001));
       },
       {"audit", "k8s", "{dir}/m.yaml"},
       2,
       "more than 10000 YAML documents in one file",
       nullptr,
       100},
      // 1.2 MB of JSON whose list holds 300 000 empty objects: refused at node 100 001 on the
      // parser's events, before any tree (yaml-cpp spent 150 MB on it).
      {"k8s_nodes_over_cap_refused_before_tree",
       [](const TempDir& d) {
         WriteFile(d / "m.yaml", "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[" +
                                     Repeat("{},", 299999) + "{}]}");
       },
       {"audit", "k8s", "{dir}/m.yaml"},
       2,
       "more than 100000 YAML nodes in one document (document 1, which starts at line 1; at "
       "most 100000 nodes are read per document)",
       nullptr,
       36},  // 20 x 1.2 MB + the binary's own ~12 MB
      // The same list in YAML flow style, 9 MB: yaml-cpp queues a nested flow collection's
      // tokens before its first event (1.2 GB); the reader stops it after 304 096 indicators.
      {"k8s_yaml_flow_collection_over_cap_bounded",
       [](const TempDir& d) {
         WriteFile(d / "m.yaml",
                   "{apiVersion: v1, kind: List, items: [" + Repeat("{},", 3000000) + "{}]}\n");
       },
       {"audit", "k8s", "{dir}/m.yaml"},
       2,
       "more than 304096 brackets and commas before the parser's next node (document 1, which "
       "starts at line 1)",
       nullptr,
       80},  // 56 MB measured: the bounded queue, far under 20 x 9 MB
      {"k8s_three_megabytes_within_twenty_times",
       [](const TempDir& d) { WriteFile(d / "m.yaml", ManyDeployments(5008)); },  // 2.9 MB
       {"audit", "k8s", "{dir}/m.yaml"},
       6,
       "[doc 5008] Deployment/app-5007",  // the last document was audited
       nullptr,
       70,     // 20 x 2.9 MB + the binary's own ~12 MB (LoadAll of every document: 204 MB)
       1200},  // ASan: 948 MB measured (each batch's freed nodes sit in the quarantine)
      // The same 2.9 MB (15 024 findings) in the other formats, streamed finding by finding (87 /
      // 84 / 66 MB for JSON / SARIF / JUnit when each was built as one document and one string).
      {"k8s_three_megabytes_json_and_report_files_streamed",
       [](const TempDir& d) { WriteFile(d / "m.yaml", ManyDeployments(5008)); },
       {"audit", "k8s", "{dir}/m.yaml", "--format", "json", "--sarif", "{dir}/r.sarif", "--junit",
        "{dir}/r.xml"},
       6,
       "\"object\": \"Deployment/app-5007\"",
       nullptr,
       70,
       1200},  // ASan: 930 MB measured
      {"k8s_three_megabytes_junit_on_stdout_streamed",
       [](const TempDir& d) { WriteFile(d / "m.yaml", ManyDeployments(5008)); },
       {"audit", "k8s", "{dir}/m.yaml", "--format", "junit"},
       6,
       "[doc 5008] Deployment/app-5007",
       nullptr,
       70,
       1200},
      {"k8s_findings_past_the_cap_counted_not_listed",
       [](const TempDir& d) { WriteFile(d / "m.yaml", ManyBareContainers(100, 1000)); },
       {"audit", "k8s", "{dir}/m.yaml"},
       6,
       "375000 more finding(s) not listed: at most 25000 are listed",
       "[doc 8]",  // the cap is reached in document 7: nothing later is listed
       70,         // 20 x 2.9 MB + ~12 MB (listing all 400 000: 844 MB; 1.43 GB as JSON)
       1400},      // ASan: not measured; the 2.9 MB case above took 948 MB
      {"k8s_findings_past_the_cap_json",
       [](const TempDir& d) { WriteFile(d / "m.yaml", ManyBareContainers(100, 1000)); },
       {"audit", "k8s", "{dir}/m.yaml", "--format", "json"},
       6,
       "\"rule\": \"audit.findings-truncated\"",
       "[doc 8]",
       70,
       1400},  // ASan: 1016 MB measured (30 s of CPU)
      {"logscan_findings_past_the_cap_counted_by_pattern",
       [](const TempDir& d) { WriteFile(d / "run.log", Repeat("falling back to CPU\n", 30)); },
       {"logscan", "{dir}/run.log", "--max-findings", "10"},
       3,  // NOT ACCELERATED: the category decides the exit code, truncated or not
       "20 more finding(s) not listed: at most 10 are listed (--max-findings); by rule: 20 "
       "ort.cpu_fallback_retry (error)"},
      {"logscan_truncation_in_json",
       [](const TempDir& d) { WriteFile(d / "run.log", Repeat("falling back to CPU\n", 30)); },
       {"--json", "logscan", "{dir}/run.log", "--max-findings", "10"},
       3,
       "\"truncated\": {"},
      {"logscan_max_findings_zero_refused",
       [](const TempDir& d) { WriteFile(d / "run.log", "x\n"); },
       {"logscan", "{dir}/run.log", "--max-findings", "0"},
       2,
       "allowed: 1..100000 findings"},
      // kPod yields exactly four findings: a cap of four lists them all, three does not.
      {"k8s_exactly_max_findings_not_truncated",
       [](const TempDir& d) { WriteFile(d / "m.yaml", kPod); },
       {"audit", "k8s", "{dir}/m.yaml", "--max-findings", "4"},
       6,
       "FAIL: 4 finding(s)",
       "not listed"},
      {"k8s_one_past_max_findings_truncated",
       [](const TempDir& d) { WriteFile(d / "m.yaml", kPod); },
       {"audit", "k8s", "{dir}/m.yaml", "--max-findings", "3"},
       6,
       "1 more finding(s) not listed: at most 3 are listed (--max-findings); by rule: 1 "
       "k8s.run-as-non-root (warning)"},
      {"k8s_max_findings_zero_refused",
       [](const TempDir& d) { WriteFile(d / "m.yaml", kPod); },
       {"audit", "k8s", "{dir}/m.yaml", "--max-findings", "0"},
       2,
       "--max-findings: '0' is outside the range of this option; allowed: 1..100000 findings"},
      {"dockerfile_max_findings_past_range_refused",
       [](const TempDir& d) { WriteFile(d / "Dockerfile", "FROM scratch\n"); },
       {"audit", "dockerfile", "{dir}/Dockerfile", "--max-findings", "100001"},
       2,
       "allowed: 1..100000 findings"},
      {"k8s_max_findings_one_truncates_and_fails",
       [](const TempDir& d) { WriteFile(d / "m.yaml", kPod); },
       {"audit", "k8s", "{dir}/m.yaml", "--max-findings", "1", "--fail-on", "error"},
       6,
       "more finding(s) not listed: at most 1 are listed"},
      {"render_negative_cpu",
       [](const TempDir&) {},
       {"k8s", "render", "--matrix", SourceDir() + "/deploy/matrix.example.yaml", "--cpu", "-5"},
       2,
       "--cpu '-5'"},
      {"render_zero_cpu",
       [](const TempDir&) {},
       {"k8s", "render", "--matrix", SourceDir() + "/deploy/matrix.example.yaml", "--cpu", "0"},
       2,
       "--cpu"},
      {"render_bad_memory",
       [](const TempDir&) {},
       {"k8s", "render", "--matrix", SourceDir() + "/deploy/matrix.example.yaml", "--memory",
        "abc"},
       2,
       "--memory 'abc'"},
      {"render_image_newline",
       [](const TempDir&) {},
       {"k8s", "render", "--matrix", SourceDir() + "/deploy/matrix.example.yaml", "--image",
        "evil\nkind: Pod"},
       2,
       "--image: expected an image reference",
       "kind: Pod"},
  };
  return k;
}

class HostileAudit : public ::testing::TestWithParam<std::size_t> {};

TEST_P(HostileAudit, ExitCodeMessageAndMemory) {
  const Case& c = Cases()[GetParam()];
  TempDir dir;
  c.setup(dir);
  std::vector<std::string> args;
  for (std::string a : c.args) {
    if (auto p = a.find("{dir}"); p != std::string::npos) a.replace(p, 5, dir.path());
    args.push_back(a);
  }
  Child r = RunMeasured(args, dir / "output.txt");
  EXPECT_EQ(r.exit_code, c.exit_code) << c.name << "\n" << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find(c.fragment), std::string::npos) << c.name << "\n" << r.out.substr(0, 2000);
  if (c.absent != nullptr) {
    EXPECT_EQ(r.out.find(c.absent), std::string::npos) << c.name << " echoed input\n" << r.out;
  }
  if (c.max_rss_mib > 0) {
    // The binary's start-up plus a small budget; the same inputs reached gigabytes before they
    // were bounded (RssCeilingMib adds the sanitizers' shadow memory).
    EXPECT_LT(r.max_rss_kib, CaseRssCeilingMib(c.max_rss_mib, c.asan_rss_mib) * 1024) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, HostileAudit, ::testing::Range<std::size_t>(0, Cases().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& i) {
                           return std::string(Cases()[i.param].name);
                         });

// Property: random bytes, invalid UTF-8 among them, in every text field that reaches a report
// (a Dockerfile's FROM and RUN, a manifest's image and names, a log line and a suppression
// reason) never end a command with exit 1 or a signal, and every output format stays a valid
// document: JSON and SARIF parse, JUnit is well-formed UTF-8 XML with its root element. Before
// the one JSON writer, nlohmann threw type_error.316 on such bytes (exit 1, "uncaught").
void ExpectValidReport(const Child& r, const std::string& what) {
  EXPECT_NE(r.exit_code, 1) << what << "\n" << r.out.substr(0, 2000);
  EXPECT_LT(r.exit_code, 128) << what << "\n" << r.out.substr(0, 2000);
}

TEST(HostileAuditProperty, InvalidUtf8NeverExitsOneAndEveryFormatStaysValid) {
  std::mt19937 rng(1919);
  for (int round = 0; round < 4; ++round) {
    TempDir dir;
    const std::string a = testing::RandomFieldText(&rng), b = testing::RandomFieldText(&rng),
                      c = testing::RandomFieldText(&rng);
    WriteFile(dir / "Dockerfile", "FROM debian" + a + ":12\nRUN echo " + b + "\n");
    WriteFile(dir / "pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: \"p" + a +
                                    "\"\nspec:\n  containers:\n    - name: \"c" + b +
                                    "\"\n      image: \"img" + c + ":1\"\n");
    WriteFile(dir / "run.log", "INFO " + a + " falling back to CPU " + b + "\n" + "WARN " + c +
                                   " 3 Memcpy nodes are added to the graph\n");
    WriteFile(dir / "supp.yaml",
              "suppressions:\n  - rule: dockerfile.base-tag\n    reason: \"" + c + "\"\n");
    const std::vector<std::vector<std::string>> commands = {
        {"audit", "dockerfile", dir / "Dockerfile"},
        {"audit", "k8s", dir / "pod.yaml"},
        {"logscan", dir / "run.log"},
    };
    for (const auto& base : commands) {
      for (const std::string format : {"text", "json", "sarif", "junit"}) {
        std::vector<std::string> args = base;
        args.insert(args.end(),
                    {"--format", format, "--sarif", dir / "r.sarif", "--junit", dir / "r.xml"});
        if (base[0] == "audit" && base[1] == "dockerfile") {
          args.insert(args.end(), {"--suppressions", dir / "supp.yaml"});
        }
        const std::string what = base[0] + " " + base[1] + " --format " + format;
        Child r = RunMeasured(args, dir / "out.txt");
        ExpectValidReport(r, what);
        if (r.exit_code == 2) continue;  // refused as input: nothing was written
        for (const std::string& path : {dir / "r.sarif", dir / "r.xml"}) {
          const std::string text = ReadFile(path);
          EXPECT_TRUE(common::IsValidUtf8(text)) << what << ": " << path;
          if (path == dir / "r.sarif") {
            common::Json j;
            EXPECT_NO_THROW(j = common::Json::parse(text)) << what;
            EXPECT_EQ(j.value("version", ""), "2.1.0") << what;
          } else {
            EXPECT_EQ(text.rfind("<?xml", 0), 0u) << what;
            EXPECT_NE(text.find("</testsuites>"), std::string::npos) << what;
          }
        }
      }
      // --json on stdout: one parseable document, valid UTF-8.
      std::vector<std::string> args = {"--json"};
      args.insert(args.end(), base.begin(), base.end());
      ProcessResult r = RunTruegreen(args);
      EXPECT_NE(r.exit_code, 1) << base[0] << "\n" << r.err.substr(0, 2000);
      EXPECT_LT(r.exit_code, 128) << base[0];
      EXPECT_TRUE(common::IsValidUtf8(r.out)) << base[0];
      common::Json j;
      EXPECT_NO_THROW(j = common::Json::parse(r.out)) << base[0] << "\n" << r.out.substr(0, 2000);
    }
  }
}

// A layer of 10^6 empty files with 17-character names (a 9.9 MiB gzip blob): every entry is
// read and counted within 20x the input plus the audit's fixed cost (about 12 MiB). The entries
// and the merged filesystem were once alive together as per-path heap strings and map nodes
// (341 MiB here); the filesystem now views the entries' names.
TEST(HostileAuditImageMemory, MillionEntryLayerWithinTwentyTimesTheInput) {
  constexpr long kAuditFixedMib = 12;
  TempDir dir;
  const std::string image = images::WriteManyEntryImage(dir / "img", dir / "work", 1'000'000);
  std::uintmax_t input = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(image)) {
    if (e.is_regular_file()) input += e.file_size();
  }
  ASSERT_GT(input, 5u << 20) << "the fixture is not the million-entry layer";
  HostileBounds b;
  b.exit_code = 0;
  b.fragment = "files   1000000 in 1 layers";
  b.max_rss_mib = static_cast<long>(20 * input >> 20) + kAuditFixedMib;
  const auto start = std::chrono::steady_clock::now();
  const MeasuredOutcome r =
      tg::testing::RunMeasured({"audit", "image", "--no-load", image}, TimeLimitS(120));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ExpectWithinBounds(r, b, took);
}

}  // namespace
}  // namespace tg::testing

namespace tg::testing {
namespace {

// The unknown-rule warning is only as good as the id table: every rule id literal in the audit
// sources must be in it, or a valid suppression would be warned about.
TEST(AuditRuleIds, EveryRuleLiteralInTheSourcesIsKnown) {
  const std::regex literal("\"((dockerfile|k8s|image)\\.[a-z0-9.-]+)\"");
  int seen = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(SourceDir() + "/src/audit")) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".cc" || name.ends_with("_test.cc")) continue;
    const std::string text = ReadFile(e.path().string());
    for (std::sregex_iterator it(text.begin(), text.end(), literal), end; it != end; ++it) {
      ++seen;
      EXPECT_TRUE(audit::IsAuditRuleId((*it)[1].str())) << (*it)[1].str() << " in " << name;
    }
  }
  EXPECT_GT(seen, 50);
  EXPECT_FALSE(audit::IsAuditRuleId("k8s.imag-digest"));
  EXPECT_EQ(audit::ClosestAuditRuleId("k8s.imag-digest"), "k8s.image-digest");
  EXPECT_EQ(audit::ClosestAuditRuleId("completely-unrelated"), "");
}

}  // namespace
}  // namespace tg::testing
