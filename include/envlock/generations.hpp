#pragma once
// envlock/generations.hpp — the earlier states of an environment, kept whole, and the one-step
// rollback to one of them (issue 21 point 4; docs/environments.md "Generations").
//
// Every install through the CLI that changes the packages of a prefix keeps the tree it replaces
// as a *generation* instead of deleting it (InstallOptions::keep_generations). As in nix's
// profiles (generations numbered 1, 2, 3, ..., one current), and unlike micromamba's revisions
// or conda's `--revision` (which re-solve and download, and fail once a package left its
// channel), a generation is the file tree itself: rolling back is one rename, no network, no
// solve. Where they live, beside the prefix (so on its filesystem):
//
//   <parent>/.<name>.envlock-generations/
//     <N>/                  the tree of generation N (not the current one): files hard-linked
//                           into the package cache (or to the trees before it), so keeping it
//                           costs its folders, its relocated copies and its conda-meta/
//     <N>.pinned            an empty file: generation N is pinned (gc never removes it)
//     lockfiles/<hex>.lock  the lockfile each generation was installed from, by its sha256
//
// Each tree says which generation it is: `"generation": N` in its conda-meta/envlock; its
// time and command are the last block of its conda-meta/history (what conda writes there). The
// current generation is the tree at the prefix. A folder `<N>/` whose tree says another number
// (a rollback killed between its two steps) is renamed to its own number by the next command
// that takes the prefix lock.
//
// rollback_generation() swaps the chosen tree and the prefix's with renameat2(RENAME_EXCHANGE):
// one step, so a kill at any moment leaves one whole generation at the prefix; the prefix path
// stays (the paths written into files stay valid); a process that has a file of the tree it
// leaves open (or its working folder in it) keeps it, as the tree only moves.
//
// A filesystem without RENAME_EXCHANGE (renameat2 fails with EINVAL, ENOSYS or ENOTSUP: some
// overlay, FUSE and network filesystems) is rolled back in two renames: the current tree into
// its generation folder, then the chosen tree to the prefix, after a note `<gens>/rolling-back`
// (`{"from", "to", "tree"}`) written and flushed first. A kill between the two renames leaves no
// tree at the prefix, both generations whole in the generations folder, and the note: the next
// command that takes the prefix lock (rollback, gc, history --pin, install, create, run with a
// manifest) finishes the rollback first, moving the chosen tree in, and says so. conda and mamba
// never swap: `conda install --revision N` unlinks and links packages in the prefix itself, so
// an interruption there leaves a mix of two states; here only the moment between two renames is
// exposed, and it is repaired.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "envlock/install.hpp"
#include "envlock/result.hpp"

