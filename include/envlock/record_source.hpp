#pragma once
// envlock/record_source.hpp — a source of package records by name: what the solver reads its
// records through (envlock/solver.hpp), as rattler's SolverTask takes any source of records
// (rattler_solve: `available_packages: impl IntoIterator<Item = RepoDataIter>`) and resolvo asks
// its DependencyProvider for the candidates of one name at a time.
//
// The channel module's RepodataIndex (envlock/repodata_index.hpp) implements it over a
// repodata.json or CEP-16 shards, parsing a name's records when they are first asked for; tests
// and other callers may implement it over records they hold. Implementations must be safe to call
// from several threads at once for distinct names.

#include <string_view>
#include <vector>

#include "envlock/package_record.hpp"

namespace envlock {

/// The records of one channel subdir, by package name.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  /// Every package name the source holds, sorted ascending (bytewise), without duplicates.
  [[nodiscard]] virtual const std::vector<std::string_view>& names() const = 0;
  /// The records of `name` (lower-case), in the source's order; empty for an unknown name. The
  /// vector and its records stay valid and unchanged for the source's lifetime (a Solution points
  /// into them).
  [[nodiscard]] virtual const std::vector<RepoDataRecord>& records(std::string_view name) const = 0;
};

}  // namespace envlock
