#pragma once
// envlock/readers.hpp — reading the lockfiles people commit today into envlock's one model.
//
// Every reader produces a `Lockfile` (include/envlock/lockfile.hpp): environment x platform ->
// locked conda records and pip packages, so `diff`, `show`, `install` and `snapshot` speak one
// shape whatever the source. Formats read:
//
//   envlock.lock      envlock's own lockfile, through Lockfile::parse (docs/lockfile.md).
//   conda-lock        `conda-lock.yml` / `*.conda-lock.yml`, unified format version 1 (and the
//                     unversioned v0 spelling): `metadata` + one `package` list whose entries carry
//                     `platform`, `manager` (conda | pip), `category` (main, dev, extras) or
//                     `categories`, `url`, `hash: {md5, sha256}` and `dependencies` as a map.
//                     pixi.lock format versions 1-3 use the same shape (`dependencies` as a list)
//                     and are read by the same reader.
//   pixi.lock 4-7     `environments: {name: {channels, packages: {platform: [{conda|pypi: url}]}}}`
//                     plus one top-level `packages` list. Version 4 entries carry `kind`; from 5 on
//                     the key (`conda:` / `pypi:`) names the kind and name/version/build may be left
//                     out (then taken from the archive file name in the URL). Version 7 adds a
//                     `platforms` list (name, subdir, virtual-packages) that environments refer to
//                     by name, and `conda_source:` source packages.
//   @EXPLICIT         conda's explicit spec files: one package URL per line after `@EXPLICIT`, with
//                     a `#<md5>` (32 hex), `#sha256:<hex>` or bare `#<64 hex>` fragment;
//                     `# platform: <subdir>` names the platform; conda-lock's
//                     `# pip <name> @ <url>#sha256=<hex>` lines become pip packages.
//   conda-meta        an environment prefix (a directory holding `conda-meta/*.json`), through
//                     read_conda_meta(), plus the pip distributions of its site-packages
//                     (`*.dist-info`, envlock/pip.hpp), so a lockfile can be compared with what
//                     is installed.
//
// Model mapping: a format without environments gives one environment named "default"; conda-lock
// categories do not split environments (an install of all categories is one environment) — each
// record's `layer` keeps its category list ("main", "dev", "main,dev"). Platforms are keyed by
// subdir, except pixi.lock 7 platforms with their own names (`linux-64-cuda`), keyed by that name
// with `LockedPlatform::platform` holding the subdir. Packages are sorted by name, pip packages
// by name. URLs and channels are credential-free (redact_url). When a format leaves out name,
// version or build, they come from the package file name in the URL (parse_archive_name); subdir
// and channel come from the URL path (`<channel>/<subdir>/<file>`).
//
// Errors (ErrorKind::Parse unless noted) name the file and place as `file:line:col` and say what to
// do: YAML syntax errors (truncated files included), a conda entry with neither URL nor hash, a
// package listed twice for one environment and platform, an unknown or newer format version
// ("pixi.lock format version 8 is newer than this envlock reads (4-7)"), a file that is not a
// lockfile at all (a TOML manifest, a plain list of specs, a URL list without `@EXPLICIT`).

#include <filesystem>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/lockfile.hpp"
#include "envlock/result.hpp"

