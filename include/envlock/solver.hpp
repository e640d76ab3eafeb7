#pragma once
// envlock/solver.hpp — one conda solve: available records + requested specs -> chosen records.
//
// The solver is pure: it takes a plain task (the records of every channel subdir, the requested
// MatchSpecs, the virtual packages assumed for the target platform, the records a base layer
// pins, the records a previous lock chose) and does no I/O. It is backed by libsolv in conda mode
// (DISTTYPE_CONDA, pool_conda_matchspec for `depends` and `constrains`); no libsolv type crosses
// this header.
//
// Only the records of names reachable from the request (specs, base pins, virtual packages,
// through `depends`) enter libsolv's pool; with repos given as a RecordSource (a lazy
// RepodataIndex of the channel module), only those names are ever parsed from the repodata JSON.
// A conda-forge-sized channel thus costs a solve a few hundred names, not 500k records
// (docs/solving.md).
//
// Preferences follow conda's version_key (conda/resolve.py), in libsolv's conda policy as
// envlock patches it (cmake/patches): fewer track_features first, then the highest version,
// then the highest build number, then an arch subdir over noarch, then the newest timestamp,
// then the build string compared as plain text. The channel URL, subdir and file name make every
// remaining tie deterministic regardless of the order records were read in. Legacy `features`
// follow conda: a record with `features: F` needs a record that tracks F (`track_features`), and
// once a solution has one, the featured variants are preferred (docs/solving.md, rule 3).
// Virtual packages are installed solvables: `constrains` on them bind like `depends`.

// Results map back to the caller's own records: a Solution holds pointers into SolveTask::repos
// and SolveTask::pinned; no record is rebuilt from libsolv strings.

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "envlock/channel.hpp"
#include "envlock/match_spec.hpp"
#include "envlock/package_record.hpp"
#include "envlock/record_source.hpp"
#include "envlock/result.hpp"
#include "envlock/virtual_package.hpp"

namespace envlock {

/// The records of one channel subdir, borrowed from the caller (they must outlive the solve).
struct SolverRepo {
  std::string channel;  ///< credential-free channel URL, used in messages
  std::string subdir;   ///< linux-64, noarch, ...
  /// Channel rank: 0 is the first (highest-priority) channel of the manifest, 1 the next, ...
  /// Every subdir of one channel shares its rank.
  int channel_rank = 0;
  /// Eager records (all of them), or nullptr when `index` is given.
  const std::vector<RepoDataRecord>* records = nullptr;
  /// Records by name (envlock/record_source.hpp; the channel module's RepodataIndex): only the
  /// names the request can reach are asked for (and offered to libsolv). Used instead of
  /// `records` when set.
  const RecordSource* index = nullptr;
};

/// A requested spec with what messages need to name it.
struct SolveSpec {
  MatchSpec spec;
  std::string text;    ///< as the user wrote it, e.g. "numpy >=2"
  std::string origin;  ///< where it was written, e.g. "envlock.yaml:9:5"; may be empty
};

/// A record that must be part of the answer exactly (a base layer pin), and where it comes from.
struct PinnedRecord {
  RepoDataRecord record;
  std::string layer;  ///< the environment whose lock pinned it, e.g. "base"
};

struct SolveTask {
  std::vector<SolverRepo> repos;
  std::vector<SolveSpec> specs;
  /// The virtual packages assumed on the target platform (`__glibc`, `__cuda`, ...). Records
  /// that depend on a virtual package not listed here cannot be chosen.
  std::vector<VirtualPackage> virtual_packages;
  /// Where each virtual package's value came from, by name ("declared in the manifest",
  /// "CONDA_OVERRIDE_CUDA", "assumed for linux-64"); named by unsatisfiable explanations.
  /// Names without an entry are explained without an origin.
  std::map<std::string, std::string> virtual_origins;
  /// Base layer pins: each is installed exactly (it is matched to the identical record of a
  /// repo by channel, subdir and file name, or added as it is); no other record of a pinned
  /// name can be chosen.
  std::vector<PinnedRecord> pinned;
  /// Records of a previous lock: preferred over any other record of their name when they still
  /// fit (minimal updates). Those no longer offered by any repo are ignored.
  std::vector<RepoDataRecord> preferred;
  ChannelPriority channel_priority = ChannelPriority::Strict;
};

/// One chosen record, with where it came from.
struct SolvedPackage {
  const RepoDataRecord* record = nullptr;  ///< points into a SolverRepo's records or pinned[]
  std::size_t repo = 0;          ///< index into SolveTask::repos; unused when from_pin
  /// Index into that repo's `records` (for a RecordSource: into index->records(record->name)), or
  /// into SolveTask::pinned.
  std::size_t index = 0;
  bool from_pin = false;         ///< true when the record is a base layer pin
};

/// The answer of a successful solve: every chosen record (virtual packages excluded), sorted
/// by name.
struct Solution {
  std::vector<SolvedPackage> packages;
};

/// One node of an unsatisfiability explanation. Roots are the requested specs and base pins
/// that take part in a conflict; children say through which packages and why.
struct ProblemNode {
  enum class Kind {
    Requested,  ///< a spec of the manifest: text = the spec, detail = its origin
    Pinned,     ///< a base layer pin: text = "name version build", detail = the layer
    Packages,   ///< candidate records of one name: text = "name v1, v2 (n builds)"
    Requires,   ///< a dependency: text = the MatchSpec of a `depends` entry
    Conflict,   ///< why a package cannot be chosen: text explains, e.g. the pin it clashes with
    Missing,    ///< nothing provides a spec: text names it, detail = the versions that exist
    Virtual,    ///< a virtual package of the platform: text = "name version build", detail = its origin
  };
  Kind kind = Kind::Requested;
  std::string text;
  std::string detail;
  std::vector<ProblemNode> children;
};

/// Why a solve has no answer, grouped by requested spec.
struct Explanation {
  std::vector<ProblemNode> roots;
  /// A tree drawn with `├─ └─ │`, one node per line, two-space indented under `indent`.
  [[nodiscard]] std::string to_text(const std::string& indent = "  ") const;
  /// {"conflicts": [{"kind": "requested", "text": ..., "detail": ..., "children": [...]}, ...]}
  void to_json(nlohmann::json& j) const;
};

/// A finished solve: a Solution, or an Explanation when the request cannot be satisfied.
struct SolveOutcome {
  bool solved = false;
  Solution solution;        ///< when solved
  Explanation explanation;  ///< when not solved
};

/// Solves `task`. Returns the outcome (solved or explained); an Error only for input the solver
/// cannot use: a `depends` string libsolv cannot parse is not an error (such a dependency simply
/// has no provider), but a requested spec without an exact name is (ErrorKind::Usage).
Result<SolveOutcome> solve(const SolveTask& task);

/// The records of `repos` matching `spec`, newest first (version, then build number, then
/// timestamp), deduplicated by channel/subdir/file name. Used by `envlock search`; pure.
std::vector<const RepoDataRecord*> find_records(const std::vector<SolverRepo>& repos,
                                                const MatchSpec& spec);

}  // namespace envlock
