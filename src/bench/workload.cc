#include "bench/workload.h"

#include <algorithm>
#include <set>

#include <charconv>
#include <sstream>

#include <fmt/format.h>

#include "common/config.h"
#include "common/file_util.h"
#include "common/json_writer.h"
#include "common/strings.h"

namespace tg::bench {
namespace {

using common::Json;
using common::Status;

constexpr std::uint64_t kMaxPromptSetBytes = 16ULL << 20;
constexpr std::size_t kMaxPrompts = 100000;

// A flag's comma list: "" has no item (the caller reports an empty list); every other piece,
// empty ones included, is an item the caller checks (so "1,,8" is refused, not read as "1,8").
std::vector<std::string> Split(const std::string& text) {
  if (text.empty()) return {};
  return common::Split(text, ',', common::SplitMode::kKeepEmpty);
}

common::Result<Prompt> ParsePromptLine(const std::string& line, const std::string& where) {
  auto j = common::ParseJson(line, where);
  if (!j.ok()) return j.status();
  if (!j->is_object()) return Status::InvalidArg(where + ": expected a JSON object per line");
  Prompt p;
  if (!j->contains("prompt") || !(*j)["prompt"].is_string() ||
      (*j)["prompt"].get<std::string>().empty()) {
    return Status::InvalidArg(where + ": field \"prompt\": required non-empty string");
  }
  p.prompt = (*j)["prompt"].get<std::string>();
  if (j->contains("negative")) {
    if (!(*j)["negative"].is_string()) {
      return Status::InvalidArg(where + ": field \"negative\": expected a string, found " +
                                common::WriteJson((*j)["negative"], -1, common::JsonNotice::kNone));
    }
    p.negative = (*j)["negative"].get<std::string>();
  }
  if (j->contains("seed")) {
    if (!(*j)["seed"].is_number_integer() || (*j)["seed"].get<std::int64_t>() < 0) {
      return Status::InvalidArg(where +
                                ": field \"seed\": expected a non-negative integer, found " +
                                common::WriteJson((*j)["seed"], -1, common::JsonNotice::kNone));
    }
    p.seed = (*j)["seed"].get<std::int64_t>();
  }
  return p;
}

}  // namespace

common::Result<PromptSet> LoadPromptSet(const std::string& path) {
  TG_ASSIGN_OR_RETURN(std::string bytes, common::ReadFileLimited(path, kMaxPromptSetBytes));
  PromptSet set;
  set.path = path;
  set.sha256 = common::Sha256Hex(bytes.data(), bytes.size());
  std::stringstream ss(bytes);
  std::string line;
  int lineno = 0;
  while (std::getline(ss, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (set.prompts.size() >= kMaxPrompts) {
      return Status::InvalidArg(
          fmt::format("{}:{}: more than {} prompts", path, lineno, kMaxPrompts));
    }
    TG_ASSIGN_OR_RETURN(Prompt p, ParsePromptLine(line, fmt::format("{}:{}", path, lineno)));
    set.prompts.push_back(std::move(p));
  }
  if (set.prompts.empty()) {
    return Status::InvalidArg(path + ": no prompts (expected JSONL lines {\"prompt\": ...})");
  }
  return set;
}

PromptSet BuiltinPromptSet() {
  PromptSet set;
  set.prompts = {{"a photograph of an astronaut riding a horse", "blurry, low quality", 42},
                 {"a watercolor painting of a lighthouse at dawn", "", 7},
                 {"a bowl of fruit on a wooden table, studio lighting", "text, watermark", 1234}};
  std::string canon;
  for (const auto& p : set.prompts) {
    canon +=
        common::WriteJson(Json{{"prompt", p.prompt}, {"negative", p.negative}, {"seed", p.seed}},
                          -1, common::JsonNotice::kNone) +
        "\n";
  }
  set.sha256 = "builtin:" + common::Sha256Hex(canon.data(), canon.size());
  return set;
}

common::Result<std::vector<HttpRequest>> BuildRequests(const std::string& api,
                                                       const std::string& model,
                                                       const PointConfig& point,
                                                       const PromptSet& prompts) {
  std::vector<HttpRequest> out;
  for (const auto& p : prompts.prompts) {
    HttpRequest r;
    if (api == "openai") {
      r.path = "/v1/images/generations";
      Json body = {{"prompt", p.prompt},   {"n", point.batch}, {"size", point.size},
                   {"steps", point.steps}, {"seed", p.seed},   {"response_format", "b64_json"}};
      if (!model.empty()) body["model"] = model;
      if (!p.negative.empty()) body["negative_prompt"] = p.negative;
      if (!point.scheduler.empty()) body["scheduler"] = point.scheduler;
      r.body = common::WriteJson(body, -1, common::JsonNotice::kNone);
    } else if (api == "kserve") {
      if (model.empty()) return Status::InvalidArg("--api kserve needs --model");
      r.path = "/v2/models/" + model + "/infer";
      Json params = {{"size", point.size}, {"steps", point.steps}, {"seed", p.seed}};
      if (!p.negative.empty()) params["negative_prompt"] = p.negative;
      if (!point.scheduler.empty()) params["scheduler"] = point.scheduler;
      Json data = Json::array();
      for (int i = 0; i < point.batch; ++i) data.push_back(p.prompt);
      r.body = common::WriteJson(Json{{"inputs",
                                       {{{"name", "prompt"},
                                         {"datatype", "BYTES"},
                                         {"shape", {point.batch}},
                                         {"data", data}}}},
                                      {"parameters", params}},
                                 -1, common::JsonNotice::kNone);
    } else if (api == "get") {
      // Plain GET of the URL itself (e.g. http://H:P/v2/health/ready): the generator's raw HTTP
      // rate, compared with wrk. The loader sends "/" when the URL has no path.
      r.method = "GET";
      r.path = "";
    } else {
      return Status::InvalidArg(fmt::format("--api \"{}\": expected openai, kserve or get", api));
    }
    out.push_back(std::move(r));
  }
  return out;
}

common::Result<std::vector<int>> ParseIntList(const std::string& flag, const std::string& text) {
  std::vector<int> out;
  std::set<int> seen;
  for (const auto& item : Split(text)) {
    int v = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || ptr != item.data() + item.size() || v < 1 || v > 100000) {
      return Status::InvalidArg(
          fmt::format("{} \"{}\": \"{}\" is not an integer in 1..100000 (expected e.g. 1,8,16)",
                      flag, text, item));
    }
    if (!seen.insert(v).second) {
      return Status::InvalidArg(fmt::format("{} \"{}\": \"{}\" is listed twice", flag, text, item));
    }
    out.push_back(v);
  }
  if (out.empty()) return Status::InvalidArg(flag + ": empty list");
  return out;
}

common::Result<std::vector<std::string>> ParseSizeList(const std::string& flag,
                                                       const std::string& text) {
  std::vector<std::string> out;
  for (const auto& item : Split(text)) {
    std::size_t x = item.find('x');
    bool ok = x != std::string::npos && x > 0 && x + 1 < item.size() &&
              item.find_first_not_of("0123456789x") == std::string::npos &&
              item.find('x', x + 1) == std::string::npos;
    // Each side 1..16384 (at most 5 digits, so the conversion cannot overflow).
    ok = ok && x <= 5 && item.size() - x - 1 <= 5;
    const int w = ok ? std::stoi(item.substr(0, x)) : 0;
    const int h = ok ? std::stoi(item.substr(x + 1)) : 0;
    if (!ok || w < 1 || h < 1 || w > 16384 || h > 16384) {
      return Status::InvalidArg(
          fmt::format("{} \"{}\": \"{}\" is not WIDTHxHEIGHT with sides 1..16384 (expected e.g. "
                      "512x512,1024x1024)",
                      flag, text, item));
    }
    if (std::find(out.begin(), out.end(), item) != out.end()) {
      return Status::InvalidArg(fmt::format("{} \"{}\": \"{}\" is listed twice", flag, text, item));
    }
    out.push_back(item);
  }
  if (out.empty()) return Status::InvalidArg(flag + ": empty list");
  return out;
}

}  // namespace tg::bench
