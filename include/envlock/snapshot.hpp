#pragma once
// envlock/snapshot.hpp — freeze a drifted host into a snapshot (capture), the snapshot file, comparing
// two snapshots and turning one into a lockfile. The host facts a snapshot records are
// envlock/host_facts.hpp (the host module); checking a target against a snapshot, bundles and
// redeploying one are envlock/snapshot_deploy.hpp.
//
// Capture reads the host only through a `Host` (envlock/host.hpp): a root folder (`/` for this
// machine, any folder holding a host tree for tests or a mounted disk), one command runner and the
// facts of the running process. Nothing is read from the process environment beyond `$HOME` (to
// find `~/.conda/environments.txt`), and nothing secret is recorded: no environment variables, no tokens (URLs pass through redact_url), no user
// or host names beyond the prefix paths themselves, GPU UUIDs only on request.
//
// The snapshot file (YAML, format version 1, documented in docs/snapshot.md) is an envlock.lock
// document (the `version` and `environments` keys, written by Lockfile::to_yaml, so `envlock diff`
// and `envlock list` read its conda part) followed by a `snapshot:` section holding the host facts,
// the prefixes, drift, pip distributions and capture problems. Output is deterministic: keys and
// lists sorted, no clock unless a timestamp is asked for.
//
// Standards followed: conda's PrefixRecord (conda-meta/*.json, paths.json v1), PEP 376/627
// (*.dist-info, RECORD, INSTALLER), PEP 610 (direct_url.json); the host facts' in
// envlock/host_facts.hpp.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/diff.hpp"
#include "envlock/host.hpp"
#include "envlock/host_facts.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/package_record.hpp"
#include "envlock/pip.hpp"
#include "envlock/result.hpp"

namespace envlock {

// ---------------------------------------------------------------------------------------------
// Prefixes: conda records, pip distributions, drift
// ---------------------------------------------------------------------------------------------

// PipDistribution, RecordEntry, PipSource and read_dist_info() — the pip side of a prefix — are
// declared in envlock/pip.hpp (module envlock_pip), shared with readers' read_prefix.

/// The fast reader capture uses for conda-meta/*.json (simdjson; its types stay in snapshot/).
/// read() gives exactly what `PrefixRecord::from_json(nlohmann::json::parse(text))` gives for a
/// record it accepts, the last value counting for a repeated key; it returns nullopt whenever it
/// is not sure — text simdjson refuses, a missing or mistyped key, an unknown path type — and the
/// caller then reads the record with nlohmann and PrefixRecord::from_json for the exact error.
/// One reader reuses its parse buffers: keep one per thread.
class PrefixRecordReader {
 public:
  PrefixRecordReader();
  ~PrefixRecordReader();
  PrefixRecordReader(PrefixRecordReader&&) noexcept;
  PrefixRecordReader& operator=(PrefixRecordReader&&) noexcept;
  PrefixRecordReader(const PrefixRecordReader&) = delete;
  PrefixRecordReader& operator=(const PrefixRecordReader&) = delete;

