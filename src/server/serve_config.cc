#include "server/serve_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <system_error>
#include <utility>

#include "common/config.h"
#include "common/file_util.h"
#include "sd/pipeline.h"

namespace tg::server {

using common::Result;
namespace {

namespace fs = std::filesystem;
using common::Result;
using common::Status;

bool ValidName(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

Status ParseWarmup(const YAML::Node& seq, const std::string& source, ModelSpec* spec) {
  for (const YAML::Node& entry : seq) {
    if (!entry.IsMap()) {
      return Status::InvalidArg(common::YamlWhere(entry, source) +
                                ": warmup entry must be a mapping input -> shape, found " +
                                common::YamlDescribe(entry));
    }
    std::map<std::string, std::vector<std::int64_t>> shapes;
    std::int64_t run_elements = 0;
    for (const auto& kv : entry) {
      const YAML::Node& shape = kv.second;
      const std::string input = kv.first.as<std::string>();
      if (!shape.IsSequence() || shape.size() > 8) {
        return Status::InvalidArg(common::YamlWhere(shape, source) + ": warmup." + input +
                                  " must be a list of at most 8 dimensions, found " +
                                  common::YamlDescribe(shape));
      }
      std::vector<std::int64_t> dims;
      for (const YAML::Node& d : shape) {
        std::int64_t v = -1;
        if (!d.IsScalar() || !YAML::convert<std::int64_t>::decode(d, v) || v < 0 || v > 65536) {
          return Status::InvalidArg(common::YamlWhere(d, source) + ": warmup." + input +
                                    " dimension must be an integer in 0..65536, found " +
                                    common::YamlDescribe(d));
        }
        dims.push_back(v);
      }
      // Multiplied here, with overflow checks, so no allocation is ever sized by an unchecked
      // product (one 30-byte line [65536, 65536] asked for 16 GiB).
      std::int64_t elements = 1;
      for (std::int64_t d : dims) {
        elements =
            d == 0 ? 0
                   : (elements > kMaxWarmupElements / d ? kMaxWarmupElements + 1 : elements * d);
      }
      if (elements > kMaxWarmupElements) {
        return Status::InvalidArg(common::YamlWhere(shape, source) + ": warmup." + input +
                                  ": the shape holds more than " +
                                  std::to_string(kMaxWarmupElements) +
                                  " elements (the limit per warm-up input)");
      }
      run_elements += elements;
      if (run_elements > kMaxWarmupRunElements) {
        return Status::InvalidArg(common::YamlWhere(shape, source) +
                                  ": warmup: this run's inputs hold more than " +
                                  std::to_string(kMaxWarmupRunElements) +
                                  " elements together (the limit per warm-up run)");
      }
      shapes[input] = std::move(dims);
    }
    spec->warmup.push_back(std::move(shapes));
  }
  return Status::Ok();
}

// The keys an SD pipeline's config.yaml and a generic model's share. `max_batch_limit` is 64
// requests for a generic model, sd::kMaxBatch images for an SD pipeline (one UNet batch).
Status LoadBatchingAndCanary(common::YamlMap* map, int max_batch_limit, ModelSpec* spec) {
  TG_RETURN_IF_ERROR(map->Get("max_batch", &spec->max_batch));
  if (spec->max_batch < 1 || spec->max_batch > max_batch_limit) {
    return map->FieldError("max_batch", "an integer in 1.." + std::to_string(max_batch_limit));
  }
  TG_RETURN_IF_ERROR(map->Get("batch_delay_ms", &spec->batch_delay_ms));
  if (spec->batch_delay_ms < 0 || spec->batch_delay_ms > 1000) {
    return map->FieldError("batch_delay_ms", "an integer in 0..1000");
  }
  TG_RETURN_IF_ERROR(map->Get("canary_p50_ms", &spec->canary_p50_ms));
  TG_RETURN_IF_ERROR(map->Get("canary_p95_ms", &spec->canary_p95_ms));
  for (const char* k : {"canary_p50_ms", "canary_p95_ms"}) {
    const auto& v = std::string(k) == "canary_p50_ms" ? spec->canary_p50_ms : spec->canary_p95_ms;
    if (v && !(*v > 0.0)) return map->FieldError(k, "a number of milliseconds > 0");
  }
  return Status::Ok();
}

// config.yaml of an SD pipeline folder: max_batch (images per UNet batch), batch_delay_ms and the
// canary ceilings; warm-up shapes do not apply (the canary prompt set warms it up).
Status LoadSdConfig(const std::string& path, ModelSpec* spec) {
  auto doc = common::LoadYamlFile(path);
  if (!doc.ok()) return doc.status();
  auto map = common::YamlMap::From(*doc, path, "");
  if (!map.ok()) return map.status();
  TG_RETURN_IF_ERROR(LoadBatchingAndCanary(&*map, sd::kMaxBatch, spec));
  return map->Finish();
}

Status LoadOnnxConfig(const std::string& path, ModelSpec* spec) {
  auto doc = common::LoadYamlFile(path);
  if (!doc.ok()) return doc.status();
  auto map = common::YamlMap::From(*doc, path, "");
  if (!map.ok()) return map.status();
  TG_RETURN_IF_ERROR(LoadBatchingAndCanary(&*map, 64, spec));
  auto seq = map->GetSequence("warmup");
  if (!seq.ok()) return seq.status();
  if (seq->IsSequence()) TG_RETURN_IF_ERROR(ParseWarmup(*seq, path, spec));
  return map->Finish();
}

// One repository entry; *skip is set for files that are not models (configs, hidden files).
Result<ModelSpec> ReadEntry(const fs::directory_entry& e, bool* skip) {
  ModelSpec spec;
  const fs::path p = e.path();
  std::error_code ec;
  *skip = false;
  if (e.is_directory(ec)) {
    spec.name = p.filename().string();
    if (fs::exists(p / "model_index.json", ec)) {
      spec.kind = ModelKind::kStableDiffusion;
      spec.path = p.string();
      // Batching on by default: with no delay, requests are merged only when they already wait
      // behind a running generation, which costs none of them latency.
      spec.max_batch = sd::kMaxBatch;
      spec.batch_delay_ms = 0;
      if (fs::exists(p / "config.yaml", ec)) {
        TG_RETURN_IF_ERROR(LoadSdConfig((p / "config.yaml").string(), &spec));
      }
    } else if (fs::exists(p / "model.onnx", ec)) {
      spec.path = (p / "model.onnx").string();
      if (fs::exists(p / "config.yaml", ec)) {
        TG_RETURN_IF_ERROR(LoadOnnxConfig((p / "config.yaml").string(), &spec));
      }
    } else {
      return Status::InvalidArg("--models: " + p.string() +
                                ": neither model_index.json (Stable Diffusion pipeline) nor "
                                "model.onnx (generic model) found in this model folder");
    }
  } else if (p.extension() == ".onnx") {
    spec.name = p.stem().string();
    spec.path = p.string();
    fs::path cfg = p;
    cfg.replace_extension(".yaml");
    if (fs::exists(cfg, ec)) TG_RETURN_IF_ERROR(LoadOnnxConfig(cfg.string(), &spec));
  } else {
    *skip = true;
    return spec;
  }
  if (!ValidName(spec.name)) {
    return Status::InvalidArg("--models: model name '" + spec.name + "' (from " + p.string() +
                              ") must be 1..64 characters of A-Z a-z 0-9 . _ -");
  }
  return spec;
}

}  // namespace

std::string_view ModelKindName(ModelKind k) {
  return k == ModelKind::kStableDiffusion ? "stable_diffusion" : "onnx";
}

Result<std::vector<ModelSpec>> LoadModelRepository(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Status::NotFound("--models: model repository folder not found: " + dir);
  }
  std::vector<ModelSpec> specs;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().starts_with(".")) continue;
    bool skip = false;
    auto spec = ReadEntry(e, &skip);
    if (!spec.ok()) return spec.status();
    if (!skip) specs.push_back(std::move(spec).value());
  }
  if (ec) return Status::InvalidArg("--models: cannot list " + dir + ": " + ec.message());
  if (specs.empty()) {
    return Status::InvalidArg("--models: " + dir +
                              " holds no model (expected <name>/model_index.json, "
                              "<name>/model.onnx or <name>.onnx)");
  }
  std::sort(specs.begin(), specs.end(),
            [](const ModelSpec& a, const ModelSpec& b) { return a.name < b.name; });
  for (std::size_t i = 1; i < specs.size(); ++i) {
    if (specs[i].name == specs[i - 1].name) {
      return Status::InvalidArg("--models: two entries are named '" + specs[i].name + "'");
    }
  }
  return specs;
}

