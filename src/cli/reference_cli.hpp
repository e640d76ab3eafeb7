#pragma once
// The reference-run and clean-machine flags of `envlock verify`, shared by src/cli/verify.cpp
// (which owns the command) and src/cli/reference.cpp (which implements them):
//   verify --reference -p PREFIX [-l LOCKFILE] [-e ENV]   probe + reference run in PREFIX
//   verify --clean -l LOCKFILE [-e ENV] [--keep]          the same in a throwaway environment
// Both take --timeout SECONDS (the reference command) and --keep-env VAR (repeatable).

#include <string>
#include <vector>

#include "registry.hpp"

namespace envlock::cli {

struct VerifyReferenceFlags {
  bool reference = false;  ///< --reference
  bool clean = false;      ///< --clean
  bool keep = false;       ///< --keep (with --clean)
  int timeout_s = 600;     ///< --timeout
  std::vector<std::string> keep_env;  ///< --keep-env
};

/// Adds --reference, --clean, --keep, --timeout and --keep-env to `sub`.
void add_verify_reference_flags(CLI::App& sub, VerifyReferenceFlags& flags);

/// True when --reference or --clean was given: verify.cpp then calls run_verify_reference.
bool verify_reference_requested(const VerifyReferenceFlags& flags);

/// Runs the verification; `lockfile` defaults to envlock.lock, `prefix` is required without
/// --clean. Prints the report (text or --json) and returns the exit code (docs/probe.md).
int run_verify_reference(const VerifyReferenceFlags& flags, const std::string& lockfile, const std::string& environment,
                         const std::string& prefix, const Context& ctx);

}  // namespace envlock::cli
