// envlock::solve — builds a libsolv pool (conda disttype) from the records of the names the
// request can reach (asked of each repo's RecordSource; a lazy RepodataIndex parses them on first
// use), adds the jobs of a SolveTask, solves, and maps the answer back to the caller's records.
#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <string_view>

#include "envlock/solver.hpp"
#include "envlock/text.hpp"
#include "solve_context.hpp"

namespace envlock {

namespace solv {

const RepoDataRecord* SolveContext::record(Id p) const {
  if (p <= 0 || static_cast<std::size_t>(p) >= origins.size()) return nullptr;
  const Origin& o = origins[static_cast<std::size_t>(p)];
  switch (o.kind) {
    case Origin::Kind::Repo: return o.record;
    case Origin::Kind::Pin: return &task.pinned[o.index].record;
    case Origin::Kind::Virtual: return &virtual_records[o.index];
    case Origin::Kind::None: break;
  }
  return nullptr;
}

std::string SolveContext::describe(Id p) const {
  const RepoDataRecord* r = record(p);
  if (r == nullptr) return pool.str(pool.get()->solvables[p].name);
  std::string out = r->name + " " + r->version.to_string();
  if (!r->build.empty()) out += " " + r->build;
  return out;
}

std::vector<Id> SolveContext::all_named(const std::string& name) const {
  auto it = by_name.find(name);
  return it == by_name.end() ? std::vector<Id>{} : it->second;
}

std::string SolveContext::virtual_origin(Id p) const {
  if (p <= 0 || static_cast<std::size_t>(p) >= origins.size()) return "";
  const Origin& o = origins[static_cast<std::size_t>(p)];
  if (o.kind != Origin::Kind::Virtual) return "";
  const RepoDataRecord& r = virtual_records[o.index];
  auto it = task.virtual_origins.find(r.name);
  return it == task.virtual_origins.end() ? "" : it->second;
}

}  // namespace solv

namespace {

using namespace envlock::solv;

/// The name a dependency string is about: its first token, lower-cased.
std::string dep_name(std::string_view dep) {
  std::size_t start = 0;
  if (auto colons = dep.rfind("::"); colons != std::string_view::npos) start = colons + 2;
  std::size_t end = start;
  while (end < dep.size() && dep[end] != ' ' && dep[end] != '=' && dep[end] != '<' && dep[end] != '>' &&
         dep[end] != '!' && dep[end] != '~' && dep[end] != '[')
    ++end;
  return ascii_lower(std::string(dep.substr(start, end - start)));
}

/// `spec` as libsolv's conda parser reads it: a bracket spec that only sets version and build
/// (`dep[version='>=100']`, as repodata `depends` may hold: conda and rattler read them) in the
/// positional form `dep >=100`; any other spec as it is.
std::string positional_form(const std::string& spec) {
  if (spec.find('[') == std::string::npos) return spec;
  auto ms = MatchSpec::parse(spec);
  if (!ms || ms->exact_name().empty() || ms->channel || ms->subdir || ms->build_number || ms->md5 || ms->sha256 ||
      ms->license || ms->license_family || ms->file_name || ms->url || !ms->track_features.empty() ||
      !ms->features.empty())
    return spec;
  std::string out = ms->exact_name();
  if (ms->version || ms->build) out += " " + (ms->version ? ms->version->to_string() : std::string("*"));
  if (ms->build) out += " " + ms->build->to_string();
  return out;
}

/// Dependencies in bracket form with keys libsolv's conda parser cannot express (`build_number`,
/// `md5`, `sha256`, `license`, `fn`, `url`, `track_features`, ...: conda and rattler read them
/// in `depends`): each becomes a name of its own (the spec's text), which every record the spec
/// matches — by envlock's MatchSpec — provides (provide_extended_specs()).
using ExtendedSpecs = std::map<std::string, MatchSpec>;

/// A libsolv dependency for a conda MatchSpec string; a spec libsolv cannot read becomes a
/// dependency on a name no package has, so the record needing it simply cannot be chosen.
/// `extended` (depends only; null for constrains): where bracket specs libsolv cannot express go.
Id conda_dep(Pool* pool, const std::string& spec, ExtendedSpecs* extended = nullptr) {
  // libsolv's version matcher recurses once per '(' (conda.c): a spec nested past envlock's own
  // cap is unreadable to both, before it can exhaust the stack.
  if (VersionSpec::nesting(spec) > VersionSpec::kMaxNesting)
    return pool_str2id(pool, ("<unreadable spec: nested too deep: " + spec.substr(0, 64) + "…>").c_str(), 1);
  const std::string positional = positional_form(spec);
  if (extended != nullptr && positional.find('[') != std::string::npos) {
    if (auto ms = MatchSpec::parse(spec); ms && !ms->exact_name().empty()) {
      extended->emplace(spec, *ms);
      return pool_str2id(pool, spec.c_str(), 1);
    }
  }
  Id id = pool_conda_matchspec(pool, positional.c_str());
  if (id == 0) id = pool_str2id(pool, ("<unreadable spec: " + spec + ">").c_str(), 1);
  return id;
}

/// The libsolv name standing for "a record that tracks feature `f`": conda's legacy spelling `f@`.
Id feature_id(Pool* pool, const std::string& f) { return pool_str2id(pool, (f + "@").c_str(), 1); }

Id add_solvable(Pool* pool, Repo* repo, Repodata* data, const PackageRecord& r, ExtendedSpecs& extended) {
  Id p = repo_add_solvable(repo);
  Solvable* s = pool_id2solvable(pool, p);
  s->name = pool_str2id(pool, r.name.c_str(), 1);
  s->evr = pool_str2id(pool, r.version.to_string().c_str(), 1);
  repodata_add_poolstr_array(data, p, SOLVABLE_BUILDFLAVOR, r.build.c_str());
  repodata_set_str(data, p, SOLVABLE_BUILDVERSION, std::to_string(r.build_number).c_str());
  for (const auto& dep : r.depends)
    s->requires_ = repo_addid_dep(repo, s->requires_, conda_dep(pool, dep, &extended), 0);
  for (const auto& c : r.constrains) {
    // A bracket constraint libsolv cannot read (`b[license=MIT]`: if b is installed it must
    // match, as conda's and rattler's) is a conflict with the name "!" + spec, which every b
    // record the spec does not match provides (the loop over `extended` in solve()).
    if (positional_form(c).find('[') != std::string::npos)
      if (auto ms = MatchSpec::parse(c); ms && !ms->exact_name().empty()) {
        extended.emplace("!" + c, *ms);
        s->conflicts = repo_addid_dep(repo, s->conflicts, pool_str2id(pool, ("!" + c).c_str(), 1), 0);
        continue;
      }
    repodata_add_idarray(data, p, SOLVABLE_CONSTRAINS, conda_dep(pool, c));
  }
  for (const auto& tf : r.track_features) {
    if (tf.empty()) continue;
    repodata_add_idarray(data, p, SOLVABLE_TRACK_FEATURES, pool_str2id(pool, tf.c_str(), 1));
    s->provides = repo_addid_dep(repo, s->provides, feature_id(pool, tf), 0);
  }
  // conda (resolve.py ms_depends): each legacy `features` entry needs a record tracking it.
  for (const auto& f : split_features(r.features))
    s->requires_ = repo_addid_dep(repo, s->requires_, feature_id(pool, f), 0);
  // Milliseconds, as the repodata holds them: conda and rattler compare them at that precision.
  if (r.timestamp) repodata_set_num(data, p, SOLVABLE_BUILDTIME, *r.timestamp);
  s->provides = repo_addid_dep(repo, s->provides, pool_rel2id(pool, s->name, s->evr, REL_EQ, 1), 0);
  return p;
}

/// The order solvables are added in: independent of the order records were read in, so that
/// shuffled repodata gives the same pool and the same answer.
void canonical_order(std::vector<std::pair<const RepoDataRecord*, std::size_t>>& records) {
  std::sort(records.begin(), records.end(), [](const auto& a, const auto& b) {
    const auto& x = *a.first;
    const auto& y = *b.first;
    return std::tie(x.name, x.version.to_string(), x.build_number, x.build, x.file_name, x.url) <
           std::tie(y.name, y.version.to_string(), y.build_number, y.build, y.file_name, y.url);
  });
}

/// The records of each repo by name: a lazy repo asks its RecordSource (a RepodataIndex parses
/// the name on first use), an eager one is grouped once.
class RepoNames {
 public:
  explicit RepoNames(const SolverRepo& repo) : repo_(repo) {
    if (repo.index == nullptr && repo.records != nullptr)
      for (std::size_t i = 0; i < repo.records->size(); ++i) by_name_[(*repo.records)[i].name].push_back(i);
  }
  /// (record, index in its source vector) of every record of `name`.
  [[nodiscard]] std::vector<std::pair<const RepoDataRecord*, std::size_t>> named(const std::string& name) const {
    std::vector<std::pair<const RepoDataRecord*, std::size_t>> out;
    if (repo_.index != nullptr) {
      const auto& recs = repo_.index->records(name);
      for (std::size_t i = 0; i < recs.size(); ++i) out.emplace_back(&recs[i], i);
    } else if (auto it = by_name_.find(name); it != by_name_.end()) {
      for (std::size_t i : it->second) out.emplace_back(&(*repo_.records)[i], i);
    }
    return out;
  }

