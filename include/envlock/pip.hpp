#pragma once
// envlock/pip.hpp — the pip side of an environment prefix: Python distributions installed as
// `<site-packages>/<name>-<version>.dist-info` folders, read the same way by snapshot capture
// (snapshot.hpp) and by read_prefix (readers.hpp, so `envlock diff`/`show` see pip packages).
//
// Standards followed:
//   PEP 376 / PEP 627  the .dist-info folder: METADATA, INSTALLER (first line names the tool that
//                      installed it: "pip", "uv", "conda"), RECORD (CSV rows `path,hash,size`,
//                      RFC 4180 quoting, hash `sha256=<urlsafe base64 without padding>`), WHEEL.
//   PEP 566 / core metadata  METADATA's RFC 822 headers `Name` and `Version` (the body after the
//                      first blank line is ignored).
//   PEP 610            direct_url.json: `url` plus exactly one of `vcs_info`, `archive_info`,
//                      `dir_info` (with `editable`).
//   PEP 503            normalised project names (lower case, runs of `-_.` as one `-`).
// Site-packages folders are where CPython puts them in a conda prefix: `lib/python*/site-packages`
// (POSIX) and `Lib/site-packages` (Windows).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/pip_package.hpp"
#include "envlock/pypi_name.hpp"  // pep503_normalize
#include "envlock/result.hpp"

namespace envlock {

/// How a pip distribution was installed (PEP 610 direct_url.json).
enum class PipSource {
  Index,      ///< no direct_url.json: from an index, pinnable as name==version
  Editable,   ///< dir_info.editable: a working tree, never a pin
  Vcs,        ///< vcs_info: a git/hg/... checkout at a commit
  Archive,    ///< archive_info: a wheel or sdist from a URL or file
  Directory,  ///< dir_info without editable: built from a local folder
};

/// One file listed in a RECORD (PEP 376): path relative to site-packages, hash, size.
struct RecordEntry {
  std::string path;    ///< as written in RECORD ('/'-separated, may start with ../ for scripts)
  std::string sha256;  ///< lower-case hex (RECORD holds urlsafe base64); empty for unhashed rows
  std::optional<std::uint64_t> size;  ///< bytes; absent for rows without a size
  friend bool operator==(const RecordEntry&, const RecordEntry&) = default;
};

/// A Python distribution found as `<site-packages>/<name>-<version>.dist-info`.
struct PipDistribution {
  std::string name;              ///< as METADATA's Name
  std::string version;           ///< as METADATA's Version
  std::string installer;         ///< INSTALLER's first line ("pip", "uv", "conda"); may be empty
  PipSource source = PipSource::Index;
  std::string url;               ///< direct_url.json url, credentials stripped (redact_url)
  std::string vcs;               ///< "git", ... for Vcs
  std::string commit_id;         ///< for Vcs
  std::string requested_revision;///< for Vcs, when recorded
  std::string archive_sha256;    ///< for Archive, when recorded (lower-case hex)
  /// PEP 610's top-level `subdirectory`: the project's folder inside the repository, archive or
  /// directory (`pip install "git+URL#subdirectory=pkg"`); empty when the project is at its root.
  std::string subdirectory;
  std::string dist_info;         ///< prefix-relative path of the .dist-info folder
  std::vector<std::string> wheel_tags;  ///< WHEEL's Tag lines, e.g. "cp311-cp311-manylinux_2_17_x86_64"
  std::vector<RecordEntry> files;       ///< RECORD rows, paths relative to site-packages, sorted
  std::string shadows;           ///< name of the conda package this install replaced, if any (set by capture)
  std::vector<std::string> requires_dist;  ///< METADATA's Requires-Dist values, in file order
  std::string requires_python;            ///< METADATA's Requires-Python, may be empty
  friend bool operator==(const PipDistribution&, const PipDistribution&) = default;

