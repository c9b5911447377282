// What the global --policy means, in one place: `production` (the default), `dev`, or the path of
// a runtime policy YAML file (docs/POLICY.md), which may name its version matrix (`matrix:`).
// Matrices are given with --matrix; audit rule files with `audit image --rules`.
//
// Single-threaded CLI helpers; results are plain values.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "cli/command.h"
#include "common/status.h"
#include "policy/matrix.h"

namespace tg::cli {

// The matrix to judge against: `matrix_flag` (a --matrix FILE) wins; otherwise the matrix the
// global --policy names: the built-in production/dev matrix, or for a policy file its `matrix:`
// (else the built-in matrix of its profile). Errors: the policy or matrix file's own (NOT_FOUND,
// INVALID_ARG naming file:line and field).
common::Result<policy::Matrix> ResolveMatrix(const std::string& matrix_flag,
                                             const GlobalOptions& g);

// For commands that check a matrix only on request (audits): the matrix of --matrix, or of an
// explicit --policy; nullopt when neither was given.
common::Result<std::optional<policy::Matrix>> RequestedMatrix(const std::string& matrix_flag,
                                                              const GlobalOptions& g);

// True for the commands that read --policy (admit, doctor, run, engines build/verify, generate,
// serve, audit image, audit k8s, and the hidden __canary-child). main rejects an explicit --policy
// on any other command, so it is never silently ignored.
bool CommandReadsPolicy(std::string_view command_path);

}  // namespace tg::cli