  /// Bytes a buffer should hold past the text (`capacity` >= size + padding()) so it is parsed
  /// in place rather than copied.
  static std::size_t padding();
  /// Reads the record in data[0, size); `capacity` is how many bytes from `data` may be read.
  std::optional<PrefixRecord> read(const char* data, std::size_t size, std::size_t capacity);
  /// Same, for text without padding (copied).
  std::optional<PrefixRecord> read(std::string_view text);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A file whose content no longer matches what its owner installed.
struct ModifiedFile {
  std::string path;      ///< prefix-relative
  std::string owner;     ///< conda package name, or "pip:<name>"
  std::string expected_sha256;
  std::string actual_sha256;  ///< empty when only the size was compared
  std::optional<std::uint64_t> expected_size;
  std::optional<std::uint64_t> actual_size;
  friend bool operator==(const ModifiedFile&, const ModifiedFile&) = default;
};

/// Drift of one prefix against its own records.
struct Drift {
  std::vector<ModifiedFile> modified;  ///< sorted by path
  std::vector<std::string> unowned;    ///< files no conda record or pip RECORD lists, sorted
  /// package (conda name, or "pip:<name>") -> its missing files, sorted
  std::map<std::string, std::vector<std::string>> missing;
  bool hashed = false;                 ///< false: sizes only (CaptureOptions::hash_files off)
  [[nodiscard]] bool empty() const { return modified.empty() && unowned.empty() && missing.empty(); }
  friend bool operator==(const Drift&, const Drift&) = default;
};

/// One conda package of a captured prefix.
struct CapturedPackage {
  RepoDataRecord record;            ///< url/channel credential-free
  std::vector<std::string> files;   ///< prefix-relative paths it installed, sorted
  std::string shadowed_by;          ///< "pip:<name>" when a pip install replaced it
  /// Set in a bundle's snapshot when the package archive was gone and the bundle holds one
  /// re-packed from the installed files: that archive's sha256 (lower-case hex). Empty otherwise.
  std::string repacked_sha256;
  friend bool operator==(const CapturedPackage&, const CapturedPackage&) = default;
};

/// One captured conda environment.
struct CapturedEnvironment {
  std::string name;                       ///< "base" for a conda installation, else the folder name
  std::string prefix;                     ///< host path
  std::string platform;                   ///< subdir of its packages (noarch ignored); host's when none
  std::vector<CapturedPackage> packages;  ///< sorted by name
  std::vector<PipDistribution> pip;       ///< installed by something other than conda, sorted
  Drift drift;
  friend bool operator==(const CapturedEnvironment&, const CapturedEnvironment&) = default;
};

/// A whole snapshot.
struct Snapshot {
  static constexpr int kFormatVersion = kSnapshotFormatVersion;  // envlock/lockfile.hpp
  int format_version = kFormatVersion;
  std::string timestamp;                     ///< ISO 8601 UTC, only with --timestamp
  HostFacts host;
  std::vector<CapturedEnvironment> environments;  ///< sorted by name
  std::vector<CaptureProblem> problems;           ///< empty: complete capture
  [[nodiscard]] bool complete() const { return problems.empty(); }

  /// The deterministic YAML text (see the file comment).
  [[nodiscard]] std::string to_yaml() const;
  /// Parses snapshot text; `source` names the file in errors ("file:line:col: ..."). A newer
  /// format version is refused naming both versions.
  static Result<Snapshot> parse(const std::string& text, const std::string& source);
  static Result<Snapshot> read(const std::filesystem::path& path);
  /// Writes atomically as write_file_atomic() (envlock/atomic_file.hpp): temporary file beside
  /// `path`, fsync, rename; a link is followed, a folder or device refused (ErrorKind::Io).
  [[nodiscard]] Status write(const std::filesystem::path& path) const;

