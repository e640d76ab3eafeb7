#pragma once
// envlock/install.hpp — bringing an environment prefix up from extracted packages, atomically.
//
// The installer takes packages that are already downloaded, hash-checked and extracted into the
// package cache (see package_cache.hpp) and makes a prefix that conda, mamba and pixi recognise:
//
//   1. host check      check_host(): the lockfile's virtual packages and every record's
//                      `__glibc` / `__cuda` / `__linux` / `__archspec` / `__unix` / `__osx` /
//                      `__win` depends against this host, before anything is downloaded;
//   2. staging         the new prefix is assembled in `<parent>/.<name>.envlock-stage-<id>`, a
//                      sibling of the prefix (so on the same filesystem);
//   3. linking         each file of `info/paths.json` (conda package format, paths_version 1; old
//                      packages: `info/files` + `info/has_prefix`) is hard-linked from the package
//                      cache, copied when it must be rewritten, when it is listed in
//                      `info/no_link`, across filesystems, or with LinkMode::Copy; symlinks stay
//                      symlinks; `directory` entries become empty directories. A file that is
//                      rewritten is always a new inode: nothing ever writes through a hard link
//                      into the package cache;
//   4. relocation      text placeholders are replaced by the prefix; binary placeholders are
//                      replaced and NUL-padded to the same length (refused, naming the file, when
//                      the prefix is longer than the placeholder); shebangs longer than 127 bytes
//                      are rewritten to `#!/usr/bin/env <program>` (conda's rule);
//   5. noarch: python  `site-packages/` goes to `lib/pythonX.Y/site-packages/` (X.Y from the
//                      environment's `python` record, or its CEP-17 `python_site_packages_path`),
//                      `python-scripts/` to `bin/`, and `info/link.json` entry points become
//                      `bin/<name>` scripts (conda's template);
//   6. conda-meta      `conda-meta/<name>-<version>-<build>.json` (PrefixRecord), an appended
//                      `conda-meta/history` block, and `conda-meta/envlock` (JSON: which lockfile,
//                      by sha256, and which environment and platform made the prefix);
//   7. pre-unlink      `bin/.<name>-pre-unlink.sh` of each package that goes (removed or
//                      replaced) runs in the live prefix before the swap, as conda runs it
//                      (PREFIX = the prefix); a failure is a warning, as in conda;
//   8. durability      every file envlock wrote into the stage (rewritten, relocated, copied,
//                      conda-meta) is fsync'ed before the swap (from 32 threads, so the fsyncs
//                      share journal commits), then conda-meta/; the parent after the rename.
//                      ENVLOCK_INSTALL_SYNC=fs adds syncfs(2) of the stage's and the cache's
//                      filesystems, =files an fsync of every file and folder, =none skips it all;
//   9. swap            a new prefix: rename(stage, prefix). An existing prefix:
//                      renameat2(RENAME_EXCHANGE) swaps the two directories in one step (two
//                      renames where the filesystem lacks it). The previous tree is kept until
//                      the install commits;
//  10. post-link       `bin/.<name>-post-link.sh` run with `/bin/sh -x` as conda does, after the
//                      swap, so PREFIX is the final prefix (PKG_NAME, PKG_VERSION, PKG_BUILDNUM,
//                      ROOT_PREFIX set; PATH starting with the prefix's bin/);
//                      `$PREFIX/.messages.txt` is collected and removed as conda does. Until they
//                      have all run the new tree carries `conda-meta/envlock-pending`; a failing
//                      script swaps the previous tree back and discards the new one. Removing the
//                      marker commits; then the previous tree is deleted.
// A process killed at any moment therefore leaves the old environment or the new one, never a
// mix; the next run on that prefix deletes a killed run's leftovers and rolls a tree still marked
// pending back to the previous one.
//
// Changing an existing prefix is a transaction over records: packages whose dist name and
// archive hash are unchanged are carried over (their files hard-linked from the old prefix, so
// post-link results stay), new or changed ones are linked from the cache, removed ones are
// dropped; files no record owns (pip installs, user files) are carried over as they are.
// One installer per prefix at a time: `<parent>/.<name>.envlock-lock` is held with flock(2).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/package_record.hpp"
#include "envlock/result.hpp"
#include "envlock/virtual_package.hpp"

