// A1111 infotext writer and reader. The parameter line is parsed by hand rather than with
// std::regex: libstdc++'s regex recurses per character and a long line from an untrusted PNG
// could exhaust the stack.
#include "sd/infotext.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <utility>
#include <vector>

#include "common/config.h"
#include "common/file_util.h"
#include "common/json_writer.h"
#include "common/strings.h"

#ifndef TG_VERSION
#define TG_VERSION "0.0.0"
#endif

namespace tg::sd {
namespace {

using common::Result;
using common::Status;

constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kSamplers{{
    {"pndm", "PLMS"},
    {"ddim", "DDIM"},
    {"euler", "Euler"},
    {"euler_a", "Euler a"},
    {"dpmpp_2m", "DPM++ 2M"},
    {"dpmpp_2m_karras", "DPM++ 2M Karras"},
    {"lms", "LMS"},
}};

// A1111's quote(): plain unless the value holds ',', ':' or a newline, then a JSON string.
std::string Quote(const std::string& v) {
  if (v.find_first_of(",:\n") == std::string::npos) return v;
  return common::WriteJson(common::Json(v), -1, common::JsonNotice::kNone);
}

// Python's float repr for the values a guidance scale takes: shortest round trip, ".0" kept.
std::string FloatText(double v) {
  std::array<char, 32> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  std::string s(buf.data(), ec == std::errc() ? end : buf.data());
  if (std::isfinite(v) && s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// Spaces, tabs and the CR of a CRLF line end; other whitespace stays part of the text.
std::string_view TrimSpaces(std::string_view s) { return common::Trim(s, " \t\r"); }

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// The "Key: value" pairs of a parameter line, A1111's grammar: a key starts with a word
// character and continues with word characters, spaces, '-' or '/'; a value is a JSON string or
// runs to the next ','. Parsing stops at the first text that is not a pair.
std::vector<std::pair<std::string, std::string>> ParamPairs(std::string_view line) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t i = 0;
  const auto skip_spaces = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  };
  while (true) {
    skip_spaces();
    if (i >= line.size() || !IsWordChar(line[i])) break;
    const std::size_t k0 = i;
    while (i < line.size() &&
           (IsWordChar(line[i]) || line[i] == ' ' || line[i] == '-' || line[i] == '/')) {
      ++i;
    }
    if (i >= line.size() || line[i] != ':') break;
    std::string key(TrimSpaces(line.substr(k0, i - k0)));
    ++i;
    skip_spaces();
    std::string value;
    if (i < line.size() && line[i] == '"') {
      std::size_t j = i + 1;
      while (j < line.size() && line[j] != '"') j += line[j] == '\\' ? 2 : 1;
      if (j >= line.size()) break;
      auto parsed = common::Json::parse(line.substr(i, j + 1 - i), nullptr, false);
      if (!parsed.is_string()) break;
      value = parsed.get<std::string>();
      i = j + 1;
    } else {
      const std::size_t comma = std::min(line.find(',', i), line.size());
      value = std::string(TrimSpaces(line.substr(i, comma - i)));
      i = comma;
    }
    out.emplace_back(std::move(key), std::move(value));
    skip_spaces();
    if (i >= line.size()) break;
    if (line[i] != ',') break;
    ++i;
  }
  return out;
}

template <typename T>
Status ParseNumber(const std::string& field, const std::string& v, T* out) {
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
  if (ec != std::errc() || end != v.data() + v.size()) {
    return Status::InvalidArg("infotext field '" + field + "': found '" + v +
                              "'; a number is required");
  }
  return Status::Ok();
}

Status ApplyField(const std::string& key, const std::string& v, GenerationParameters* p) {
  if (key == "Steps") return ParseNumber(key, v, &p->steps);
  if (key == "Seed") return ParseNumber(key, v, &p->seed);
  if (key == "CFG scale") return ParseNumber(key, v, &p->cfg_scale);
  if (key == "Sampler") p->sampler = v;
  if (key == "Model hash") p->model_hash = v;
  if (key == "Model") p->model = v;
  if (key == "Version") p->version = v;
  if (key == "Size") {
    const auto x = v.find('x');
    if (x == std::string::npos || !ParseNumber(key, v.substr(0, x), &p->width).ok() ||
        !ParseNumber(key, v.substr(x + 1), &p->height).ok()) {
      return Status::InvalidArg("infotext field 'Size': found '" + v +
                                "'; WIDTHxHEIGHT is required");
    }
  }
  return Status::Ok();
}

}  // namespace

std::string_view A1111SamplerName(std::string_view scheduler) {
  for (const auto& [ours, theirs] : kSamplers) {
    if (ours == scheduler) return theirs;
  }
  return scheduler;
}

std::string TruegreenVersion() { return std::string("truegreen ") + TG_VERSION; }

std::string FormatInfotext(const GenerationParameters& p) {
  std::string out = p.prompt;
  if (p.negative_prompt) out += "\nNegative prompt: " + *p.negative_prompt;
  std::vector<std::pair<std::string, std::string>> fields{
      {"Steps", std::to_string(p.steps)},
      {"Sampler", p.sampler},
      {"CFG scale", FloatText(p.cfg_scale)},
      {"Seed", std::to_string(p.seed)},
      {"Size", std::to_string(p.width) + "x" + std::to_string(p.height)},
  };
  if (!p.model_hash.empty()) fields.emplace_back("Model hash", p.model_hash);
  if (!p.model.empty()) fields.emplace_back("Model", p.model);
  if (!p.version.empty()) fields.emplace_back("Version", p.version);
  out += "\n";
  for (std::size_t i = 0; i < fields.size(); ++i) {
    out += (i ? ", " : "") + fields[i].first + ": " + Quote(fields[i].second);
  }
  // A1111 strips the whole text, so an empty prompt does not leave a leading blank line.
  const std::size_t first = out.find_first_not_of(" \n");
  return first == std::string::npos ? std::string() : out.substr(first);
}

Result<GenerationParameters> ParseInfotext(std::string_view text) {
  std::vector<std::string_view> lines;
  for (std::size_t pos = 0; pos <= text.size();) {
    const std::size_t nl = std::min(text.find('\n', pos), text.size());
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  GenerationParameters p;
  std::vector<std::pair<std::string, std::string>> pairs = ParamPairs(lines.back());
  if (pairs.size() >= 3) {
    lines.pop_back();
  } else {
    pairs.clear();
  }
  bool negative = false;
  for (std::string_view raw : lines) {
    std::string_view line = TrimSpaces(raw);
    if (!negative && line.substr(0, 16) == "Negative prompt:") {
      negative = true;
      line = TrimSpaces(line.substr(16));
    }
    if (negative && !p.negative_prompt) p.negative_prompt.emplace();
    std::string& dst = negative ? *p.negative_prompt : p.prompt;
    dst += std::string(dst.empty() ? "" : "\n") + std::string(line);
  }
  for (const auto& [key, value] : pairs) TG_RETURN_IF_ERROR(ApplyField(key, value, &p));
  return p;
}

Result<std::string> PipelineHash(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path unet = fs::path(dir) / "unet";
  std::error_code ec;
  if (!fs::is_directory(unet, ec)) {
    return Status::NotFound(unet.string() + ": UNet folder not found (needed for the model hash)");
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(unet, ec)) {
    if (e.is_regular_file(ec)) files.push_back(e.path());
  }
  if (ec) return Status::InvalidArg(unet.string() + ": cannot list: " + ec.message());
  std::sort(files.begin(), files.end());
  std::string manifest;
  for (const fs::path& f : files) {
    TG_ASSIGN_OR_RETURN(std::string sha, common::Sha256File(f.string()));
    manifest += f.filename().string() + "\n" + sha + "\n";
  }
  return common::Sha256Hex(manifest.data(), manifest.size()).substr(0, 10);
}

}  // namespace tg::sd