namespace {

// serve's number options (docs/SERVER.md lists them); --help shows each row.
constexpr ServeOptionRange kServeRanges[] = {
    {"--port", 0, 65535, "(TCP port, 0 = ephemeral)"},
    {"--io-threads", 1, 64, "threads"},
    {"--max-body-bytes", 1024, 1073741824, "bytes"},
    {"--queue-size", 1, 100000, "requests"},
    {"--deadline-ms", 1, 86400000, "ms"},
    {"--concurrency", 1, 256, "executions"},
    {"--max-connections", 1, 100000, "connections"},
    {"--header-timeout-ms", 1, 3600000, "ms"},
    {"--body-timeout-ms", 1, 3600000, "ms"},
    {"--idle-timeout-ms", 1, 3600000, "ms"},
    {"--max-n", 1, 10, "images"},
    {"--image-store-bytes", 1048576, 17179869184.0, "bytes"},
    {"--image-ttl-s", 1, 86400, "seconds"},
    {"--max-steps", 1, 1000, "steps"},
    {"--large-pixels", 1, 2147483647, "pixels"},
    {"--canary-steps", 1, 1000, "steps"},
    {"--canary-size", 0, 1024, "pixels (0 = 256, else 256..1024)"},
    {"--canary-p50-ms", 0, 3600000, "ms (0 = not gated)"},
    {"--canary-p95-ms", 0, 3600000, "ms (0 = not gated)"},
    {"--canary-min-gpu-utilization", 0, 1, "(fraction, 0 = not gated)"},
    {"--gpu-sample-interval-ms", 50, 600000, "ms"},
    {"--canary-interval-s", 0, 86400, "seconds (0 = off)"},
    {"--canary-drift-tolerance", 1, 1000000, "(times the start-up P50)"},
    {"--memory-budget", 0, 1125899906842624.0, "bytes (a SIZE such as 2GiB)"},
};

std::string RangeNumber(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e18) {
    return std::to_string(static_cast<long long>(v));
  }
  std::ostringstream s;
  s << std::setprecision(15) << v;
  return s.str();
}

