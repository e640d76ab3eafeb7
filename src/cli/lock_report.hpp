#pragma once
// What `envlock lock`, `envlock add` and `envlock rm` say about a lock they made: the change of
// each environment x platform against the previous lockfile (by package name), and the solver's
// conflict report when the request cannot be satisfied. One copy, so the three commands print a
// lock the same way (docs/cli.md; docs/environments.md, "Adding and removing packages").
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "envlock/lock.hpp"
#include "envlock/lockfile.hpp"
#include "registry.hpp"

namespace envlock::cli {

/// What changed for one environment x platform between two locks, by package name. Each entry
/// is "name version build"; `changed` entries are "name old-version old-build -> new-version
/// new-build" when the version or build moved, else "name version build (WHAT)" naming what of
/// the same build moved: `url OLD -> NEW` (each spelled as its lockfile writes it), `sha256`,
/// `depends`, `constrains`, `layer OLD -> NEW`. A package whose record is the same is not listed,
/// however its channel is spelled (issue 18, attack finding 2: `~ x 1.0 0 -> 1.0 0`).
struct LockChange {
  std::vector<std::string> added, removed, changed;
  [[nodiscard]] bool empty() const { return added.empty() && removed.empty() && changed.empty(); }
};

/// A locked URL as a lockfile writes it (Lockfile::written_locations).
using Spelling = std::function<std::string(const std::string&)>;

/// `after` against `before` (nullptr: everything is added). Entries in the order of `after`'s
/// packages (added, changed) and by name (removed). `spell_was` and `spell_now` write a URL of
/// `before` and of `after` in a `changed` entry.
LockChange compare_locked(const LockedPlatform* before, const LockedPlatform& after, const Spelling& spell_was,
                          const Spelling& spell_now);

/// The platform `platform` of environment `environment` in `lock`, or nullptr.
const LockedPlatform* find_locked(const std::optional<Lockfile>& lock, const std::string& environment,
                                  const std::string& platform);

/// Every environment x platform of `lock` against `previous`.
struct LockSummary {
  /// {env: {platform: {"packages": N, "added": [...], "removed": [...], "changed": [...]}}}
  nlohmann::json environments = nlohmann::json::object();
  /// One line per environment x platform ("  default / linux-64: 3 packages (1 added, 0 removed,
  /// 0 changed)", the counts only with a previous lock), then `~ `, `+ `, `- ` lines indented by 6
  /// (`+ ` only with a previous lock). Not yet through terminal_text().
  std::string text;
};
/// `directory`: the folder the lockfiles are written in, which their relative channels are
/// spelled against in a `changed` entry's URLs (empty: as `file://` URLs).
LockSummary summarize_lock(const Lockfile& lock, const std::optional<Lockfile>& previous,
                           const std::filesystem::path& directory = {});

/// Prints an unsatisfiable lock: the error (and its explanation tree) on stderr, through
/// terminal_text() and redact_text(); with --json also {"error": {...,"kind": "unsatisfiable"},
/// "conflict": {environment, platform, the explanation}} on stdout. Returns 1.
int report_conflict(const Context& ctx, const Error& error, const LockDiagnostics::Conflict& conflict);

}  // namespace envlock::cli
