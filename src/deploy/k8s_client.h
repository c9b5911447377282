// A minimal Kubernetes API client for the blue-green gate (`truegreen k8s promote`,
// `truegreen k8s wait-ready`): GET, PATCH and PUT of single named objects, JSON bodies, a bearer
// token. HTTPS with the cluster CA through Boost.Beast + OpenSSL (peer and host name verified);
// plain HTTP only to a loopback address (a test's stub API server, `kubectl proxy`), so a token
// never crosses the network in clear.
//
// In-cluster defaults: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, the service
// account's token, ca.crt and namespace under /var/run/secrets/kubernetes.io/serviceaccount.
//
// Failure behaviour (Status, never throws): a missing token/CA/namespace file or a malformed
// --api-server is INVALID_ARG/NOT_FOUND naming it; API answers 401/403 (RBAC), 404 (no such
// object), 409/422 (rejected) are INVALID_ARG/NOT_FOUND with the API's own message and the object;
// connection failures, timeouts and 5xx are UNAVAILABLE. The token is never logged or put in a
// message. Thread safety: no shared state; calls may run concurrently, even with one config.
#pragma once

#include <string>
#include <string_view>

#include "common/config.h"
#include "common/status.h"

namespace tg::deploy {

struct K8sApiConfig {
  std::string scheme = "https";  // "https" or "http" (loopback only)
  std::string host;              // name or address ("[::1]" for IPv6 is given without brackets)
  std::string port = "443";
  std::string token;           // bearer token; may be empty for a stub without authentication
  std::string ca_file;         // PEM bundle that signs the API server's certificate (https)
  std::string namespace_name;  // namespace of the objects
  int timeout_ms = 30000;      // per step of a request (connect, TLS handshake, write, read)
};

// Flags that override the in-cluster defaults; "" = default.
struct K8sApiOverrides {
  std::string api_server;  // URL: https://HOST[:PORT] or http://127.0.0.1:PORT
  std::string token_file;
  std::string ca_file;
  std::string namespace_name;
  std::string secrets_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};
// The in-cluster defaults with `overrides` applied; errors as the file comment says.
common::Result<K8sApiConfig> ResolveK8sApiConfig(const K8sApiOverrides& overrides);

// Is `name` a DNS-1123 label/subdomain usable in an API path (lower case, digits, '-', '.')?
bool IsK8sObjectName(std::string_view name);

struct K8sResponse {
  int status = 0;
  std::string body;
};

// One request; `path` starts with "/api" or "/apis". The response body is capped at 8 MiB.
common::Result<K8sResponse> K8sApiRequest(const K8sApiConfig& config, std::string_view method,
                                          const std::string& path, const std::string& content_type,
                                          const std::string& body);

// Patches Service `service`'s selector label `label` to `value` (JSON merge patch) after reading
// the Service: INVALID_ARG when its selector has no `label` (not a blue-green Service). Returns
// the previous value.
common::Result<std::string> SwitchServiceSelector(const K8sApiConfig& config,
                                                  const std::string& service,
                                                  const std::string& label,
                                                  const std::string& value);

// Replaces data[`key`] of ConfigMap `configmap` with `text` (read, modify, PUT with the read
// resourceVersion; one retry on a 409 conflict) and records `color` in the annotation
// truegreen.dev/baseline-color. NOT_FOUND when the ConfigMap does not exist (it is seeded once,
// docs/DEPLOY.md); INVALID_ARG when `text` would exceed the ConfigMap size limit.
common::Status StoreConfigMapValue(const K8sApiConfig& config, const std::string& configmap,
                                   const std::string& key, const std::string& text,
                                   const std::string& color);

struct DeploymentRollout {
  bool complete = false;  // every desired replica updated, available and ready, no old ones
  std::string detail;     // "2/3 ready, 3/3 updated, 2/3 available (generation 4 observed 4)"
};

// Reads Deployment `name` and says whether its rollout is complete.
common::Result<DeploymentRollout> ReadDeploymentRollout(const K8sApiConfig& config,
                                                        const std::string& name);

}  // namespace tg::deploy