// "FLAG V is outside LO..HI" unless `v` lies in the flag's row.
Status InRange(const char* flag, double v) {
  const ServeOptionRange* r = FindServeOptionRange(flag);
  if (r == nullptr) return Status::Internal(std::string(flag) + ": no row in kServeRanges");
  if (v >= r->lo && v <= r->hi) return Status::Ok();
  return Status::InvalidArg(std::string(flag) + " " + RangeNumber(v) + " is outside " +
                            RangeNumber(r->lo) + ".." + RangeNumber(r->hi));
}

}  // namespace

std::span<const ServeOptionRange> ServeOptionRanges() { return kServeRanges; }

const ServeOptionRange* FindServeOptionRange(std::string_view flag) {
  for (const ServeOptionRange& r : kServeRanges) {
    if (flag == r.flag) return &r;
  }
  return nullptr;
}

std::vector<std::pair<const char*, double>> ServeOptionValues(const ServeConfig& c) {
  const Limits& l = c.limits;
  const CanaryConfig& k = c.canary;
  const std::pair<const char*, double> values[] = {
      {"--port", c.port},
      {"--io-threads", c.io_threads},
      {"--max-body-bytes", static_cast<double>(l.max_body_bytes)},
      {"--queue-size", l.queue_size},
      {"--deadline-ms", l.deadline_ms},
      {"--concurrency", l.concurrency},
      {"--max-connections", l.max_connections},
      {"--header-timeout-ms", l.header_timeout_ms},
      {"--body-timeout-ms", l.body_timeout_ms},
      {"--idle-timeout-ms", l.idle_timeout_ms},
      {"--max-n", l.max_n},
      {"--image-store-bytes", static_cast<double>(c.image_store_bytes)},
      {"--image-ttl-s", c.image_ttl_s},
      {"--max-steps", l.max_steps},
      {"--large-pixels", l.large_pixels},
      {"--canary-steps", k.steps},
      {"--canary-size", k.size},
      {"--canary-p50-ms", k.p50_ms.value_or(0.0)},
      {"--canary-p95-ms", k.p95_ms.value_or(0.0)},
      {"--canary-min-gpu-utilization", k.min_gpu_utilization.value_or(0.0)},
      {"--gpu-sample-interval-ms", c.gpu_sample_interval_ms},
      {"--canary-interval-s", k.interval_s},
      {"--canary-drift-tolerance", k.drift_tolerance},
      {"--memory-budget", static_cast<double>(c.memory_budget.value_or(0))},
  };
  static_assert(std::size(values) == std::size(kServeRanges), "a row without its value");
  return {std::begin(values), std::end(values)};
}