namespace envlock {

// ---------------------------------------------------------------------------------------------
// Host check

/// One requirement this host does not meet.
struct HostMismatch {
  std::string package;      ///< "pytorch 2.3.1", or "lockfile" for the lockfile's virtual packages
  std::string requirement;  ///< the requirement as written, e.g. "__cuda >=12.0"
  std::string host;         ///< what the host has, e.g. "this host's driver supports CUDA 11.8"
  /// "pytorch 2.3.1 needs __cuda >=12.0; this host's driver supports CUDA 11.8"
  [[nodiscard]] std::string to_string() const;
};

/// Compares what a lockfile platform needs with what the host offers (detect_virtual_packages).
/// `locked_virtuals` are the virtual packages the lockfile was solved with: the host must offer
/// each of them at the same or a newer version (`__archspec`: the same or a higher x86-64 level).
/// Every `__*` entry in each record's `depends` is a MatchSpec the host's virtual package must
/// satisfy. Returns every mismatch (empty: the host fits), in record order.
/// MatchSpecs that do not parse are reported as mismatches naming the spec.
std::vector<HostMismatch> check_host(const std::vector<RepoDataRecord>& records,
                                     const std::vector<VirtualPackage>& locked_virtuals,
                                     const std::vector<VirtualPackage>& host);

/// Whether the lockfile platform needs CUDA: solved with a `__cuda` virtual package, or a record
/// depends on `__cuda`. Returns the reason ("pytorch 2.3.1 depends on __cuda"), nullopt if not.
std::optional<std::string> needs_cuda(const std::vector<RepoDataRecord>& records,
                                      const std::vector<VirtualPackage>& locked_virtuals);

/// The warning `install` prints, instead of refusing, for a CUDA lockfile on a host whose driver is
/// present (so `__cuda` fits) but hides every device from this process: `hidden` is
/// Host::cuda_visibility's answer. nullopt when either part is missing.
std::optional<std::string> cuda_visibility_warning(const std::vector<RepoDataRecord>& records,
                                                   const std::vector<VirtualPackage>& locked_virtuals,
                                                   const std::optional<std::string>& hidden);

/// The ErrorKind::Incompatible error for `mismatches` (non-empty): the first one as the message,
/// all of them in `detail`, and the `--ignore-host` hint.
Error host_mismatch_error(const std::vector<HostMismatch>& mismatches);

// ---------------------------------------------------------------------------------------------
// Relocation primitives (conda's rules; exposed for tests and for snapshot redeploy)

/// conda's default placeholder for `info/has_prefix` lines that name only a path.
inline constexpr std::string_view kDefaultPrefixPlaceholder = "/opt/anaconda1anaconda2anaconda3";
/// The longest shebang line conda leaves alone (bytes after `#!`, Linux's historical limit).
inline constexpr std::size_t kMaxShebangLength = 127;

/// Replaces every occurrence of `placeholder` in `data` by `prefix` (text mode). Returns the
/// number of replacements.
std::size_t replace_text_placeholder(std::string& data, std::string_view placeholder,
                                     std::string_view prefix);

/// Binary mode: each occurrence of `placeholder` up to the next NUL byte is rewritten to `prefix`
/// + the rest of that C string, padded with NUL bytes so that the file length and every offset
/// stay the same. Errors (ErrorKind::Incompatible) when `prefix` is longer than `placeholder`,
/// naming both lengths; `data` is then unchanged. `where` names the file in the error.
Result<std::size_t> replace_binary_placeholder(std::string& data, std::string_view placeholder,
                                               std::string_view prefix, const std::string& where);

/// When the first line of `data` is a shebang longer than kMaxShebangLength bytes, rewrites it to
/// `#!/usr/bin/env <basename of the interpreter>[ <arguments>]` (conda's replace_long_shebang).
/// Returns true when it rewrote the line.
bool rewrite_long_shebang(std::string& data);

/// The first lines of a Python script that must run `interpreter` when no `#!` line can name it
/// (longer than kMaxShebangLength bytes with `#!` and the newline, or holding a space or tab: the
/// kernel splits a `#!` line at blanks): pip's and distlib's `/bin/sh` exec trampoline, which
/// conda writes too (conda/common/path.py generate_shebang_for_entry_point) —
/// `#!/bin/sh`, `'''exec' '<interpreter>' "$0" "$@"`, `' '''` — so the shell execs that very
/// interpreter, to which the lines are a string literal. The interpreter is single-quoted (a `'`
/// in it written `'\''`), so no character of the prefix is special to the shell.
std::string python_exec_trampoline(std::string_view interpreter);

/// `#!<interpreter>` and a newline, or python_exec_trampoline() when that would be over
/// kMaxShebangLength bytes or the interpreter holds a space or tab (conda's rule for entry points).
std::string python_shebang(std::string_view interpreter);

/// For a relocated package file: when its first line is `#!<prefix>/.../python*[ args]` and that
/// line is over kMaxShebangLength bytes or `prefix` holds a space or tab, replaces it with
/// python_exec_trampoline() (arguments dropped) and returns true — never
/// `#!/usr/bin/env pythonX.Y`, which runs whatever python PATH finds. Other files: false.
bool trampoline_python_shebang(std::string& data, std::string_view prefix);

// ---------------------------------------------------------------------------------------------
// Installing

/// How files reach the prefix. Hardlink falls back to a copy per file when linking fails
/// (another filesystem) and for files that are rewritten.
enum class LinkMode { Hardlink, Copy };
/// Whether pre-link, post-link and pre-unlink scripts run (`--no-scripts` gives No).
enum class RunScripts : bool { No, Yes };
/// Whether a prefix holding a conda environment that envlock did not make (`conda-meta/` without
/// `conda-meta/envlock`) may be installed into (`--force` gives Allow); conda's own
/// environments are refused by default so that envlock never clobbers what it did not make.
enum class ForeignPrefix : bool { Refuse, Allow };
/// Whether a command only reports what it would do (`--dry-run` gives Yes).
enum class DryRun : bool { No, Yes };
/// Whether an install keeps the tree it replaces as a generation (envlock/generations.hpp).
enum class KeepGenerations : bool { No, Yes };

/// A package ready to link: its record and where the package cache holds it.
struct PackageToLink {
  RepoDataRecord record;
  std::filesystem::path extracted_dir;  ///< the extracted package folder (has info/)
  std::filesystem::path archive_path;   ///< the archive in the package cache (recorded only)
  std::string requested_spec;           ///< the manifest spec that asked for it, or empty
};

/// Who made a prefix: written to `conda-meta/envlock` (JSON, keys sorted) by every install.
struct PrefixOrigin {
  std::string lockfile;       ///< the lockfile's file name as given (no directories of the user)
  std::string lockfile_hash;  ///< "sha256:<hex>" of the lockfile bytes
  std::string manifest_hash;  ///< the lockfile's manifest_hash, may be empty
  std::string environment;    ///< environment name in the lockfile
  std::string platform;       ///< subdir installed, e.g. "linux-64"
  std::string command;        ///< "install" or "create" (for conda-meta/history)
  /// The manifest's file name (no directories) when the command read one (`create -f`): history
  /// then records `-f MANIFEST` as typed, not the lockfile it made.
  std::string manifest;
  /// The prefix written into the files (relocated placeholders, entry points, shebangs):
  /// install_packages() records the absolute prefix it installs into, whatever is set here. A
  /// later install into a prefix whose recorded one differs (the folder was moved) relinks every
  /// package, and a re-packed bundle uses it as the placeholder, so relocation always replaces the
  /// prefix that is really in the files. Empty in prefixes made before it was recorded.
  std::string prefix;
  /// Which generation the tree is (envlock/generations.hpp): written as `"generation"` when not
  /// 0. install_packages() sets it when it keeps generations; 0 in trees made without them.
  std::uint64_t generation = 0;
};

/// Called once, naming the prefix (or a nested environment's, `envs/<name>`), when another
/// process holds its lock and the call waits for it (the CLI says so on stderr, as conda says
/// that it waits for a lock).
using LockWait = std::function<void(const std::filesystem::path& prefix)>;

/// Progress: called once per package as it is linked (index from 0), from the calling thread.
using LinkProgress = std::function<void(std::size_t index, std::size_t total, const RepoDataRecord&)>;

struct InstallOptions {
  LinkMode link_mode = LinkMode::Hardlink;
  RunScripts scripts = RunScripts::Yes;
  PrefixOrigin origin;
  LinkProgress progress;  ///< optional
  /// Threads that link packages at once: 0, one per core (at most 8); 1, one package after the
  /// other. Several are used only when no file of one package is a path, or a folder above a
  /// path, of another; otherwise packages are linked in order (the later one clobbering).
  std::size_t link_threads = 0;
  /// A conda environment envlock did not make is refused unless Allow (check_install_prefix()).
  ForeignPrefix foreign = ForeignPrefix::Refuse;
  /// Optional; called once the new tree is built, just before it is swapped into place (a seam
  /// for tests: a running job that writes into the prefix meanwhile). What is written into the
  /// old tree after its first scan is carried into the new one after the swap (docs/install.md,
  /// "Files written while an update runs").
  std::function<void()> before_swap;
  /// Optional; called once the new tree is built in its staging folder `stage` (beside the
  /// prefix, on its filesystem), before it is synced and swapped into place, under the prefix
  /// lock: the caller adds what no package holds (`envlock snapshot deploy`: the files pip had
  /// installed over the conda packages), so the whole tree comes in with the one swap. An error
  /// deletes the stage and fails the install; the prefix stays as it was.
  std::function<Status(const std::filesystem::path& stage)> finish_stage;
  /// With keep_generations: the tree made differs from the one it replaces even when its
  /// packages are the same (finish_stage adds files no package record lists: pip's), so the
  /// replaced tree is kept as a generation and the new one gets the next number.
  bool stage_differs = false;
  /// Optional; see LockWait.
  LockWait on_lock_wait;
  /// Whether the tree an update replaces is kept as a generation (envlock/generations.hpp,
  /// docs/environments.md "Generations") instead of deleted: `envlock install`/`create` keep
  /// them; the library default keeps none.
  KeepGenerations keep_generations = KeepGenerations::No;
  /// The lockfile's bytes, kept beside the generations (`lockfiles/<hex>.lock`) when
  /// keep_generations is Yes and origin.lockfile_hash names them; empty: no copy is kept.
  std::string lockfile_text;
};

/// What an install did, by conda dist name ("name-version-build"), sorted.
struct InstallReport {
  std::vector<std::string> installed;  ///< linked from the package cache
  std::vector<std::string> removed;    ///< were in the old prefix, not in the new one
  std::vector<std::string> kept;       ///< unchanged, carried over from the old prefix
  /// Of `kept`, sorted: the same archive (dist name and hash) whose files are carried over as
  /// they are, but whose conda-meta record is rewritten to the lockfile's, as record-only fields
  /// differed (depends, constrains, license, url, channel, size, ...: what a repodata patch or a
  /// mirror changes). A change of a field that steers where files go (noarch, or python's
  /// placement of noarch: python files) links the package again instead (in `installed`).
  std::vector<std::string> rewritten;
  std::uint64_t files_linked = 0;      ///< hard links made to the package cache
  std::uint64_t files_copied = 0;      ///< copies, including every relocated file
  std::uint64_t files_relocated = 0;   ///< files whose placeholders were replaced
  std::vector<std::string> clobbered;  ///< paths two packages both wrote (the later one wins)
  /// For each path of `clobbered` (same order): "<winner dist> over <loser dist>[, <loser>…]".
  /// Only the winner's conda-meta record lists the path afterwards, so `verify` checks the copy
  /// that is there and removing a loser leaves the winner's file (conda keeps the path in both
  /// records and deletes it with either: conda/conda#672, #7775, #13255).
  std::vector<std::string> clobbered_owners;
  std::vector<std::string> messages;   ///< `.messages.txt` contents from post-link and pre-unlink scripts
  std::vector<std::string> warnings;   ///< pre-unlink scripts that failed (ignored, as conda does)
};

/// Makes `prefix` hold exactly `packages`, linked in the order given (pass install_order() from
/// lockfile.hpp: dependencies first, so post-link scripts see their dependencies), atomically
/// (see the file comment). `prefix` need not exist; an existing non-empty directory without
/// `conda-meta/` is refused (ErrorKind::Usage) so envlock never swallows an unrelated folder.
/// Errors: ErrorKind::Incompatible (binary placeholder too short, noarch: python without a
/// python record), ErrorKind::Integrity (package dir without info/ or with a path escaping the
/// prefix), ErrorKind::Io (disk full, permissions: naming the file), a failed post-link script
/// (ErrorKind::Io, with its output), a package whose `info/index.json` name/version/build differ
/// from its record (ErrorKind::Integrity, both named), the refusals of check_install_prefix().
/// A damaged `conda-meta/*.json` of the old prefix is skipped with a warning (its files stay as
/// unowned files). On any error the previous prefix is left as it was.
Result<InstallReport> install_packages(const std::filesystem::path& prefix,
                                       const std::vector<PackageToLink>& packages,
                                       const InstallOptions& options);

/// Checks, before anything is downloaded and writing nothing, that `prefix` can be installed
/// into: not empty (ErrorKind::Usage naming -p/--prefix), not the filesystem root, not a
/// symbolic link (refused as conda refuses it, the target named), not an existing file, not a
/// non-empty folder without `conda-meta/`, not inside another environment at any depth (a folder
/// above it with `conda-meta/`; the nearest one's `envs/<name>`, a base environment's nested
/// environments, is allowed), not a conda environment envlock did not make (`conda-meta/` without
/// `conda-meta/envlock`, ErrorKind::Io with the `--force` hint) unless `foreign` is Allow, and
/// under a folder this user can write (ErrorKind::Io). install_packages() makes the same checks
/// before it takes the prefix lock.
Status check_install_prefix(const std::filesystem::path& prefix, ForeignPrefix foreign = ForeignPrefix::Refuse);

/// What installing `records` into `prefix` would change (`--dry-run`), by conda dist name, each
/// list sorted; read from the prefix's `conda-meta/*.json` only (damaged records are skipped, as
/// install_packages() skips them), nothing written. A record is unchanged when the prefix holds
/// the same dist name with the same archive hash (sha256, else md5) — the rule install_packages()
/// uses to carry a package over.
struct TransactionPlan {
  std::vector<std::string> added;      ///< names the prefix does not have
  std::vector<std::string> removed;    ///< names the prefix has and `records` do not
  std::vector<std::pair<std::string, std::string>> changed;  ///< (installed, new) of one name
  std::vector<std::string> unchanged;  ///< carried over as they are
  std::vector<std::string> warnings;   ///< damaged records skipped
};
TransactionPlan plan_transaction(const std::filesystem::path& prefix, const std::vector<RepoDataRecord>& records);

/// One record an install rewrites without linking its package again (InstallPreview::rewritten):
/// its dist name and the conda-meta keys whose values differ from the lockfile's.
struct RecordRewrite {
  std::string dist;                 ///< "name-version-build"
  std::vector<std::string> fields;  ///< conda-meta keys that differ ("depends", "url", ...), in a fixed order
};

/// What install_packages() would say about the paths of `prefix` that no record owns, were it
/// given `packages`: the same warnings (a package replacing such a path; such a path that is a
/// package's folder now; the prefix moved since it was installed) or the same refusal (files no
/// package owns below a folder a package makes a file or a symbolic link), decided by the same
/// code over the packages' plans instead of a built tree; nothing is written (`--dry-run`). A
/// package that would be linked (not kept as it is in the prefix) needs its extracted folder; one
/// whose `extracted_dir` is empty (not in the package cache) leaves every path uncompared; it is
/// named in `unchecked` when the prefix holds a file or link no record owns (one that could have
/// met a package's path). A new or empty prefix has no such paths. Errors: the prefix refusals of
/// check_install_prefix()'s first checks, a package's unsafe path field (plan_package's
/// ErrorKind::Integrity, as install_packages()), a mount point inside the prefix, and the refusal
/// above (ErrorKind::Io).
struct InstallPreview {
  std::vector<std::string> warnings;   ///< as install_packages() puts them in InstallReport::warnings
  std::vector<std::string> unchecked;  ///< dist names of packages to link that have no extracted_dir, sorted
  /// Dist names, sorted, that plan_transaction() calls unchanged but the install links again from
  /// the package cache (relink_clobber_losers' rule and kept_record's): a package that lost a
  /// path to a clobber whose winner goes now (its copy is put back; what the cache cannot decide
  /// is in `undecided`), one whose files are not all in the prefix, one whose files go elsewhere now
  /// (its `noarch` changed, or it is noarch: python and python's X.Y or python_site_packages_path
  /// did), every package of a prefix that was moved. A dry run lists them as `relinked`, not
  /// `unchanged`.
  std::vector<std::string> relinked;
  /// Of what plan_transaction() calls unchanged and the install keeps (its files carried over),
  /// those whose record the install rewrites (InstallReport::rewritten), with the fields that
  /// differ by their conda-meta key (`depends`, `url`, ...). A dry run lists them as `record`.
  std::vector<RecordRewrite> rewritten;
  /// Dist names, sorted, of packages plan_transaction() calls unchanged whose fate the package
  /// cache as it is cannot decide, neither in `relinked` nor kept: a package that goes owned a
  /// path no other package of the new tree is known to have, and whether this one lost that path
  /// to a clobber (and is linked again to put its copy back) needs its paths.json, which is not in
  /// the cache; or it lost such a path while a package to link, not in the cache, may have the
  /// path (or after such an undecided one). The install, which fetches every package first,
  /// decides. A dry run lists them as `undecided` and says why.
  std::vector<std::string> undecided;
};
Result<InstallPreview> preview_install(const std::filesystem::path& prefix, const std::vector<PackageToLink>& packages);

/// Whether `prefix` holds an install that was interrupted before its post-link scripts all ran
/// (`conda-meta/envlock-pending`): nullopt when not; else where the previous environment waits
/// (a `.<name>.envlock-stage-*` sibling), or an empty path when there was none. The next
/// install or remove of the prefix rolls it back; read-only commands report it. A prefix that is
/// a symbolic link is followed (read-only commands accept one).
/// Errors: an empty path (ErrorKind::Usage), an unreadable marker, or an install into the prefix
/// running right now in another process (its lock is held; ErrorKind::Io).
Result<std::optional<std::filesystem::path>> interrupted_install(const std::filesystem::path& prefix);

/// The signal (SIGINT, SIGTERM or SIGHUP) that made the latest install_packages() or
/// remove_environment() call of this process stop, or 0. install_packages() blocks those signals
/// from the swap until the transaction is committed or rolled back; one that arrives meanwhile
/// restores the previous environment and the call returns an error. While a link script
/// (pre-link, post-link, pre-unlink) runs, in a process group of its own with the default
/// dispositions, a SIGINT or SIGTERM is passed on to that group and waited for, and the install
/// (or removal) then stops the same way, changing nothing. The command line then exits with
/// 128 + the signal number (130, 143, 129), as conda and mamba do.
int install_interrupted_by();

/// Reads `conda-meta/envlock`; nullopt when the prefix has none (not made by envlock).
Result<std::optional<PrefixOrigin>> read_prefix_origin(const std::filesystem::path& prefix);

/// What remove_environment() did.
struct RemoveReport {
  std::vector<std::string> removed;   ///< dist names of the records the prefix held, sorted
  std::vector<std::string> messages;  ///< `.messages.txt` contents left by pre-unlink scripts
  std::vector<std::string> warnings;  ///< pre-unlink scripts that failed (ignored, as conda does)
};

/// Deletes an environment that envlock made (it has `conda-meta/envlock`), atomically: the
/// pre-unlink scripts of its packages run first (`bin/.<name>-pre-unlink.sh`, PREFIX = the
/// prefix; skipped with RunScripts::No; a failure is a warning, as in conda), then the prefix is
/// renamed aside and deleted, and its lock file with it. Anything else is refused
/// (ErrorKind::Usage) before anything is written: an empty path, `/`, a symbolic link (its
/// target named), a folder without `conda-meta/envlock`. Damaged `conda-meta/*.json` records
/// do not stop the removal (a warning each; their pre-unlink scripts do not run).
/// With DryRun::Yes every refusal is made and the report filled, but no script runs and nothing
/// is written or deleted.
/// `on_lock_wait`, when set, is called if another process holds the prefix's lock (see LockWait).
Result<RemoveReport> remove_environment(const std::filesystem::path& prefix,
                                        RunScripts scripts = RunScripts::Yes, DryRun dry_run = DryRun::No,
                                        const LockWait& on_lock_wait = {});

// ---------------------------------------------------------------------------------------------
// Verifying

/// One file that differs from its conda-meta record, or a package cache file that differs from
/// its package's info/paths.json (Kind::Cache).
struct FileDrift {
  enum class Kind {
    Modified,
    Missing,
    Extra,
    Cache,  ///< the package cache's copy (in the record's extracted_package_dir) no longer
            ///< matches info/paths.json: missing, other size or other sha256. The next install
            ///< extracts that package again; a file edited through a hard link shows here too
  };
  Kind kind = Kind::Modified;
  std::string path;     ///< relative to the prefix, '/'-separated
  std::string package;  ///< owning dist name; empty for Extra
  std::string reason;   ///< e.g. "sha256 e3b0... != recorded 5f2a...", "size 10 != recorded 12"
};

struct VerifyReport {
  std::size_t packages = 0;        ///< records checked
  std::size_t files_checked = 0;   ///< recorded paths checked
  std::size_t pip_files = 0;       ///< of those, files a pip-installed distribution's RECORD lists
  std::vector<FileDrift> drift;    ///< sorted by path
  [[nodiscard]] bool clean() const { return drift.empty(); }
};

/// Whether a folder met while walking a prefix's files holds files that are not the prefix's
/// own, so the walk does not go into it: `conda-meta/` (the records), a top-level `envs/` (a base
/// prefix's nested environments) and `pkgs/` (its package cache), and any folder that holds its
/// own `conda-meta/` folder (a nested environment, at any depth). `rel` is the folder's
/// prefix-relative path ('/'-separated); `has_conda_meta` whether it holds a `conda-meta` folder
/// (a link to a folder counts). The one rule verify_prefix() and `envlock snapshot capture`
/// (its unowned files) share.
bool prefix_foreign_folder(std::string_view rel, bool has_conda_meta);

/// Checks every path of every `conda-meta/*.json` record: regular files by size and sha256 as
/// installed, symlinks by being symlinks, directories by existing. Files under the prefix that no
/// record owns are Extra, except `__pycache__/` folders and `*.pyc` (Python writes those at run
/// time), `.messages.txt` and what is in the folders prefix_foreign_folder() names. Errors: the
/// prefix does not exist or has no conda-meta (ErrorKind::Io, naming it), a record does not
/// parse (ErrorKind::Parse).
/// Files a `*.dist-info/RECORD` lists (PEP 376/627; in `lib/python*/site-packages` or
/// `Lib/site-packages`) belong to that pip-installed distribution and are not Extra: each is
/// checked against RECORD's sha256 (Modified when it differs, Missing when gone; package
/// "pip:<name>-<version>"). A dist-info whose RECORD a conda record lists is conda's.
/// The package cache entry each record was linked from (`extracted_package_dir`, when it still
/// exists) is checked against its info/paths.json: every hardlink-type file by size and sha256
/// (a file that is the same inode as a prefix file found intact is not read twice); each that
/// differs is Kind::Cache, `path` package-relative.
Result<VerifyReport> verify_prefix(const std::filesystem::path& prefix);

/// Refuses (ErrorKind::Io, naming the prefix) a `prefix` whose conda-meta/ holds no `*.json`
/// record, no `history` and no `envlock`: not an environment (`mkdir -p X/conda-meta`). conda
/// marks an environment by conda-meta/history (`conda list -p X`: "Not a conda environment").
/// verify_prefix() and `envlock list -p` make this check.
Status check_not_an_empty_conda_meta(const std::filesystem::path& prefix);

}  // namespace envlock
