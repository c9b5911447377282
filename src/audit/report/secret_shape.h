// Literal secrets in configuration: one detector shared by the Dockerfile rules (ENV/ARG) and the
// Kubernetes rules (container env values), so both audits agree on what a secret looks like.
//
// By name: the variable's '_'/'-'-separated words include a secret word (TOKEN, PASSWORD, SECRET,
// KEY, APIKEY, CREDENTIAL(S), AUTH, PAT, ...) unless another word says the value is not the secret
// itself (PUBLIC, FILE, PATH, DIR, URL, NAME, ID, TYPE, PUB).
// By value shape: the value has the prefix and length of a well-known credential format
// (Hugging Face, NVIDIA NGC/API catalog, GitHub, GitLab, OpenAI-style, AWS access key, Google
// API key, Slack, a PEM private key, a JWT). A value that is a variable reference ($X, ${X},
// $(X)) is never a literal.
//
// Thread safety: pure functions. They never fail.
#pragma once

#include <string>
#include <string_view>

namespace tg::audit {

// True when `name` names a secret (see above).
bool LooksSecretName(std::string_view name);

// What well-known credential `value` looks like ("a Hugging Face token (hf_...)"), or "" when it
// has no such shape. The description never quotes the value.
std::string SecretValueShape(std::string_view value);

// True when `value` is empty or only a reference to another variable ($X, ${X}, $(X)): nothing
// literal is stored.
bool IsVariableReference(std::string_view value);

}  // namespace tg::audit
