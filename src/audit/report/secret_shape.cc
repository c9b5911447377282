// The credential shapes are prefixes documented by their issuers plus a minimum length of the
// random part, so a placeholder such as "hf_xxx" or "changeme" is not a token, while a real one
// pasted into a manifest is.
#include "audit/report/secret_shape.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "common/strings.h"

namespace tg::audit {
namespace {

bool TokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

// Length of the run of token characters at the start of `s`.
std::size_t TokenRun(std::string_view s) {
  std::size_t n = 0;
  while (n < s.size() && TokenChar(s[n])) ++n;
  return n;
}

// A value whose random part after `prefix` has at least `min` token characters and mixes letters
// and digits (real tokens do; "hf_your_token_here" does not).
bool PrefixedToken(std::string_view v, std::string_view prefix, std::size_t min) {
  if (!v.starts_with(prefix)) return false;
  std::string_view rest = v.substr(prefix.size());
  std::size_t run = TokenRun(rest);
  if (run < min) return false;
  std::string_view r = rest.substr(0, run);
  bool digit = std::any_of(r.begin(), r.end(), [](char c) { return std::isdigit(c) != 0; });
  bool alpha = std::any_of(r.begin(), r.end(), [](char c) { return std::isalpha(c) != 0; });
  return digit && alpha;
}

bool AwsAccessKey(std::string_view v) {
  for (std::string_view p : {"AKIA", "ASIA"}) {
    if (!v.starts_with(p) || v.size() < 20) continue;
    std::string_view r = v.substr(4, 16);
    if (std::all_of(r.begin(), r.end(), [](char c) {
          return std::isupper(static_cast<unsigned char>(c)) || std::isdigit(c);
        })) {
      return true;
    }
  }
  return false;
}

// header.payload.signature, each base64url, header and payload starting with '{"' encoded.
bool Jwt(std::string_view v) {
  if (!v.starts_with("eyJ")) return false;
  std::size_t d1 = v.find('.');
  if (d1 == std::string_view::npos) return false;
  std::size_t d2 = v.find('.', d1 + 1);
  if (d2 == std::string_view::npos) return false;
  return v.substr(d1 + 1).starts_with("eyJ") && d1 >= 10 && d2 - d1 > 10 && v.size() - d2 > 10;
}

}  // namespace

bool LooksSecretName(std::string_view name) {
  static const std::set<std::string> kSecret = {"token",       "password", "passwd", "pwd",
                                                "secret",      "key",      "apikey", "credential",
                                                "credentials", "auth",     "pat",    "privatekey"};
  static const std::set<std::string> kNotSecret = {"public", "file", "path", "dir", "url",
                                                   "name",   "id",   "type", "pub"};
  bool secret = false;
  std::string word;
  std::string lower = common::Lower(name) + "_";
  for (char ch : lower) {
    if (ch != '_' && ch != '-') {
      word.push_back(ch);
      continue;
    }
    if (kNotSecret.count(word) != 0) return false;
    if (kSecret.count(word) != 0) secret = true;
    word.clear();
  }
  return secret;
}

bool IsVariableReference(std::string_view v) {
  v = common::Trim(v);
  if (v.empty()) return true;
  if (v[0] != '$') return false;
  if (v.size() > 1 && (v[1] == '{' || v[1] == '(')) {
    char close = v[1] == '{' ? '}' : ')';
    return v.back() == close && v.find(close) == v.size() - 1;
  }
  return std::all_of(v.begin() + 1, v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string SecretValueShape(std::string_view raw) {
  std::string_view v = common::Trim(raw);
  if (v.find("-----BEGIN") != std::string_view::npos &&
      v.find("PRIVATE KEY-----") != std::string_view::npos) {
    return "a PEM private key";
  }
  struct Shape {
    std::string_view prefix;
    std::size_t min;
    const char* what;
  };
  static constexpr Shape kShapes[] = {
      {"hf_", 30, "a Hugging Face token (hf_...)"},
      {"nvapi-", 40, "an NVIDIA API key (nvapi-...)"},
      {"ghp_", 30, "a GitHub token (ghp_...)"},
      {"gho_", 30, "a GitHub token (gho_...)"},
      {"ghs_", 30, "a GitHub token (ghs_...)"},
      {"github_pat_", 30, "a GitHub fine-grained token (github_pat_...)"},
      {"glpat-", 20, "a GitLab token (glpat-...)"},
      {"sk-proj-", 30, "an OpenAI-style API key (sk-proj-...)"},
      {"sk-", 32, "an OpenAI-style API key (sk-...)"},
      {"xoxb-", 20, "a Slack token (xoxb-...)"},
      {"xoxp-", 20, "a Slack token (xoxp-...)"},
      {"AIza", 35, "a Google API key (AIza...)"},
  };
  for (const Shape& s : kShapes) {
    if (PrefixedToken(v, s.prefix, s.min)) return s.what;
  }
  if (AwsAccessKey(v)) return "an AWS access key id (AKIA.../ASIA...)";
  if (Jwt(v)) return "a JSON Web Token (eyJ...)";
  // NGC personal keys before nvapi- were 84 base64 characters; other long random strings are not
  // claimed (too many checksums and digests look alike).
  return "";
}

}  // namespace tg::audit
