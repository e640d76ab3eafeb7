#pragma once
// envlock/diff.hpp — what a lockfile change really does, for reviewers and CI gates.
//
// diff_lockfiles() compares two Lockfiles (read from any format, see readers.hpp) per
// environment x platform and classifies every package that differs. Change kinds have stable
// names, used in JSON output and by `envlock diff --fail-on`:
//
//   added              only on the new side
//   removed            only on the old side
//   upgraded           higher version (conda version order, envlock::Version)
//   downgraded         lower version                                           (red flag)
//   rebuilt            same version, another build string (or the same build repackaged in
//                      another archive format, .tar.bz2 -> .conda: note "repackaged")
//   variant-switch     the build variant moved: cuda <-> cpu, mkl <-> openblas (build string
//                      or track_features), or another CUDA major (`cudaNNN` build tags,
//                      `cuda-version` in depends)                              (red flag)
//   channel-changed    the package now comes from another channel
//   re-uploaded        the same URL now serves another archive: same name, version, build and
//                      URL, another sha256 (or md5 where a side has no sha256) (red flag)
//   hash-changed       same name, version, build and archive file but another sha256 or md5
//                      under another URL, or another URL within the same channel (red flag)
//   license-changed    the record's license string differs (both sides known)
//   host-floor-raised  the package needs more of the host than the old environment did: a new
//                      or higher `__glibc`, `__cuda`, `__linux` or `__osx` lower bound in its
//                      depends than the old environment's highest bound for that name
//   source-changed     a pip package is installed from another kind of source or place: index,
//                      URL, local path, VCS URL or commit, editable
//   metadata-changed   the record installs differently though its archive may be the same (a
//                      repodata patch): depends, constrains, track_features, noarch kind,
//                      build number, python_site_packages_path; for pip, requires_dist and
//                      requires_python. Each field is compared only when both sides' formats
//                      record it (RecordedFields).
//   inputs-changed     not a package: what the platform was solved against changed — its
//                      channel list or order, a channel's name, a virtual package assumed (added,
//                      removed, lowered, raised), the PyPI indexes. One change each, `input`;
//                      compared only when both sides' formats hold them (RecordedFields).
//
// One change per package: `kind` is the most important kind that applies (order:
// re-uploaded, hash-changed, variant-switch, added, removed, downgraded, upgraded, rebuilt,
// channel-changed, host-floor-raised, source-changed, metadata-changed, license-changed,
// inputs-changed); every
// other kind that also applies is in `flags`. A record that differs in any field compared is a
// change, so "no changes" means none of these fields differ.
// `--fail-on` matches a kind in either place. pip packages are compared too (added, removed,
// upgraded, downgraded, hash-changed, rebuilt, source-changed, metadata-changed), marked `pypi`;
// a pip line that names no project (an
// option such as `-e .` or `--extra-index-url URL`, a path or URL without a project name) is
// paired by its text, only ever added or removed, and named by that text (`pip_line`).
// Requirement texts and URLs are compared and written credential-free (redact_text).
//
// "Why": `pulled_by` lists the direct dependencies that pull a changed package in — the
// environment's requested specs when the format records them, else the roots of the `depends`
// graph (packages no other package depends on) — found by walking the new side's depends graph
// upwards (the old side's for removed packages). A requested or root package lists itself.
//
// Sizes are archive sizes in bytes, counted only where both needed sides know them.
// Environments pair by name; when each side has exactly one environment they pair whatever
// their names (a conda-lock "default" against an envlock.lock "ml"). Platforms pair by key.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "envlock/lockfile.hpp"
#include "envlock/result.hpp"

