#pragma once
// Private to solver/: the state of one solve shared by pool building (solve.cpp) and the
// problem explanation (explain.cpp).

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "envlock/solver.hpp"
#include "libsolv.hpp"

namespace envlock::solv {

/// Where a solvable of the pool came from.
struct Origin {
  enum class Kind { None, Repo, Pin, Virtual };
  Kind kind = Kind::None;
  std::size_t repo = 0;   ///< SolveTask::repos index (Kind::Repo)
  std::size_t index = 0;  ///< record index in that repo (its records, or its index's records of
                          ///< the name), SolveTask::pinned index, or virtual index
  const RepoDataRecord* record = nullptr;  ///< the caller's record (Kind::Repo)
};

/// What a job of the job queue stands for.
struct JobOrigin {
  enum class Kind { Spec, Pin, Favor, Virtual };
  Kind kind = Kind::Spec;
  std::size_t index = 0;  ///< SolveTask::specs, SolveTask::pinned or virtual_packages index
};

struct SolveContext {
  const SolveTask& task;
  OwnedPool pool;
  std::vector<Origin> origins;                   ///< by solvable id
  std::vector<RepoDataRecord> virtual_records;   ///< the virtual packages as records
  std::map<std::string, std::vector<Id>> by_name;  ///< every solvable per name
  std::vector<bool> considered;                  ///< by solvable id: offered to libsolv
  std::vector<Id> pin_solvables;                 ///< by SolveTask::pinned index
  std::vector<Id> virtual_solvables;             ///< by SolveTask::virtual_packages index
  std::vector<JobOrigin> job_origins;            ///< by job number (queue offset / 2)
  std::vector<std::vector<Id>> spec_candidates;  ///< by SolveTask::specs index

  explicit SolveContext(const SolveTask& t) : task(t) {}

  /// The caller's record behind a solvable (nullptr for libsolv's own solvables).
  [[nodiscard]] const RepoDataRecord* record(Id p) const;
  /// "name version build", from the caller's record.
  [[nodiscard]] std::string describe(Id p) const;
  /// Every solvable of the pool with this name (considered or not), for "versions that exist".
  [[nodiscard]] std::vector<Id> all_named(const std::string& name) const;
  /// "__cuda 11.8 (declared in the manifest)" for a virtual package solvable; "" for others.
  [[nodiscard]] std::string virtual_origin(Id p) const;
};

/// Builds the explanation of a failed solve from libsolv's problem rules.
Explanation explain_problems(SolveContext& ctx, Solver* solver);

/// Renders "a, b, c (n builds)" for a set of solvables of one name: distinct versions, newest
/// first, at most `max_versions` listed.
std::string summarize_versions(const SolveContext& ctx, const std::vector<Id>& solvables,
                               std::size_t max_versions = 6);

}  // namespace envlock::solv