  /// PEP 503 normalised name (pep503_normalize(name)).
  [[nodiscard]] std::string normalized_name() const;
  /// "name==version" for Index installs; otherwise a PEP 508 direct reference
  /// ("name @ git+https://...@<commit>", "name @ <url>#sha256=<hex>", "name @ file:///..."),
  /// never a plain pin. A `subdirectory` is the fragment `subdirectory=<dir>`, after the hash and
  /// joined by `&`, as pip's `direct_url_as_pep440_direct_reference` writes it
  /// (src/pip/_internal/utils/direct_url_helpers.py).
  [[nodiscard]] std::string requirement() const;
};

/// The distribution as a lockfile lists it: name (as METADATA spells it) and version; for a
/// direct_url install (anything but PipSource::Index) also `url`, `sha256` (the archive's, when it
/// is 64 lower-case hex digits) and `requirement` = requirement(), so an editable, VCS, archive or
/// folder install is never read back as a plain index pin.
PipPackage to_pip_package(const PipDistribution& dist);

/// Where a pip package (a lockfile entry or an installed distribution) comes from, read from its
/// URL, requirement text and editable flag:
///   index     no URL: pinned as name==version from an index (PEP 610 writes no direct_url.json)
///   url       an archive URL (https://.../pkg-1.0-py3-none-any.whl): an index's wheel as a
///             lockfile names it, or a direct URL install
///   path      a local file or folder (`file:` URL, `/abs`, `./rel`)
///   vcs       `git+`/`hg+`/`svn+`/`bzr+` URL; `commit` from pixi's `#<commit>` fragment or PEP
///             508's `@<rev>`, `location` without either (and without `?rev=`)
///   editable  an editable install of a working tree (`location` its URL or path when known)
/// Any kind with a URL may name a `subdirectory` (the project's folder in the repository or
/// archive): pip's fragment `#subdirectory=<dir>` (also `#egg=x&subdirectory=<dir>`) or pixi's
/// query `?subdirectory=<dir>` (pixi's locked git URL, `crates/pixi_record/src/pinned_source.rs`
/// `into_locked_git_url`). Two sources with another subdirectory build another project.
struct PipSourceInfo {
  enum class Kind { Index, Url, Path, Vcs, Editable };
  Kind kind = Kind::Index;
  std::string location;      ///< credential-free URL or path, without commit and fragment
  std::string commit;        ///< VCS commit (or revision) when recorded
  std::string subdirectory;  ///< the project's folder inside the source, empty for its root
  /// "index", "url https://...", "vcs git+https://host/repo.git@<commit>", "editable file:///src",
  /// with `#subdirectory=<dir>` after it when there is one.
  [[nodiscard]] std::string to_string() const;
};
/// Reads the source of `p` (see PipSourceInfo).
PipSourceInfo pip_source_info(const PipPackage& p);
/// "index", "url", "path", "vcs", "editable".
std::string_view pip_source_kind_name(PipSourceInfo::Kind kind);

/// How an unresolved requirement (PipPackage::requirement with an empty version, as an
/// environment.yml `pip:` entry gives) fares against an installed distribution.
struct PipRequirementCheck {
  enum class Outcome {
    Met,          ///< every clause holds, or a direct reference names the installed URL
    TooLow,       ///< the installed version is below a lower bound (`>=`, `>`, `==`, `~=`)
    TooHigh,      ///< the installed version is above an upper bound (`<`, `<=`, `==`, `~=`)
    Excluded,     ///< a `!=` or `===` clause fails
    OtherSource,  ///< `name @ URL`, but the distribution was installed from elsewhere
    Unknown,      ///< the requirement or a version cannot be read: nothing can be said
  };
  Outcome outcome = Outcome::Unknown;
  std::string clause;  ///< the failing clause (">=2.0", the URL), empty for Met/Unknown
};

/// Checks PEP 508 requirement text ("requests>=2.31,<3", "torch==2.3.*", "pkg[extra] ~= 1.4",
/// "pkg @ git+https://host/repo@main") against `installed` (a pip package read from a prefix).
/// Environment markers (after `;`) and extras are ignored: the distribution is installed, so its
/// marker held. Versions compare in envlock's version order (version.hpp), which agrees with
/// PEP 440 for release, pre-, post- and dev-releases; `==X.*` and `!=X.*` are prefix matches and
/// `~=X.Y` means `>=X.Y, ==X.*`. A direct reference is met when, without the `vcs+` scheme prefix,
/// an `@revision` and a `#fragment`, its URL equals the installed direct_url URL.
PipRequirementCheck check_pip_requirement(std::string_view requirement, const PipPackage& installed);

/// What read_dist_info() reads besides METADATA, INSTALLER, WHEEL and direct_url.json.
enum class DistInfoParts {
  All,            ///< RECORD too (required; capture needs the file list)
  WithoutRecord,  ///< RECORD left unread: `files` stays empty, a missing or bad RECORD is no error
};

/// The rows of a RECORD file's text (PEP 376: CSV rows `path,hash,size`, RFC 4180 quoting), in
/// file order; blank lines are skipped. `where_file` names the file in errors, which add
/// ":line" (ErrorKind::Parse): a row that is not three fields with a path, a hash that is not
/// `sha256=` (the hint says envlock checks sha256 only), a sha256 that is not 32 bytes of
/// urlsafe base64, a size that is not a number. read_dist_info() and the wheel installer
/// (wheel.hpp, a wheel's own RECORD) read RECORD through it.
Result<std::vector<RecordEntry>> parse_record(std::string_view text, const std::string& where_file);

/// Reads one `.dist-info` folder (local path) of a prefix; `prefix_relative` is how the folder is
/// named in errors and in PipDistribution::dist_info. Errors (Parse/Io, `where` naming the file,
/// with ":line" for a RECORD row): METADATA missing or without Name/Version, direct_url.json that
/// is not a PEP 610 JSON object or has values of the wrong type; with DistInfoParts::All also a
/// missing RECORD (a dist-info without RECORD cannot be verified or restored) and a malformed
/// RECORD row, hash (not sha256, not 32 bytes) or size.
Result<PipDistribution> read_dist_info(const std::filesystem::path& dist_info_dir,
                                       const std::string& prefix_relative,
                                       DistInfoParts parts = DistInfoParts::All);

/// A distribution keep_newest_dist_infos() left out: a second `*.dist-info` of a project that
/// one already kept stands for (a pip leftover: an upgrade that did not remove the old folder).
struct StaleDistInfo {
  PipDistribution stale;  ///< the one left out (its `dist_info` names the folder)
  std::string kept;       ///< prefix-relative `*.dist-info` folder kept instead
};

/// Keeps one distribution per project (PEP 503 normalised name) of `dists`: the newest version
/// (envlock's version order; equal or unreadable versions: the folder whose path sorts first).
/// `dists` ends sorted by normalised name; the others are returned, sorted the same way. The one
/// rule `envlock snapshot capture` and read_prefix() (`envlock list -p`, `diff`, `show`) share.
std::vector<StaleDistInfo> keep_newest_dist_infos(std::vector<PipDistribution>& dists);

/// Editable installs made by `setup.py develop` (pip's legacy `pip install -e` before PEP 660):
/// a `<name>.egg-link` file in `site_packages` whose first line is the working tree. They have no
/// dist-info; pip reads them as editable too (pip's `egg_link_path_from_location`,
/// `metadata/base.py` `editable_project_location`). Each becomes a PipDistribution with source
/// Editable, `url` the tree's file: URL, name and version from the tree's
/// `<name>.egg-info/PKG-INFO` when it can be read (else the link's name and no version), INSTALLER
/// "setuptools", `dist_info` = `<prefix_relative_site>/<name>.egg-link` and the link file as its one
/// file. Sorted by file name; an unreadable link is left out.
/// The link names its tree as a path of the host it was made on; `resolve_tree` maps that path to
/// the local one to read (snapshot capture with `--root DIR` resolves it under DIR, never on the
/// live host: Host::resolve), nullopt when it is not there. Without one, the path is read as
/// it is (a live prefix).
using HostPathResolver = std::function<std::optional<std::filesystem::path>(const std::filesystem::path&)>;
std::vector<PipDistribution> read_egg_links(const std::filesystem::path& site_packages, const std::string& prefix_relative_site,
                                            const HostPathResolver& resolve_tree = {});

/// The site-packages folders of the prefix at local path `prefix`, prefix-relative and sorted:
/// every `lib/python*/site-packages` and `Lib/site-packages` that is a folder. Empty when there
/// is none (no Python installed).
std::vector<std::string> site_packages_dirs(const std::filesystem::path& prefix);

/// The `*.dist-info` folders directly inside the local folder `site_packages`, sorted by path.
/// Empty when the folder cannot be read.
std::vector<std::filesystem::path> dist_info_dirs(const std::filesystem::path& site_packages);

}  // namespace envlock