 private:
  const SolverRepo& repo_;
  std::map<std::string, std::vector<std::size_t>, std::less<>> by_name_;
};

/// conda-like "name version build" records for the virtual packages.
RepoDataRecord virtual_record(const VirtualPackage& vp) {
  RepoDataRecord r;
  r.name = vp.name;
  if (auto v = Version::parse(vp.version)) r.version = *v;
  r.build = vp.build.empty() ? "0" : vp.build;
  r.channel = "@virtual";
  return r;
}

/// Names reachable from the requests (specs, base pins, virtual packages) through `depends`:
/// the only names whose records libsolv is offered. Constrains do not pull packages in and are
/// not followed. Only the records of these names are ever parsed from a lazy repo.
std::set<std::string> reachable_names(const SolveTask& task, const std::vector<RepoNames>& repos) {
  std::set<std::string> seen;
  std::vector<std::string> todo;
  auto visit = [&](const std::string& n) {
    if (seen.insert(n).second) todo.push_back(n);
  };
  for (const auto& s : task.specs) visit(s.spec.exact_name());
  for (const auto& v : task.virtual_packages) visit(v.name);
  for (const auto& p : task.pinned) {
    visit(p.record.name);
    for (const auto& d : p.record.depends) visit(dep_name(d));
  }
  while (!todo.empty()) {
    std::string n = todo.back();
    todo.pop_back();
    for (const auto& repo : repos)
      for (const auto& [r, i] : repo.named(n)) {
        for (const auto& d : r->depends) visit(dep_name(d));
        // A legacy feature is tracked, by convention, by a package of its name (nomkl, cpuonly).
        for (const auto& f : split_features(r->features)) visit(f);
      }
  }
  return seen;
}

std::string record_key(const RepoDataRecord& r) { return r.channel + "/" + r.subdir + "/" + r.file_name; }

}  // namespace

Result<SolveOutcome> solve(const SolveTask& task) {
  SolveContext ctx(task);
  Pool* pool = ctx.pool.get();
  ctx.origins.resize(static_cast<std::size_t>(pool->nsolvables));

  for (const auto& s : task.specs)
    if (s.spec.exact_name().empty())
      return Error{ErrorKind::Usage, s.origin, "spec '" + s.text + "' does not name one package", "",
                   "write an exact package name (globs are for `envlock search`)"};

  // Only the names the request can reach are loaded: one libsolv repo per channel subdir,
  // ranked by channel.
  std::vector<RepoNames> repo_names;
  repo_names.reserve(task.repos.size());
  for (const auto& in : task.repos) repo_names.emplace_back(in);
  const std::set<std::string> names = reachable_names(task, repo_names);
  std::map<std::string, Id> by_key;  // channel/subdir/file -> solvable, to match pins and locks
  ExtendedSpecs extended;             // bracket depends libsolv cannot read, provided below
  // A name requested as `channel::name` comes only from that channel: its records elsewhere are
  // left out of the pool before channel priority applies, so a lower-priority channel named in a
  // spec is not excluded by strict priority (rattler's resolvo/mod.rs, pixi's channel logic).
  std::map<std::string, std::vector<MatchSpec>> channel_only;
  for (const auto& s : task.specs) {
    if (!s.spec.channel || s.spec.exact_name().empty()) continue;
    MatchSpec where;
    where.name = s.spec.name;
    where.channel = s.spec.channel;
    where.subdir = s.spec.subdir;
    channel_only[s.spec.exact_name()].push_back(std::move(where));
  }
  for (std::size_t ri = 0; ri < task.repos.size(); ++ri) {
    const SolverRepo& in = task.repos[ri];
    if (in.records == nullptr && in.index == nullptr) continue;
    std::vector<std::pair<const RepoDataRecord*, std::size_t>> chosen;
    for (const auto& n : names) {
      auto recs = repo_names[ri].named(n);
      if (auto pinned = channel_only.find(n); pinned != channel_only.end())
        std::erase_if(recs, [&](const auto& rec) {
          return !std::all_of(pinned->second.begin(), pinned->second.end(),
                              [&](const MatchSpec& m) { return m.matches(*rec.first); });
        });
      chosen.insert(chosen.end(), recs.begin(), recs.end());
    }
    canonical_order(chosen);
    std::string repo_name = in.channel + "/" + in.subdir;
    Repo* repo = repo_create(pool, repo_name.c_str());
    repo->priority = task.channel_priority == ChannelPriority::Disabled ? 0 : -in.channel_rank;
    // Arch over noarch, but only after version and build number (the patched libsolv policy
    // compares subpriority after the build number: conda's version_key).
    repo->subpriority = in.subdir == "noarch" ? 0 : 1;
    Repodata* data = repo_add_repodata(repo, 0);
    std::vector<Id> ids;
    ids.reserve(chosen.size());
    for (const auto& [r, i] : chosen) ids.push_back(add_solvable(pool, repo, data, *r, extended));
    repo_internalize(repo);
    ctx.origins.resize(static_cast<std::size_t>(pool->nsolvables));
    for (std::size_t k = 0; k < chosen.size(); ++k) {
      Id p = ids[k];
      ctx.origins[static_cast<std::size_t>(p)] = {Origin::Kind::Repo, ri, chosen[k].second, chosen[k].first};
      by_key.emplace(record_key(*chosen[k].first), p);
    }
  }

  // Virtual packages: one repo of plain solvables.
  {
    Repo* repo = repo_create(pool, "@virtual");
    Repodata* data = repo_add_repodata(repo, 0);
    for (const auto& vp : task.virtual_packages) ctx.virtual_records.push_back(virtual_record(vp));
    std::vector<Id> ids;
    for (const auto& r : ctx.virtual_records) ids.push_back(add_solvable(pool, repo, data, r, extended));
    repo_internalize(repo);
    ctx.origins.resize(static_cast<std::size_t>(pool->nsolvables));
    for (std::size_t k = 0; k < ids.size(); ++k)
      ctx.origins[static_cast<std::size_t>(ids[k])] = {Origin::Kind::Virtual, 0, k};
    ctx.virtual_solvables = ids;
  }

  // Base pins: the identical record of a repo, or the pinned record added as it is.
  {
    Repo* repo = nullptr;
    Repodata* data = nullptr;
    ctx.pin_solvables.resize(task.pinned.size());
    for (std::size_t i = 0; i < task.pinned.size(); ++i) {
      const auto& rec = task.pinned[i].record;
      auto it = by_key.find(record_key(rec));
      if (it != by_key.end()) {
        ctx.pin_solvables[i] = it->second;
        continue;
      }
      if (repo == nullptr) {
        repo = repo_create(pool, "@pinned");
        repo->priority = 1;
        data = repo_add_repodata(repo, 0);
      }
      Id p = add_solvable(pool, repo, data, rec, extended);
      ctx.origins.resize(static_cast<std::size_t>(pool->nsolvables));
      ctx.origins[static_cast<std::size_t>(p)] = {Origin::Kind::Pin, 0, i};
      ctx.pin_solvables[i] = p;
    }
    if (repo != nullptr) repo_internalize(repo);
  }

  for (Id p = 2; p < pool->nsolvables; ++p)
    if (const RepoDataRecord* r = ctx.record(p)) ctx.by_name[r->name].push_back(p);
  for (const auto& [text, ms] : extended) {
    const Id id = pool_str2id(pool, text.c_str(), 1);
    const bool excluded = text.starts_with('!');  // a constraint: the records it does not match
    for (Id p : ctx.all_named(ms.exact_name()))
      if (const RepoDataRecord* r = ctx.record(p); r != nullptr && ms.matches(*r) != excluded) {
        Solvable* sv = pool_id2solvable(pool, p);
        sv->provides = repo_addid_dep(sv->repo, sv->provides, id, 0);
      }
  }

  // Every record in the pool is reachable (see above); the map stays for explain.cpp.
  ctx.considered.assign(static_cast<std::size_t>(pool->nsolvables), false);
  for (Id p = 2; p < pool->nsolvables; ++p)
    if (const RepoDataRecord* r = ctx.record(p)) ctx.considered[static_cast<std::size_t>(p)] = names.count(r->name) > 0;
  ctx.pool.set_considered(ctx.considered);
  pool_addfileprovides(pool);
  pool_createwhatprovides(pool);

  // Jobs: requested specs (matched by envlock's MatchSpec), pins, preferences.
  OwnedQueue jobs;
  ctx.spec_candidates.resize(task.specs.size());
  std::vector<std::size_t> unmatched;
  for (std::size_t i = 0; i < task.specs.size(); ++i) {
    const MatchSpec& spec = task.specs[i].spec;
    for (Id p : ctx.all_named(spec.exact_name())) {
      if (!ctx.considered[static_cast<std::size_t>(p)]) continue;
      const RepoDataRecord* r = ctx.record(p);
      if (r != nullptr && spec.matches(*r)) ctx.spec_candidates[i].push_back(p);
    }
    if (ctx.spec_candidates[i].empty()) unmatched.push_back(i);
  }
  if (!unmatched.empty()) {
    SolveOutcome out;
    for (std::size_t i : unmatched) {
      const SolveSpec& s = task.specs[i];
      ProblemNode root{ProblemNode::Kind::Requested, s.text, s.origin, {}};
      std::vector<Id> all = ctx.all_named(s.spec.exact_name());
      ProblemNode missing{ProblemNode::Kind::Missing, "no package matches '" + s.text + "'", "", {}};
      if (all.empty()) {
        missing.detail = "no package named '" + s.spec.exact_name() + "' in the channels for this platform";
      } else {
        missing.detail = "versions that exist: " + summarize_versions(ctx, all);
      }
      root.children.push_back(std::move(missing));
      out.explanation.roots.push_back(std::move(root));
    }
    return out;
  }
  for (std::size_t i = 0; i < task.specs.size(); ++i) {
    OwnedQueue sel;
    for (Id p : ctx.spec_candidates[i]) sel.push(p);
    jobs.push2(SOLVER_INSTALL | SOLVER_SOLVABLE_ONE_OF, pool_queuetowhatprovides(pool, sel.get()));
    ctx.job_origins.push_back({JobOrigin::Kind::Spec, i});
  }
  for (std::size_t i = 0; i < ctx.pin_solvables.size(); ++i) {
    jobs.push2(SOLVER_INSTALL | SOLVER_SOLVABLE, ctx.pin_solvables[i]);
    ctx.job_origins.push_back({JobOrigin::Kind::Pin, i});
  }
  // Virtual packages are installed, as the system's: a `constrains` on `__cuda` then binds
  // (mamba's "Run constraints on virtual packages are enforced"; conda does the same).
  for (std::size_t i = 0; i < ctx.virtual_solvables.size(); ++i) {
    jobs.push2(SOLVER_INSTALL | SOLVER_SOLVABLE, ctx.virtual_solvables[i]);
    ctx.job_origins.push_back({JobOrigin::Kind::Virtual, i});
  }
  for (const auto& rec : task.preferred) {
    auto it = by_key.find(record_key(rec));
    if (it == by_key.end() || !ctx.considered[static_cast<std::size_t>(it->second)]) continue;
    jobs.push2(SOLVER_FAVOR | SOLVER_SOLVABLE, it->second);
    ctx.job_origins.push_back({JobOrigin::Kind::Favor, 0});
  }

  // Legacy `features` (conda's two objectives after the requested versions): first as few
  // tracked features as possible, so a featured record (which needs its tracker) is avoided
  // when it can be; then, with the features the solution does track, the featured variants.
  std::vector<Id> featured;
  for (Id p = 2; p < pool->nsolvables; ++p)
    if (ctx.considered[static_cast<std::size_t>(p)])
      if (const RepoDataRecord* r = ctx.record(p); r != nullptr && !r->features.empty()) featured.push_back(p);

  auto make_solver = [&]() {
    auto solver = std::make_unique<OwnedSolver>(pool);
    solver_set_flag(solver->get(), SOLVER_FLAG_ALLOW_DOWNGRADE, 1);
    if (task.channel_priority == ChannelPriority::Strict)
      solver_set_flag(solver->get(), SOLVER_FLAG_STRICT_REPO_PRIORITY, 1);
    return solver;
  };
  // conda maximises the requested packages' versions before either feature objective
  // (conda/resolve.py Resolve.solve: eq_req_v, then the track_features count, then
  // generate_feature_metric): a solve without the feature preferences settles those versions,
  // and the feature solves keep each requested name at its version (a new-user attack, session
  // 9: `numpy=*=*nomkl*` locked numpy 1.9.3 of 2015, `pytorch` + `cpuonly 1.*` pytorch 1.9.1,
  // where conda and rattler keep 1.14.2 and 2.1.0).
  if (!featured.empty()) {
    auto first = make_solver();
    if (solver_solve(first->get(), jobs.get()) == 0) {
      OwnedQueue decided;
      solver_get_decisionqueue(first->get(), decided.get());
      std::map<std::string, const RepoDataRecord*> chosen;
      for (int k = 0; k < decided.size(); ++k)
        if (decided[k] > 0)
          if (const RepoDataRecord* r = ctx.record(decided[k])) chosen.emplace(r->name, r);
      // libsolv does not maximise the requested versions over the whole solution: its first
      // pick of one name (a newer scipy-mkl) can fix another low (nomkl 2.0, where nomkl 3.0
      // needs blas openblas; conda's tests/data/index4.json, a new-user attack, session 15b).
      // So each requested name in turn, the earlier ones kept at theirs, is raised while a
      // solve with a newer version of it succeeds: lexicographic, where conda's eq_req_v sums
      // the requested names' version ranks (the two agree where one name's raise costs no other).
      for (std::size_t i = 0; i < task.specs.size(); ++i) {
        auto it = chosen.find(task.specs[i].spec.exact_name());
        if (it == chosen.end()) continue;
        Version best = it->second->version;
        for (;;) {
          OwnedQueue newer;
          for (Id p : ctx.spec_candidates[i])
            if (best < ctx.record(p)->version) newer.push(p);
          if (newer.size() == 0) break;
          OwnedQueue trial;
          for (int k = 0; k < jobs.size(); ++k) trial.push(jobs[k]);
          trial.push2(SOLVER_INSTALL | SOLVER_SOLVABLE_ONE_OF, pool_queuetowhatprovides(pool, newer.get()));
          auto raise = make_solver();
          if (solver_solve(raise->get(), trial.get()) != 0) break;
          OwnedQueue got;
          solver_get_decisionqueue(raise->get(), got.get());
          bool moved = false;
          for (int k = 0; k < got.size() && !moved; ++k)
            if (got[k] > 0)
              if (const RepoDataRecord* r = ctx.record(got[k]);
                  r != nullptr && r->name == it->first && best < r->version) {
                best = r->version;
                moved = true;
              }
          if (!moved) break;
        }
        OwnedQueue sel;
        for (Id p : ctx.spec_candidates[i])
          if (ctx.record(p)->version == best) sel.push(p);
        if (sel.size() == 0) continue;
        jobs.push2(SOLVER_INSTALL | SOLVER_SOLVABLE_ONE_OF, pool_queuetowhatprovides(pool, sel.get()));
        ctx.job_origins.push_back({JobOrigin::Kind::Spec, i});
      }
    }
  }
  const int base_jobs = jobs.size();
  for (Id p : featured) {
    jobs.push2(SOLVER_DISFAVOR | SOLVER_SOLVABLE, p);
    ctx.job_origins.push_back({JobOrigin::Kind::Favor, 0});
  }
  auto solver = make_solver();

  SolveOutcome out;
  if (solver_solve(solver->get(), jobs.get()) != 0) {
    out.explanation = explain_problems(ctx, solver->get());
    return out;
  }
  if (!featured.empty()) {
    OwnedQueue decided;
    solver_get_decisionqueue(solver->get(), decided.get());
    std::set<std::string> active;
    for (int k = 0; k < decided.size(); ++k)
      if (decided[k] > 0)
        if (const RepoDataRecord* r = ctx.record(decided[k]))
          for (const auto& tf : r->track_features) active.insert(tf);
    std::vector<Id> wanted;
    for (Id p : featured) {
      auto fs = split_features(ctx.record(p)->features);
      if (std::all_of(fs.begin(), fs.end(), [&](const std::string& f) { return active.count(f) > 0; }))
        wanted.push_back(p);
    }
    if (!wanted.empty()) {
      OwnedQueue again;
      for (int k = 0; k < base_jobs; ++k) again.push(jobs[k]);
      for (Id p : wanted) again.push2(SOLVER_FAVOR | SOLVER_SOLVABLE, p);
      for (Id p : featured)
        if (std::find(wanted.begin(), wanted.end(), p) == wanted.end()) again.push2(SOLVER_DISFAVOR | SOLVER_SOLVABLE, p);
      auto second = make_solver();
      if (solver_solve(second->get(), again.get()) == 0) solver = std::move(second);
    }
  }

  Transaction* trans = solver_create_transaction(solver->get());
  OwnedQueue installed;
  transaction_installedresult(trans, installed.get());
  transaction_free(trans);
  out.solved = true;
  std::map<Id, std::size_t> pin_of;  // a pin matched to a repo record is still a pin
  for (std::size_t i = 0; i < ctx.pin_solvables.size(); ++i) pin_of.emplace(ctx.pin_solvables[i], i);
  for (int k = 0; k < installed.size(); ++k) {
    Id p = installed[k];
    const Origin& o = ctx.origins[static_cast<std::size_t>(p)];
    if (auto pin = pin_of.find(p); pin != pin_of.end())
      out.solution.packages.push_back({&task.pinned[pin->second].record, o.repo, pin->second, true});
    else if (o.kind == Origin::Kind::Repo)
      out.solution.packages.push_back({o.record, o.repo, o.index, false});
  }
  std::sort(out.solution.packages.begin(), out.solution.packages.end(),
            [](const SolvedPackage& a, const SolvedPackage& b) { return a.record->name < b.record->name; });
  return out;
}

}  // namespace envlock