Status ValidateServeConfig(const ServeConfig& c) {
  const CanaryConfig& k = c.canary;
  // The holes inside the ranges: an image side the pipeline cannot make, and a ceiling or floor
  // that is set (the CLI's 0 means unset) but gates nothing.
  if (k.size != 0 && (k.size < 256 || k.size > 1024)) {
    return Status::InvalidArg("--canary-size " + std::to_string(k.size) + " is outside 256..1024");
  }
  if (const auto& u = k.min_gpu_utilization; u && !(*u > 0.0 && *u <= 1.0)) {
    return Status::InvalidArg("--canary-min-gpu-utilization must be in (0, 1], got " +
                              std::to_string(*u));
  }
  for (const auto& v : {k.p50_ms, k.p95_ms}) {
    if (v && !(*v > 0.0)) return Status::InvalidArg("canary ceilings must be > 0 ms");
  }
  for (const auto& [flag, v] : ServeOptionValues(c)) TG_RETURN_IF_ERROR(InRange(flag, v));
  if (c.models_dir.empty()) return Status::InvalidArg("--models DIR must not be empty");
  // Both are written later, after minutes of start-up: refuse a FIFO, a device, a directory or a
  // missing folder now (exit 2), through the writer's own checks, instead of hanging on an open
  // or logging a failure while serving.
  if (!c.port_file.empty()) {
    TG_RETURN_IF_ERROR(common::CheckOutputPath(c.port_file).WithPrefix("--port-file"));
  }
  if (c.access_log.empty()) return Status::InvalidArg("--access-log: expected -, off or a FILE");
  if (c.access_log != "-" && c.access_log != "off") {
    TG_RETURN_IF_ERROR(common::CheckOutputPath(c.access_log).WithPrefix("--access-log"));
  }
  return Status::Ok();
}

Result<std::string> ReadTokenFile(const std::string& path) {
  auto text = common::ReadFileLimited(path, 4096);
  if (!text.ok()) return text.status().WithPrefix("--token-file");
  std::string t = *text;
  if (auto nl = t.find_first_of("\r\n"); nl != std::string::npos) t.resize(nl);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.pop_back();
  if (t.empty()) return Status::InvalidArg("--token-file " + path + ": the token is empty");
  return t;
}

}  // namespace tg::server
