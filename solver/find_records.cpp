// envlock::find_records — MatchSpec queries over loaded repodata (`envlock search`), newest first.
#include <algorithm>
#include <set>
#include <tuple>

#include "envlock/solver.hpp"

namespace envlock {

std::vector<const RepoDataRecord*> find_records(const std::vector<SolverRepo>& repos, const MatchSpec& spec) {
  std::vector<const RepoDataRecord*> out;
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  auto consider = [&](const RepoDataRecord& r) {
    if (spec.matches(r) && seen.emplace(r.channel, r.subdir, r.file_name).second) out.push_back(&r);
  };
  const std::string exact = spec.exact_name();
  for (const auto& repo : repos) {
    if (repo.index != nullptr) {  // lazy: parse only the names the spec's name matches
      if (!exact.empty()) {
        for (const auto& r : repo.index->records(exact)) consider(r);
        continue;
      }
      for (auto name : repo.index->names())
        if (spec.name.matches(name))
          for (const auto& r : repo.index->records(name)) consider(r);
      continue;
    }
    if (repo.records == nullptr) continue;
    for (const auto& r : *repo.records) consider(r);
  }
  std::sort(out.begin(), out.end(), [](const RepoDataRecord* a, const RepoDataRecord* b) {
    if (a->name != b->name) return a->name < b->name;
    if (a->version != b->version) return a->version > b->version;
    if (a->build_number != b->build_number) return a->build_number > b->build_number;
    auto ta = a->timestamp.value_or(0), tb = b->timestamp.value_or(0);
    if (ta != tb) return ta > tb;
    return std::tie(a->channel, a->subdir, a->file_name) < std::tie(b->channel, b->subdir, b->file_name);
  });
  return out;
}

}  // namespace envlock