namespace envlock {

/// The highest generation number (9 digits): `--to`, `--pin`, `--unpin` and `--keep` accept no
/// more.
inline constexpr std::uint64_t kMaxGenerationNumber = 999'999'999;

/// `<parent>/.<name>.envlock-generations` of `prefix` (absolute, normalised); nothing is read.
std::filesystem::path generations_folder(const std::filesystem::path& prefix);

/// One generation of a prefix.
struct Generation {
  std::uint64_t number = 0;
  /// Its tree is the prefix; or, while the prefix holds an interrupted install (`interrupted`
  /// below), it is the tree that install replaced, which the next command taking the lock puts
  /// back (`tree` names where it waits).
  bool current = false;
  /// The tree at the prefix is an install that did not finish (conda-meta/envlock-pending: killed,
  /// or stopped while its post-link scripts ran): never committed, not current; the next command
  /// that takes the prefix lock rolls it back and deletes it.
  bool interrupted = false;
  bool pinned = false;       ///< `<N>.pinned` exists: gc never removes it
  std::string time;          ///< "YYYY-MM-DD HH:MM:SS" (UTC) of the install that made the tree
  std::string command;       ///< "envlock install -l envlock.lock -e default", from conda-meta/history
  std::size_t packages = 0;  ///< conda-meta/*.json records
  std::string lockfile;      ///< conda-meta/envlock: the lockfile's file name
  std::string lockfile_hash; ///< "sha256:<hex>"
  std::string manifest_hash;
  std::string environment;
  std::string platform;
  std::filesystem::path tree;           ///< where its tree is (the prefix, for the current one)
  std::filesystem::path lockfile_copy;  ///< the kept copy of its lockfile; empty when there is none
};

/// `on_lock_wait` of set_generation_pinned(), rollback_generation() and gc_generations(): called
/// once, naming the prefix, when another process holds its lock and the call waits (the CLI says
/// so on stderr, as install does: docs/install.md).

/// Every generation of `prefix`, by number; read only (no lock is taken). The current tree is
/// listed even when it has no number yet (made before generations, or by a library install that
/// keeps none): number 0. A folder in the generations folder that is not a tree envlock keeps
/// (not a folder named by digits, no conda-meta/envlock, another owner) is left out. While the
/// prefix holds an interrupted install, its tree is listed `interrupted` and the tree it replaced
/// (waiting beside the prefix) `current`.
/// Errors: an empty prefix (ErrorKind::Usage), a prefix that is no environment and has no
/// generations (ErrorKind::Io).
Result<std::vector<Generation>> list_generations(const std::filesystem::path& prefix);

/// Pins (`pinned` true) or unpins generation `number` of `prefix`, under the prefix lock. A
/// pinned generation is never removed by gc_generations(). Taking the lock finishes what a killed
/// command left (an interrupted install is rolled back first, as rollback_generation() does):
/// the returned warnings say what was done, for the caller to show.
/// Errors: a prefix that is no environment and has no generations (ErrorKind::Io, before any lock
/// file is made beside it), no such generation (ErrorKind::Io, naming the ones there are).
Result<std::vector<std::string>> set_generation_pinned(const std::filesystem::path& prefix, std::uint64_t number,
                                                       bool pinned, const LockWait& on_lock_wait = {});

/// What rollback_generation() did.
struct RollbackReport {
  std::uint64_t from = 0;  ///< the generation that was current (kept as a generation)
  std::uint64_t to = 0;    ///< the one now current (== from: it was current already; nothing moved)
  /// Without `to`, the prefix held an interrupted install (Generation::interrupted): it was
  /// rolled back to the generation before it, and the rollback stopped there: `from` is the
  /// interrupted install's number (not kept), `to` the generation current again.
  bool interrupted_install = false;
  /// With `interrupted_install`: false when the interrupted install was the prefix's first (no
  /// tree before it), so rolling it back left no environment (`to` is 0, `packages` 0).
  bool environment_left = true;
  std::size_t packages = 0;
  std::vector<std::string> warnings;  ///< an interrupted install rolled back first, leftovers
};

/// Makes generation `to` (default: the newest one older than the current) current, in one
/// atomic step, under the prefix lock (after the rollback of an interrupted install, as every
/// install does first; without `to`, that rollback is the one step: the generation it restores,
/// the one `envlock history` marks current, stays current). No network, no solve, no script runs. The tree that was current becomes
/// generation `from` in the generations folder (a tree made before generations gets the next
/// number first). On a filesystem without RENAME_EXCHANGE it takes two renames (see the file
/// comment). Refused (ErrorKind::Io, nothing changed): no such generation; a tree recorded for
/// another prefix path (the folder was moved: its files name the old path); a tree not owned by
/// this user; a prefix whose envs/ holds environments (they would go back with the base).
Result<RollbackReport> rollback_generation(const std::filesystem::path& prefix, std::optional<std::uint64_t> to,
                                           const LockWait& on_lock_wait = {});

/// When the generations folder of `prefix` is there but is not a folder of this user's (a link, a
/// file, another owner's), the reason, as an install gives it when it cannot keep a generation
/// there; nullopt otherwise. Read only. history warns with it; rollback and gc refuse with it
/// (ErrorKind::Io), as nothing in such a folder is listed, followed or deleted.
std::optional<Error> unusable_generations_folder(const std::filesystem::path& prefix);

/// The generation a rollback in two renames was moving to when it was killed between them: the
/// prefix holds no tree and `<gens>/rolling-back` names it (the next command that takes the
/// prefix lock finishes it). nullopt otherwise. Read only.
std::optional<std::uint64_t> interrupted_rollback(const std::filesystem::path& prefix);

/// A test seam of rollback_generation(): `no_exchange` makes it roll back as on a filesystem
/// without RENAME_EXCHANGE (two renames); `between_renames`, when set, is called between the two
/// (a test kills the process there). Tests only: process-wide, not thread-safe.
struct RollbackSeam {
  bool no_exchange = false;
  std::function<void()> between_renames;
};
void set_rollback_seam_for_tests(RollbackSeam seam);

/// What gc_generations() did (or, with DryRun::Yes, would do).
struct GenerationGcReport {
  std::vector<std::uint64_t> removed;  ///< generations deleted, by number
  /// Their trees, as listed: deleted, or with DryRun::Yes still there (`envlock gc --dry-run`
  /// counts their links as gone, so its package cache line is the real run's).
  std::vector<std::filesystem::path> removed_trees;
  std::vector<Generation> kept;        ///< the generations left, current included, by number
  std::size_t lockfiles_removed = 0;   ///< kept lockfile copies no generation left names
  /// Generations that were to go but could not be removed (a mount point inside, a failed
  /// rename or deletion), by number; each is named in `warnings`. A tree that holds a mount point
  /// is left listed, untouched (what is mounted is never deleted). `envlock gc` says "could not
  /// remove generation N" and exits 1 (docs/environments.md).
  std::vector<std::uint64_t> not_removed;
  std::vector<std::filesystem::path> not_removed_trees;  ///< their trees, as listed
  std::vector<std::string> warnings;   ///< a tree that could not all be deleted
};

/// Removes the old generations of `prefix`: keeps the current one, every pinned one and the
/// `keep` newest of the others; deletes the rest (each renamed out of the listing first, so a
/// kill leaves it either listed whole or gone) and the lockfile copies no kept generation names.
/// Under the prefix lock. Errors: a prefix that is no environment and has no generations
/// (ErrorKind::Io, as list_generations(); no lock file is made beside it). The package cache is
/// not touched (the CLI's `envlock gc` does that after, see gc_package_cache() in
/// envlock/package_cache.hpp).
Result<GenerationGcReport> gc_generations(const std::filesystem::path& prefix, std::size_t keep,
                                          DryRun dry_run = DryRun::No, const LockWait& on_lock_wait = {});

/// The dist names ("name-version-build") of the packages of `tree` (its conda-meta/*.json file
/// names), sorted; empty when it has none.
std::vector<std::string> generation_dists(const std::filesystem::path& tree);

}  // namespace envlock