  friend bool operator==(const Snapshot&, const Snapshot&) = default;
};

/// What to capture.
struct CaptureOptions {
  std::vector<std::filesystem::path> prefixes;  ///< host paths; empty: discover (see Host)
  bool include_ids = false;   ///< record GPU UUIDs
  bool hash_files = true;     ///< sha256 every owned file (false: compare sizes only)
  std::string timestamp;      ///< written as is when non-empty
  /// Saved command outputs used instead of running commands ("nvidia-smi", "rpm").
  std::map<std::string, std::filesystem::path> command_outputs;
};

/// Reads the host facts through `seam`; what cannot be read is added to `problems`.
HostFacts capture_host_facts(const Host& seam, const CaptureOptions& options,
                             std::vector<CaptureProblem>& problems);

/// Captures one prefix (host path). A prefix without conda-meta is an error; unreadable records
/// or dist-info folders are added to `problems` and skipped.
Result<CapturedEnvironment> capture_prefix(const Host& seam, const std::filesystem::path& prefix,
                                           const std::string& host_platform, const CaptureOptions& options,
                                           std::vector<CaptureProblem>& problems);

/// The conda prefixes of the host: `~/.conda/environments.txt` entries and `envs/*` below them,
/// plus `~/.conda/envs/*`, keeping those with a conda-meta folder; sorted, unique. An
/// environments.txt that is there but cannot be read (a FIFO, a device, a link out of a host tree,
/// over the size limit, no permission) is added to `problems` (when given) naming it and why, and
/// its entries are not discovered.
std::vector<std::filesystem::path> discover_prefixes(const Host& seam, std::vector<CaptureProblem>* problems = nullptr);

/// Captures host facts and every prefix. Never fails as a whole: what could not be read is listed
/// in Snapshot::problems.
Snapshot capture(const Host& seam, const CaptureOptions& options);

// ---------------------------------------------------------------------------------------------
// Using a snapshot
// ---------------------------------------------------------------------------------------------

/// The conda part of a snapshot as a lockfile: one environment per captured prefix, its records
/// on its platform, pip distributions as PipPackage entries (requirement() text for non-index
/// installs), and unsolved_virtual_packages(platform) of each environment's own platform (never
/// the capture host's facts: a snapshot was not solved, and each record's `__*` depends say what
/// it needs of a target). manifest_hash is empty: no manifest made it.
/// `shadowed` says what becomes of a conda record pip shadowed (its project pip installed over):
///  - LeftOut: the snapshot file's conda part, where pip's install is what `envlock list` and
///    `envlock diff` report (the record is kept in the snapshot's `shadowed:` section);
///  - Kept: `snapshot lock`, where the record is pinned beside pip's entry of that project, since
///    other conda packages may depend on it and the host had it installed under pip's files.
enum class ShadowedRecords { LeftOut, Kept };
Lockfile to_lockfile(const Snapshot& snapshot, ShadowedRecords shadowed);

/// One change between two snapshots.
struct SnapshotChange {
  enum class Kind { Added, Removed, Changed };
  Kind kind = Kind::Changed;
  std::string section;   ///< "capture", "host", "system", "system-python", "environment", "conda:<env>", "pip:<env>", "drift:<env>"
  std::string name;      ///< fact, package or environment name
  std::string before;    ///< old value (empty when added)
  std::string after;     ///< new value (empty when removed)
  friend bool operator==(const SnapshotChange&, const SnapshotChange&) = default;
};

/// Differences from `a` to `b`, in this order (by name within a section): the capture ("capture":
/// complete, each problem), host facts ("host": platform, os, os codename, os pretty name, kernel,
/// glibc, libstdc++, CPU, page size, system package manager, driver, nvidia-smi's driver, libcuda,
/// CUDA, GPUs with architecture, compute capability and memory), system packages ("system":
/// "name:arch" -> version, with dpkg's status when not installed), the system Pythons' pip
/// packages ("system-python": "<site> <name>" -> "version [installer] (source)"), environments
/// added/removed ("environment"), then environment by environment its
/// conda packages (version-build, channel, ", shadowed by pip:<name>" for a record pip shadowed),
/// pip distributions and drift (the counts, and each
/// drifted path: "modified <path>" -> "sha256 …, N bytes (owner)", "unowned <path>" -> "",
/// "missing <path>" -> "(owner)"). Environments are paired by
/// name; when each side holds exactly one and their names differ, those two are compared anyway:
/// a change {Changed, "environment", "compared (the only one on each side)", a-name, b-name} says
/// so, and their sections are labelled "<a-name>-><b-name>" (e.g. "conda:src->dep").
///
/// With `package_fields` (what each side's lockfile part holds: cli's recorded_fields of an
/// envlock.lock), each environment pair's packages are also compared as `envlock diff` compares
/// two snapshot files (diff_lockfiles of their lockfile parts, with the records pip shadowed as
/// `snapshot lock` writes them): a change
/// the conda/pip entries above do not show (a re-upload, a hash or URL change, new `__cuda`
/// depends) is added as {Changed, "conda:<label>" or "pip:<label>", name, "version build",
/// "version build [kind+flags: notes]"}, and an entry above whose change is a red flag
/// (is_red_flag) gets the same " [...]" suffix. Without it (nullopt) only the entries above.
std::vector<SnapshotChange> diff_snapshots(const Snapshot& a, const Snapshot& b,
                                           const std::optional<RecordedFields>& package_fields = std::nullopt);

}  // namespace envlock
