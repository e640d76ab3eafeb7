#pragma once
// The seam between the install transaction (transaction.cpp) and the generations
// (generations.cpp, envlock/generations.hpp): private to src/install.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "envlock/install.hpp"
#include "envlock/result.hpp"

namespace envlock::detail {

// ---- provided by transaction.cpp ----------------------------------------------------------

/// What with_prefix_locked() found under the lock before `body` ran.
struct FoundUnderLock {
  /// The prefix held an install left unfinished (conda-meta/envlock-pending: killed, or stopped
  /// while its post-link scripts ran), which was rolled back to the tree before it.
  bool rolled_back_install = false;
  std::uint64_t install_generation = 0;  ///< the number that install's tree had (0: none)
};

/// Runs `body` with the prefix checked (not empty, not `/`, not a link; absolute and normalised:
/// the path `body` gets) and its lock held, with the locks of the environments nested in its
/// envs/, after the leftovers of a killed install are dealt with (an interrupted install rolled
/// back, staging trees deleted), as every install does first; warnings of that go to `warnings`,
/// and what was rolled back to `found`, when given. `on_wait` is called when another process holds
/// the lock (LockWait).
Status with_prefix_locked(const std::filesystem::path& prefix, std::vector<std::string>& warnings,
                          const std::function<Status(const std::filesystem::path& prefix)>& body,
                          FoundUnderLock* found = nullptr, const LockWait& on_wait = {});

// ---- provided by generations.cpp ----------------------------------------------------------

/// What an install does about generations, decided before it builds its tree.
struct GenerationPlan {
  std::uint64_t number = 0;    ///< the generation the new tree is (written into its conda-meta/envlock)
  std::uint64_t previous = 0;  ///< the number of the tree it replaces
  bool keep_previous = false;  ///< the packages change: the tree replaced is kept as `previous`
};

/// The plan for an install into `prefix` (its lock held) that makes `packages` of a prefix
/// holding `old_records` (`has_old`: the prefix held an environment). Packages unchanged (same
/// dist names and archive hashes): the same number, nothing kept. Otherwise the next number
/// (above every tree there is), and the current tree is kept; one made before generations is
/// given a number first (written into its conda-meta/envlock). `stage_differs` (the caller adds
/// files no record lists, InstallOptions::stage_differs) counts as a change of packages. Folders
/// a killed rollback left misnamed are put right first.
Result<GenerationPlan> plan_generation(const std::filesystem::path& prefix, bool has_old,
                                       const std::vector<PrefixRecord>& old_records,
                                       const std::vector<PackageToLink>& packages, bool stage_differs = false);

/// Moves `previous_tree` (the tree an update replaced, committed) into the generations folder as
/// generation `plan.previous`; returns where it is now, or an empty path when it could not be
/// kept (a warning says why; the caller deletes it as before).
std::filesystem::path keep_generation(const std::filesystem::path& prefix, const std::filesystem::path& previous_tree,
                                      const GenerationPlan& plan, std::vector<std::string>& warnings);

/// Notes, durably and before the swap, where the tree an update replaces will wait once swapped
/// (`trees`: the stage's name, or the two-rename fallback's), so that a kill between the swap (or
/// the commit) and keep_generation() does not lose it: `<gens>/keeping`, removed by
/// keep_generation(). A failure is a warning (only that generation is at stake).
void note_keeping(const std::filesystem::path& prefix, const std::vector<std::filesystem::path>& trees,
                  const GenerationPlan& plan, std::vector<std::string>& warnings);

/// Before recover() deletes the trees a killed run left (the prefix lock held): a rollback in two
/// renames killed between them (`<gens>/rolling-back`, no tree at the prefix) is finished, the
/// chosen generation moved to the prefix (a warning in `warnings`, when given, says so); then,
/// when `<gens>/keeping` names a tree that an install swapped out and committed (the prefix holds
/// the new generation, with no pending marker), it is moved into the generations folder as
/// keep_generation() would have; each note goes either way.
void adopt_kept_tree(const std::filesystem::path& prefix, std::vector<std::string>* warnings = nullptr);

/// Keeps `text` (the lockfile whose hash is `lockfile_hash`, "sha256:<hex>") as
/// `lockfiles/<hex>.lock` in the generations folder, when it is not there yet and the hash is
/// the text's; a failure is a warning.
void keep_lockfile(const std::filesystem::path& prefix, const std::string& lockfile_hash, const std::string& text,
                   std::vector<std::string>& warnings);

/// Deletes the generations folder of a removed environment; a failure is a warning.
void remove_generations(const std::filesystem::path& prefix, std::vector<std::string>& warnings);

}  // namespace envlock::detail