namespace envlock {

enum class ChangeKind {
  ReUploaded,
  HashChanged,
  VariantSwitch,
  Added,
  Removed,
  Downgraded,
  Upgraded,
  Rebuilt,
  ChannelChanged,
  HostFloorRaised,
  SourceChanged,
  MetadataChanged,
  LicenseChanged,
  InputsChanged,
};

/// Every kind, in precedence order (the order of the enum).
const std::vector<ChangeKind>& all_change_kinds();
/// The stable name: "hash-changed", "variant-switch", "added", ...
std::string_view change_kind_name(ChangeKind kind);
/// Parses a stable name; nullopt for anything else.
std::optional<ChangeKind> parse_change_kind(std::string_view name);
/// Parses `--fail-on` text: "any" or a comma-separated list of kind names (exact; white space
/// around an element aside). With `host_changed`, the element `host-changed` (a host fact of two
/// snapshots, no package kind) is accepted too and sets it. Errors (ErrorKind::Usage) name the
/// unknown kind and list the valid ones, or quote the whole text for an empty element
/// (`downgraded,,added`, a trailing comma); no kind at all is an error too.
Result<std::set<ChangeKind>> parse_fail_on(std::string_view text, bool* host_changed = nullptr);
/// re-uploaded, hash-changed, variant-switch and downgraded: what a reviewer must look at.
bool is_red_flag(ChangeKind kind);

/// One side of a changed package, as the lockfile records it (empty strings when unknown).
struct PackageSide {
  std::string version;
  std::string build;
  std::string channel;
  std::string url;
  std::string sha256;
  std::string md5;
  std::string license;
  std::optional<std::uint64_t> size;     ///< bytes
  std::vector<std::string> variants;     ///< variant tags found: "cuda", "cuda12", "cpu", "mkl", ...
  std::string source;                    ///< pip packages: PipSourceInfo::to_string() ("index", "vcs git+...@<commit>")
};

struct PackageChange {
  std::string name;                       ///< the package name; for a pip_line, its requirement text
  bool pypi = false;                      ///< a pip/PyPI package rather than a conda record
  bool pip_line = false;                  ///< a pip line naming no project (`-e .`, `--extra-index-url URL`); pypi too
  /// Not a package: a solve input of the platform (kind inputs-changed), named "channels",
  /// "channel names", "virtual package __cuda" or "pypi indexes"; its sides (a virtual
  /// package's version and build) or its note say what changed.
  bool input = false;
  ChangeKind kind = ChangeKind::Added;    ///< the most important kind that applies
  std::vector<ChangeKind> flags;          ///< further kinds that apply, in precedence order
  std::optional<PackageSide> old_side;    ///< absent for added
  std::optional<PackageSide> new_side;    ///< absent for removed
  std::optional<std::int64_t> size_delta; ///< bytes, when the sizes needed are known
  std::vector<std::string> pulled_by;     ///< direct dependencies pulling it in (sorted)
  std::vector<std::string> notes;         ///< human details: "cuda12 -> cpu", "__glibc >=2.28 (was 2.17)"

  [[nodiscard]] bool has(ChangeKind k) const;
  [[nodiscard]] bool red_flag() const;
};

/// Highest lower bound an environment's packages put on one virtual package ("2.17"), per side.
struct HostFloor {
  std::string name;          ///< "__glibc", "__cuda", "__linux", "__osx"
  std::string old_floor;     ///< empty when no package of the old side required it
  std::string new_floor;
};

struct PlatformDiff {
  std::string environment;   ///< display name ("default", or "old -> new" when paired by being alone)
  std::string platform;      ///< platform key (subdir)
  enum class Presence { Both, OnlyOld, OnlyNew } presence = Presence::Both;
  std::vector<PackageChange> changes;   ///< red flags first, then by kind, then name
  std::int64_t size_delta = 0;          ///< sum of known package size deltas, bytes
  /// False when changes exist but none has a known size delta (conda-lock.yml and @EXPLICIT
  /// carry no sizes): size_delta is then 0 for want of data, shown as "size unknown" / null.
  bool size_known = true;
  std::vector<HostFloor> host_floors;   ///< floors that differ between the sides
  std::size_t old_count = 0, new_count = 0;  ///< packages (conda + pip) on each side
};

struct LockDiff {
  std::vector<PlatformDiff> groups;                ///< sorted by environment, platform
  std::map<ChangeKind, std::size_t> counts;        ///< changes per primary kind
  std::map<ChangeKind, std::size_t> counts_any;    ///< changes where the kind is primary or a flag
  std::size_t total = 0;                           ///< number of package changes
  std::int64_t size_delta = 0;                     ///< bytes, sum of the groups' known deltas
  bool size_known = false;  ///< as PlatformDiff::size_known, over all groups (set by diff_lockfiles)