namespace envlock {

/// The lockfile formats envlock reads.
enum class LockFormat {
  Envlock,    ///< envlock.lock
  CondaLock,  ///< conda-lock.yml (v0/v1) and pixi.lock 1-3, which share its shape
  PixiLock,   ///< pixi.lock 4-7
  Explicit,   ///< @EXPLICIT spec file
  CondaMeta,  ///< an environment prefix's conda-meta/ directory
};

/// What detection found: the format and its version (0 when the format has none, as @EXPLICIT).
struct FormatInfo {
  LockFormat format = LockFormat::Envlock;
  int version = 0;
  /// LockFormat::CondaLock only: the file was written by pixi. pixi.lock 2 and 3 say so by their
  /// version; pixi.lock 1 is the conda-lock v1 format itself, told apart only by a file name that
  /// contains "pixi.lock".
  bool by_pixi = false;
  /// Human name, e.g. "conda-lock v1", "pixi.lock v1", "pixi.lock v6", "@EXPLICIT",
  /// "conda-meta prefix".
  [[nodiscard]] std::string to_string() const;
};

/// Detects the format of lockfile text without reading its packages. `source` names the input
/// in errors. Refuses (ErrorKind::Parse) text that is no lockfile envlock reads, a format version
/// newer than supported or unknown, naming what was found.
Result<FormatInfo> detect_lock_format(const std::string& text, const std::string& source);

/// A lockfile read from any supported format, with the format it was read from.
struct ReadResult {
  Lockfile lockfile;
  FormatInfo format;
  /// Things read but left out, one line each naming the file (e.g. a damaged dist-info of a
  /// prefix); the reading still succeeded. Commands print them on standard error.
  std::vector<std::string> warnings;
};

/// Detects the format of `text` and reads it. `source` names the input in errors and is used as
/// a hint only for envlock.lock (a file named `*envlock.lock`). `directory`, when given, is the
/// folder of the file: an envlock.lock's relative local channels (`../channel`) are resolved
/// against it into `file://` URLs, as `install` resolves them (empty: kept as written). For text
/// from git (`REV:PATH`) or stdin, `envlock diff` and `show` pass the folder that PATH names in
/// the working tree, or the current folder (src/cli/lock_input.hpp).
Result<ReadResult> read_lockfile_text(const std::string& text, const std::string& source,
                                      const std::filesystem::path& directory = {});

// The most one input of `envlock diff` and `show` may hold, from a file, a FIFO, standard input
// or git, is kMaxLockfileBytes (envlock/lockfile.hpp: 64 MiB, what install reads too); reading
// stops at the cap, so `envlock show - </dev/zero` ends at once and a file of GBs costs no GBs of
// memory.

/// The refusal of an input past kMaxLockfileBytes (ErrorKind::Io at `where`): "is larger than
/// 64 MiB, more than any lockfile; it is not read", with what to do. read_bounded_input and
/// read_lockfile_path give it; so does `envlock diff`/`show` for the output of `git show REV:PATH`.
Error input_too_large(const std::string& where);

/// Reads all of `in` (a file, a pipe, standard input) into a string, at most kMaxLockfileBytes:
/// past it, ErrorKind::Io at `where`, "is larger than 64 MiB, more than any lockfile", with what
/// to do. Reading stops there (an endless stream is not drained).
Result<std::string> read_bounded_input(std::istream& in, const std::string& where);

/// Reads a lockfile from a path: a file in any supported format, or a directory that is an
/// environment prefix (has `conda-meta/`). ErrorKind::Io when the path cannot be read.
Result<ReadResult> read_lockfile_path(const std::filesystem::path& path);

/// Format-specific readers (detect_lock_format has already chosen the format; each re-checks
/// the version it supports). All return the model described in the file comment.
Result<Lockfile> read_conda_lock(const std::string& text, const std::string& source);
Result<Lockfile> read_pixi_lock(const std::string& text, const std::string& source);
Result<Lockfile> read_explicit(const std::string& text, const std::string& source);
/// Reads an environment prefix into environment "default", platform = the subdir of the
/// installed non-noarch records ("noarch" when all are noarch):
///  - conda packages from `prefix/conda-meta/*.json` (read_conda_meta; its errors are this one's);
///  - pip packages from the `*.dist-info` folders of its site-packages (envlock/pip.hpp): name as
///    METADATA spells it, version, and for a PEP 610 direct_url install the URL and a PEP 508
///    requirement (to_pip_package). Left out: a conda package's own dist-info — INSTALLER
///    "conda", or no INSTALLER while a conda-meta record lists its METADATA. RECORD is not read.
///    A damaged dist-info (METADATA missing or without Name/Version, a bad direct_url.json) is
///    not an error: it is left out and, when `warnings` is given, a line naming the file and the
///    fault is added there (none for a damaged dist-info a conda record owns). Two dist-info
///    folders of one project (a pip leftover) give one package, the newest, as snapshot capture
///    keeps it (keep_newest_dist_infos); the stale folder is a warning naming it and the one kept.
/// A prefix holding `conda-meta/envlock-pending` (an install interrupted before its commit) is
/// refused, ErrorKind::Io: its tree is not the environment (envlock/install.hpp, interrupted_install).
Result<Lockfile> read_prefix(const std::filesystem::path& prefix, std::vector<std::string>* warnings = nullptr);

/// Fills the fields a lockfile format may leave out from the package URL: file_name (last path
/// segment without query or fragment), name/version/build (parse_archive_name) when empty,
/// subdir (the parent path segment) when empty, and channel (the URL before `/<subdir>/`) when
/// empty. The URL is made credential-free. `where` names the entry in errors: a URL that is not a
/// `name-version-build.conda|.tar.bz2` archive while name/version/build are missing, or a version
/// that does not parse.
Status complete_record_from_url(RepoDataRecord& record, const std::string& where);

}  // namespace envlock