  [[nodiscard]] bool empty() const { return total == 0; }
  /// True when a change has one of `kinds` as its kind or among its flags.
  [[nodiscard]] bool has_any(const std::set<ChangeKind>& kinds) const;
  [[nodiscard]] std::size_t red_flags() const;
};

/// Which fields of its records a side's format holds. A field is compared only when both sides
/// hold it: a conda-lock.yml has no constrains, so an envlock.lock's constrains are not "removed".
/// The default (all) fits envlock.lock and prefixes; `envlock diff` derives it from each side's
/// format (docs/review.md, "Compared fields").
struct RecordedFields {
  bool depends = true;           ///< conda `depends` (conda-lock: `dependencies`)
  bool constrains = true;
  bool track_features = true;    ///< also what variant-switch reads besides the build string
  bool noarch = true;
  bool build_number = true;
  bool python_site_packages_path = true;
  bool requires_dist = true;     ///< pip core metadata
  bool requires_python = true;
  /// conda-lock `category`/`categories` and `optional` (LockedPackage::layer): what
  /// `conda-lock install --no-dev` / without extras leaves out. Other formats' layer is a label.
  bool categories = false;
  /// conda records' sha256 (an @EXPLICIT file may hold md5 fragments only; an old conda's
  /// prefix records too): a record that loses it is hash-changed only when both hold it.
  bool sha256 = true;
  /// pip archives' sha256 (a prefix's index installs name none).
  bool pip_hashes = true;
  /// The platform's solve inputs (inputs-changed): its channels (with their names), the virtual
  /// packages it was solved assuming, its PyPI indexes (pixi.lock's `indexes`). `envlock diff`
  /// compares them between two files of one format only (each tool spells them its own way) and
  /// never for a prefix, an @EXPLICIT file or a snapshot, whose channels come from their records
  /// and which were never solved.
  bool channels = true;
  bool virtual_packages = true;
  bool pypi_indexes = true;
};

/// Compares two lockfiles (see the file comment for the rules). Pure: no I/O. `old_fields` and
/// `new_fields` say which fields each side's format holds; without them a field counts as held by
/// a side's platform when one of its records has it (non-empty, not the default), so a format
/// that leaves a field out is never compared on it — track_features are always compared then, and
/// noarch, build number and python_site_packages_path never (pixi.lock writes them for some
/// records only); channels, virtual packages and PyPI indexes when the platform lists any.
LockDiff diff_lockfiles(const Lockfile& old_lock, const Lockfile& new_lock,
                        const std::optional<RecordedFields>& old_fields = std::nullopt,
                        const std::optional<RecordedFields>& new_fields = std::nullopt);

/// Labels naming the two inputs in rendered output (as the user gave them, credential-free).
struct DiffLabels {
  std::string old_label;
  std::string new_label;
  std::string old_format;   ///< FormatInfo::to_string()
  std::string new_format;
};

/// Terminal text: summary line first ("no changes" when there are none), then one block per
/// environment x platform. `color` adds ANSI colours (the caller decides: TTY and no NO_COLOR).
std::string render_text(const LockDiff& diff, const DiffLabels& labels, bool color);
/// A pull-request comment in GitHub-flavoured Markdown: title, summary table, red flags first,
/// then one collapsible <details> section per environment x platform.
std::string render_markdown(const LockDiff& diff, const DiffLabels& labels);
/// The same within a size budget of `max_bytes` (0: none; `envlock diff --max-bytes`, default
/// kMarkdownBudget, a GitHub comment's 65,536 characters — bytes are counted, never fewer than
/// characters). Over the budget: the title, summary line and summary table stay; then one table
/// of changes across groups, most severe first (variant-switch, downgraded, re-uploaded, removed,
/// hash-changed, host-floor-raised, inputs-changed, source-changed, channel-changed,
/// metadata-changed, added, upgraded, rebuilt, license-changed), as many as fit; then a line
/// counting the rest per kind and saying how to see them all. The budget cannot hold less than
/// the summary table; a diff without changes is never folded (its "No changes" line stays).
std::string render_markdown(const LockDiff& diff, const DiffLabels& labels, std::size_t max_bytes);
inline constexpr std::size_t kMarkdownBudget = 65536;
/// The JSON document (schema "envlock-diff/1", documented in docs/review.md).
nlohmann::json diff_to_json(const LockDiff& diff, const DiffLabels& labels);

/// The fields diff_lockfiles() compares beyond what a package line of `envlock show` spells
/// (name, version, build, channel, sha256 or md5), in the order show prints them: one list that
/// drives both. render_show() prints each field's `values`; diff_lockfiles() compares each field
/// through its `change` (issue 17, M5: size, license, virtual packages and channels were compared
/// but not shown, so `git diff` through show's textconv hid them; and a field added to the
/// comparison alone was a field show left out). `values` are the field's texts as show prints them,
/// none when the record does not hold the field or the package line or its URL already spells it;
/// list fields are sorted (diff compares them as sets).
struct ShownRecordField {
  std::string_view name;
  std::vector<std::string> (*values)(const LockedPackage&);
  bool categories_only = false;  ///< printed only with_categories (conda-lock's category)
  /// How diff_lockfiles() compares the field of two records of one package: the note its change
  /// gets (`depends -numpy >=1 +numpy >=1,<2`, `size 100 -> 101`), empty when the two agree.
  /// nullptr only for what names the archive itself (md5, url), which the archive rules compare
  /// with the package line's version, build, channel and sha256 (re-uploaded, hash-changed,
  /// channel-changed).
  std::string (*change)(const LockedPackage& old_record, const LockedPackage& new_record) = nullptr;
  ChangeKind kind = ChangeKind::MetadataChanged;  ///< the kind a `change` note gives the package
  /// Compared only when both sides' formats hold the field (RecordedFields); nullptr: always.
  bool RecordedFields::*held = nullptr;
  /// Compared between any two records of the name (license); otherwise only between records of
  /// one version and build, as another version or build brings its own metadata.
  bool any_build = false;
};
const std::vector<ShownRecordField>& shown_record_fields();

/// The same for a pip entry, beyond its package line (name, version, URL, sha256), in show's
/// order: `source` (vcs with its commit, path, editable; index and URL are one source and get no
/// line), `editable` (printed alone: its value is empty), `requirement`, `requires_python`,
/// `requires_dist` (one line each, sorted), a pinned wheel's `size`, `index` (compared whatever the
/// versions, channel-changed) and `required_by` (shown only). `change` is nullptr for `editable` (compared as part
/// of the source) and `requirement` (compared against the other side's version when one side is
/// unresolved: the requirement rules of the file comment); `any_version`: compared whatever the
/// versions (the source), else for the same version only (core metadata).
struct ShownPipField {
  std::string_view name;
  std::vector<std::string> (*values)(const PipPackage&);
  std::string (*change)(const PipPackage& old_entry, const PipPackage& new_entry) = nullptr;
  ChangeKind kind = ChangeKind::MetadataChanged;
  bool RecordedFields::*held = nullptr;
  bool any_version = false;
};
const std::vector<ShownPipField>& shown_pip_fields();

/// The same for a platform's solve inputs (inputs-changed): each channel in priority order (with
/// the name the manifest gives it), each virtual package assumed (`name=version=build`), each
/// PyPI index.
struct ShownPlatformField {
  std::string_view name;
  std::vector<std::string> (*values)(const LockedPlatform&);
};
const std::vector<ShownPlatformField>& shown_platform_fields();

/// `envlock show`: a normalized, sorted, one-package-per-line view of a lockfile, the same for
/// every format that records the same packages (for `git diff` textconv):
///   <env>/<platform> <name> <version> <build> <channel> <sha256:hex|md5:hex|->
///   <env>/<platform> pypi:<name> <version> <url> <sha256:hex|->
///   <env>/<platform> pip <requirement text>     (a pip line that names no project, e.g. `-e .`)
/// Before a platform's packages, one line per solve input it holds (shown_platform_fields()),
/// `<env>/<platform>  <field> <value>` (two spaces): `channel URL` (`channel URL name NAME`),
/// `virtual_package __cuda=12.4=0`, `pypi_index URL`.
/// Under each package line, one line per other field that diff compares and the record holds
/// (shown_record_fields()), `<env>/<platform> <name>  <field> <value>` (two spaces before the
/// field): conda `md5` (with a sha256), `url` (unless it is channel/subdir/name-version-build.conda),
/// `file_name` (unless it is the URL's last segment), `subdir` (unless it is the URL's folder),
/// `build_number` (non-zero), `noarch`, `python_site_packages_path`, `size`, `license`,
/// one line per `track_features`, `depends` and `constrains` entry,
/// and with `with_categories` (conda-lock) `category` (the record's categories, `;optional` when
/// marked optional; not written for plain `main`); pip `source` (vcs with its commit, path, editable), `editable`,
/// `requirement`, `requires_python`, one line per `requires_dist` entry, `size`, `index`, one line
/// per `required_by` entry.
/// URLs and requirement texts are written credential-free (presigned URLs' signatures too).
std::string render_show(const Lockfile& lock, bool with_categories = false);

/// Human size: "+1.2 MiB", "-340 KiB", "+12 B" (signed when `sign`), binary units.
std::string format_size(std::int64_t bytes, bool sign);

}  // namespace envlock
