// The solver over hand-made records (preferences, channel priority, pins, explanations) and over
// real conda-forge repodata from the shared corpus.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "channel/corpus_channel.hpp"
#include "envlock/repodata.hpp"
#include "envlock/solver.hpp"

namespace envlock {
namespace {

using testing::TempDir;

RepoDataRecord rec(const std::string& name, const std::string& version, const std::string& build = "0",
                   std::uint64_t build_number = 0, std::vector<std::string> depends = {},
                   const std::string& channel = "https://example.org/chan-a", const std::string& subdir = "linux-64") {
  RepoDataRecord r;
  r.name = name;
  r.version = *Version::parse(version);
  r.build = build;
  r.build_number = build_number;
  r.depends = std::move(depends);
  r.subdir = subdir;
  r.channel = channel;
  r.file_name = name + "-" + version + "-" + build + ".conda";
  r.url = channel + "/" + subdir + "/" + r.file_name;
  return r;
}

SolveSpec spec(const std::string& text) {
  auto s = MatchSpec::parse(text);
  EXPECT_TRUE(s.ok()) << text;
  return {*s, text, "test"};
}

/// name -> "version build" of a solution.
std::map<std::string, std::string> picked(const SolveOutcome& out) {
  std::map<std::string, std::string> m;
  for (const auto& p : out.solution.packages) m[p.record->name] = p.record->version.to_string() + " " + p.record->build;
  return m;
}

SolveTask one_repo_task(const std::vector<RepoDataRecord>& records) {
  SolveTask t;
  t.repos.push_back({"https://example.org/chan-a", "linux-64", 0, &records});
  return t;
}

TEST(Solver, PicksHighestVersionThenBuildNumber) {
  std::vector<RepoDataRecord> records{rec("a", "1.0"), rec("a", "1.10", "h1_0", 0), rec("a", "1.10", "h1_2", 2),
                                      rec("a", "1.9")};
  auto task = one_repo_task(records);
  task.specs = {spec("a")};
  auto out = solve(task);
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  ASSERT_TRUE(out->solved);
  EXPECT_EQ(picked(*out), (std::map<std::string, std::string>{{"a", "1.10 h1_2"}}));
  // The answer points at the caller's own record.
  EXPECT_EQ(out->solution.packages[0].record, &records[2]);
  EXPECT_EQ(out->solution.packages[0].index, 2u);
}

TEST(Solver, TrackFeaturesAreDeprioritised) {
  auto featured = rec("torch", "2.0", "cuda_0", 5);
  featured.track_features = {"cuda"};
  std::vector<RepoDataRecord> records{featured, rec("torch", "2.0", "cpu_0", 0)};
  auto task = one_repo_task(records);
  task.specs = {spec("torch")};
  auto out = solve(task);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out)["torch"], "2.0 cpu_0");
}

// Rule 1. conda/resolve.py version_key ends [..., build_number, noarch, timestamp, build];
// rattler_solve/src/resolvo/conda_sorting.rs ends on the timestamp too.
TEST(SolverOrder, SameVersionAndBuildNumberNewestTimestampWins) {
  auto older = rec("lib", "1.0", "zz_0", 0);  // a build string that sorts last, as text or as a version
  older.timestamp = 1700000000000;
  auto newer = rec("lib", "1.0", "aa_0", 0);
  newer.timestamp = 1700000000001;  // 1 ms newer: compared at the repodata's precision
  for (const auto& records : {std::vector<RepoDataRecord>{older, newer}, std::vector<RepoDataRecord>{newer, older}}) {
    auto task = one_repo_task(records);
    task.specs = {spec("lib")};
    auto out = solve(task);
    ASSERT_TRUE(out.ok() && out->solved);
    EXPECT_EQ(picked(*out)["lib"], "1.0 aa_0");
  }
  // Equal (or absent) timestamps: the build string decides, compared as plain text (conda's
  // last key): "py_10" < "py_9" as text, though 10 > 9 as a version.
  auto a = rec("lib", "1.0", "py_10", 0), b = rec("lib", "1.0", "py_9", 0);
  a.timestamp = b.timestamp = 1700000000000;
  for (bool with_ts : {true, false}) {
    std::vector<RepoDataRecord> records{a, b};
    if (!with_ts) records[0].timestamp = records[1].timestamp = std::nullopt;
    auto task = one_repo_task(records);
    task.specs = {spec("lib")};
    auto out = solve(task);
    ASSERT_TRUE(out.ok() && out->solved);
    EXPECT_EQ(picked(*out)["lib"], "1.0 py_9") << with_ts;
  }
  // The timestamp never outranks the build number or the version.
  auto bn = rec("lib", "1.0", "b_1", 1);
  bn.timestamp = 1;
  auto v2 = rec("lib", "0.9", "c_0", 0);
  v2.timestamp = 1800000000000;
  std::vector<RepoDataRecord> records{older, newer, bn, v2};
  auto task = one_repo_task(records);
  task.specs = {spec("lib")};
  auto out = solve(task);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out)["lib"], "1.0 b_1");
}

// Rule 1, variants. Builds of one version and build number that need different dependencies
// (one pytorch for each python and CUDA): the one whose dependencies select the higher versions
// wins, whatever the timestamps say; the timestamp decides only between variants whose
// dependencies select the same. conda maximizes every package's version before the timestamps
// (conda/resolve.py Resolve.solve: "Remaining packages: maximize versions" before "Maximize
// timestamps"); mamba's libsolv sorts variants by their best dependencies, then the timestamp
// (mamba docs/source/advanced_usage/package_resolution.rst, sort_by_best_dependencies); rattler
// too (rattler_solve/src/resolvo/conda_sorting.rs). A new-user attack (session 9) found pytorch
// 2.1.0 locked as its py3.8/cuda11.8 build, the newest upload of the real pytorch channel's twelve.
TEST(SolverOrder, VariantsAreRankedByTheVersionsTheirDependenciesSelectBeforeTheTimestamp) {
  std::vector<RepoDataRecord> records{rec("python", "3.8.18", "0"), rec("python", "3.11.6", "0"),
                                      rec("cuda", "11.8", "0"), rec("cuda", "12.1", "0")};
  auto py38 = rec("torch", "2.1.0", "py3.8_cuda11.8_0", 0, {"python >=3.8,<3.9.0a0", "cuda 11.8.*"});
  py38.timestamp = 1700000009000;  // uploaded last
  auto py311 = rec("torch", "2.1.0", "py3.11_cuda12.1_0", 0, {"python >=3.11,<3.12.0a0", "cuda 12.1.*"});
  py311.timestamp = 1700000001000;
  auto py311_cu118 = rec("torch", "2.1.0", "py3.11_cuda11.8_0", 0, {"python >=3.11,<3.12.0a0", "cuda 11.8.*"});
  py311_cu118.timestamp = 1700000005000;
  for (const auto& order : {std::vector<RepoDataRecord>{py38, py311, py311_cu118},
                            std::vector<RepoDataRecord>{py311_cu118, py38, py311}}) {
    auto all = records;
    all.insert(all.end(), order.begin(), order.end());
    auto task = one_repo_task(all);
    task.specs = {spec("torch")};
    auto out = solve(task);
    ASSERT_TRUE(out.ok() && out->solved);
    EXPECT_EQ(picked(*out), (std::map<std::string, std::string>{
                                {"cuda", "12.1 0"}, {"python", "3.11.6 0"}, {"torch", "2.1.0 py3.11_cuda12.1_0"}}));
    // Asked for python 3.8, the py3.8 variant is the one that fits: the others stay alternatives.
    task.specs = {spec("torch"), spec("python 3.8.*")};
    auto py = solve(task);
    ASSERT_TRUE(py.ok() && py->solved);
    EXPECT_EQ(picked(*py)["torch"], "2.1.0 py3.8_cuda11.8_0");
    // A variant whose dependency selects only track_features records loses (mamba's rule).
    auto pypy = rec("python", "3.12.0", "0_pypy");
    pypy.track_features = {"pypy"};
    auto featured = all;
    featured.push_back(pypy);
    auto pypy_torch = rec("torch", "2.1.0", "pypy3.12_0", 0, {"python 3.12.* *_pypy"});
    pypy_torch.timestamp = 1800000000000;
    featured.push_back(pypy_torch);
    auto ftask = one_repo_task(featured);
    ftask.specs = {spec("torch")};
    auto f = solve(ftask);
    ASSERT_TRUE(f.ok() && f->solved);
    EXPECT_EQ(picked(*f)["torch"], "2.1.0 py3.11_cuda12.1_0");
  }
}

// Rule 2. conda/resolve.py version_key: [..., version, build_number, noarch, ...]: the arch
// record wins only on a version + build number tie; the same with every channel priority.
TEST(SolverOrder, BuildNumberBeforeSubdir) {
  const std::string ch = "https://example.org/chan-a";
  std::vector<RepoDataRecord> arch{rec("tool", "1.0", "h1_0", 0, {}, ch, "linux-64"),
                                   rec("same", "2.0", "h2_3", 3, {}, ch, "linux-64")};
  std::vector<RepoDataRecord> noarch{rec("tool", "1.0", "pyh_1", 1, {}, ch, "noarch"),
                                     rec("same", "2.0", "pyh_3", 3, {}, ch, "noarch")};
  arch[0].timestamp = arch[1].timestamp = 1000;        // older than the noarch records:
  noarch[0].timestamp = noarch[1].timestamp = 2000;    // the subdir step comes before the timestamp
  for (auto prio : {ChannelPriority::Strict, ChannelPriority::Flexible, ChannelPriority::Disabled}) {
    SolveTask t;
    t.channel_priority = prio;
    t.repos = {{ch, "linux-64", 0, &arch}, {ch, "noarch", 0, &noarch}};
    t.specs = {spec("tool"), spec("same")};
    auto out = solve(t);
    ASSERT_TRUE(out.ok() && out->solved);
    EXPECT_EQ(picked(*out)["tool"], "1.0 pyh_1") << static_cast<int>(prio);  // higher build number, noarch
    EXPECT_EQ(picked(*out)["same"], "2.0 h2_3") << static_cast<int>(prio);   // tie: arch preferred
  }
}

// Rule 3, legacy form: conda/resolve.py ms_depends (a record's `features` need a tracker) and
// generate_feature_count / generate_feature_metric (fewest trackers, then the featured variants).
TEST(SolverFeatures, LegacyFeaturesFollowTheTracker) {
  auto mkl = rec("numpy", "1.0", "py_mkl_0", 0);
  auto nomkl = rec("numpy", "1.0", "py_nomkl_0", 0);
  nomkl.features = "nomkl";
  nomkl.timestamp = 2000;  // newer, and its build string sorts last: only the features keep it out
  mkl.timestamp = 1000;
  auto tracker = rec("nomkl", "1.0", "0", 0);
  tracker.track_features = {"nomkl"};
  std::vector<RepoDataRecord> records{mkl, nomkl, tracker, rec("scipy", "1.0", "0", 0, {"numpy"})};
  auto task = one_repo_task(records);
  task.specs = {spec("scipy")};
  auto out = solve(task);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out), (std::map<std::string, std::string>{{"numpy", "1.0 py_mkl_0"}, {"scipy", "1.0 0"}}));
  // Requesting the tracker switches every package that has a featured variant.
  task.specs = {spec("scipy"), spec("nomkl")};
  out = solve(task);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out)["numpy"], "1.0 py_nomkl_0");
  // A featured record cannot be installed without its tracker.
  task.specs = {spec("numpy=1.0=py_nomkl_0")};
  out = solve(task);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out).count("nomkl"), 1u);
}

// conda/resolve.py Resolve.solve maximises the requested names' versions (eq_req_v) before the
// feature objectives; over conda's tests/data/index4.json `scipy` + `nomkl` gives nomkl 3.0
// (live rattler agrees). The newer scipy-mkl must not keep nomkl at 2.0 (attack 15b #1).
TEST(SolverFeatures, RequestedVersionsAreMaximalWithFeatures) {
  auto nomkl2 = rec("nomkl", "2.0", "0", 0);
  nomkl2.track_features = {"nomkl"};
  auto nomkl3 = rec("nomkl", "3.0", "0", 0, {"blas 1.0 openblas"});
  nomkl3.track_features = {"nomkl"};
  auto scipy_nomkl = rec("scipy", "1.1", "nomkl_0", 0, {"blas 1.0 openblas"});
  scipy_nomkl.features = "nomkl";
  scipy_nomkl.timestamp = 1000;
  auto scipy_mkl = rec("scipy", "1.1", "mkl_0", 0, {"blas 1.0 mkl"});
  scipy_mkl.timestamp = 2000;
  std::vector<RepoDataRecord> records{nomkl2, nomkl3, rec("blas", "1.0", "openblas"), rec("blas", "1.0", "mkl"),
                                      scipy_nomkl, scipy_mkl};
  auto task = one_repo_task(records);
  task.specs = {spec("scipy"), spec("nomkl")};
  auto out = solve(task);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out), (std::map<std::string, std::string>{
                              {"blas", "1.0 openblas"}, {"nomkl", "3.0 0"}, {"scipy", "1.1 nomkl_0"}}));
}

// Rule 3, mutex form (the pytorch channel's cpuonly / pytorch-mutex): the variant whose mutex
// build tracks a feature is de-prioritised, and requesting the selector package yields it, also
// when the framework is channel-pinned.
TEST(SolverFeatures, MutexFormAndChannelPinnedSpec) {
  const std::string ch = "https://conda.anaconda.org/pytorch";
  auto cpu_mutex = rec("pytorch-mutex", "1.0", "cpu", 0, {}, ch, "noarch");
  cpu_mutex.track_features = {"pytorch-mutex"};
  std::vector<RepoDataRecord> noarch{cpu_mutex, rec("pytorch-mutex", "1.0", "cuda", 0, {}, ch, "noarch"),
                                     rec("cpuonly", "2.0", "0", 0, {"pytorch-mutex 1.0 cpu"}, ch, "noarch")};
  std::vector<RepoDataRecord> linux{rec("pytorch", "1.10.0", "py3.9_cpu_0", 0, {"pytorch-mutex 1.0 cpu"}, ch),
                                    rec("pytorch", "1.10.0", "py3.9_cuda11.3_0", 0, {"pytorch-mutex 1.0 cuda"}, ch)};
  linux[0].timestamp = 1634273220608;
  linux[1].timestamp = 1634283637634;
  for (const char* torch : {"pytorch", "pytorch::pytorch"}) {
    SolveTask t;
    t.repos = {{ch, "linux-64", 0, &linux}, {ch, "noarch", 0, &noarch}};
    t.specs = {spec(torch)};
    auto out = solve(t);
    ASSERT_TRUE(out.ok() && out->solved);
    EXPECT_EQ(picked(*out)["pytorch-mutex"], "1.0 cuda") << torch;
    t.specs = {spec(torch), spec("cpuonly")};
    out = solve(t);
    ASSERT_TRUE(out.ok() && out->solved);
    EXPECT_EQ(picked(*out)["pytorch"], "1.10.0 py3.9_cpu_0") << torch;
    EXPECT_EQ(picked(*out)["pytorch-mutex"], "1.0 cpu") << torch;
  }
}

// Rule 4. mamba libmamba/tests/src/solver/libsolv/test_solver.cpp "Run constraints on virtual
// packages are enforced"; conda's virtual packages are installed records of the solve.
TEST(SolverVirtual, ConstrainsOnVirtualPackagesBind) {
  auto cv = rec("cuda-version", "12.4", "h3060b56_3", 3);
  cv.constrains = {"__cuda >=12", "cudatoolkit 12.4|12.4.*"};
  std::vector<RepoDataRecord> records{cv, rec("cuda-version", "11.8", "h70ddcb2_3", 3)};
  auto task = one_repo_task(records);
  task.specs = {spec("cuda-version")};
  task.virtual_packages = {{"__cuda", "11.8", "0"}, {"__glibc", "2.28", "0"}};
  task.virtual_origins = {{"__cuda", "declared in the manifest for linux-64"}};
  auto out = solve(task);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out), (std::map<std::string, std::string>{{"cuda-version", "11.8 h70ddcb2_3"}}));
  // Without __cuda the constraint has nothing to bind: the newest is taken.
  task.virtual_packages = {{"__glibc", "2.28", "0"}};
  out = solve(task);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out)["cuda-version"], "12.4 h3060b56_3");
  // Asked for 12, with __cuda 11.8: unsatisfiable, naming the virtual package and its origin.
  task.virtual_packages = {{"__cuda", "11.8", "0"}};
  task.specs = {spec("cuda-version 12.*")};
  out = solve(task);
  ASSERT_TRUE(out.ok());
  ASSERT_FALSE(out->solved);
  EXPECT_EQ(out->explanation.to_text(),
            "  cuda-version 12.* (requested at test)\n"
            "  └─ cuda-version 12.4 h3060b56_3\n"
            "     └─ constrains '__cuda >=12', which excludes __cuda 11.8 0 (virtual package, declared in the "
            "manifest for linux-64)\n"
            "  __cuda 11.8 0 (virtual package, declared in the manifest for linux-64)\n"
            "  └─ excluded by the constraint '__cuda >=12' of cuda-version 12.4 h3060b56_3 (requested as "
            "'cuda-version 12.*')\n");
  nlohmann::json j;
  out->explanation.to_json(j);
  EXPECT_EQ(j["conflicts"][1]["kind"], "virtual");
  // A dependency on a newer __cuda than assumed names the assumed value and its origin.
  records.push_back(rec("app", "1.0", "0", 0, {"__cuda >=12.6"}));
  task = one_repo_task(records);
  task.specs = {spec("app")};
  task.virtual_packages = {{"__cuda", "12.4", "0"}};
  task.virtual_origins = {{"__cuda", "CONDA_OVERRIDE_CUDA=12.4"}};
  out = solve(task);
  ASSERT_TRUE(out.ok());
  ASSERT_FALSE(out->solved);
  EXPECT_NE(out->explanation.to_text().find("nothing provides __cuda >=12.6; assumed: __cuda 12.4 0 (CONDA_OVERRIDE_CUDA=12.4)"),
            std::string::npos)
      << out->explanation.to_text();
}

// A single chain of dependencies is explained down to its cause however deep (a new-user attack,
// session 15b #6: a->b0->...->b11->zzz stopped at b7 "(chain continues)", zzz nowhere); rattler's
// resolvo reporter prints the whole chain to "zzz >=1, for which no candidates were found".
TEST(SolverExplain, SingleChainReachesItsCauseAtAnyDepth) {
  std::vector<RepoDataRecord> records{rec("a", "1.0", "0", 0, {"b0"})};
  for (int i = 0; i < 12; ++i)
    records.push_back(rec("b" + std::to_string(i), "1.0", "0", 0,
                          {i == 11 ? std::string("zzz >=1") : "b" + std::to_string(i + 1)}));
  auto task = one_repo_task(records);
  task.specs = {spec("a")};
  auto out = solve(task);
  ASSERT_TRUE(out.ok());
  ASSERT_FALSE(out->solved);
  std::string want = "  a (requested at test)\n  └─ a 1.0 0\n";
  std::string indent = "     ";
  for (int i = 0; i < 12; ++i) {
    std::string b = "b" + std::to_string(i);
    want += indent + "└─ requires " + b + "\n" + indent + "   └─ " + b + " 1.0 0\n";
    indent += "      ";
  }
  want += indent + "└─ requires zzz >=1\n" + indent + "   └─ nothing provides zzz >=1; no package named 'zzz' in the channels\n";
  EXPECT_EQ(out->explanation.to_text(), want);
  nlohmann::json j;
  out->explanation.to_json(j);
  EXPECT_NE(j.dump().find("nothing provides zzz >=1"), std::string::npos);
}

// A repodata `constrains` in bracket form with keys libsolv cannot read binds, as conda's
// MatchSpec and rattler's resolvo do (live rattler locks b 1.0 here; attack 15b #3, where envlock
// ignored the constraint and locked b 2.0).
TEST(SolverConstrains, BracketKeysLibsolvCannotReadStillConstrain) {
  auto b1 = rec("b", "1.0", "0", 0);
  b1.license = "MIT";
  auto b2 = rec("b", "2.0", "0", 0);
  b2.license = "GPL-3.0";
  for (const char* c : {"b[license=MIT]", "b[version='<2', build_number='>=0']"}) {
    auto a = rec("a", "1.0", "0", 0);
    a.constrains = {c};
    std::vector<RepoDataRecord> records{a, b1, b2};
    auto task = one_repo_task(records);
    task.specs = {spec("a"), spec("b")};
    auto out = solve(task);
    ASSERT_TRUE(out.ok() && out->solved) << c;
    EXPECT_EQ(picked(*out), (std::map<std::string, std::string>{{"a", "1.0 0"}, {"b", "1.0 0"}})) << c;
    // Without b in the solution the constraint asks for nothing.
    task.specs = {spec("a")};
    out = solve(task);
    ASSERT_TRUE(out.ok() && out->solved) << c;
    EXPECT_EQ(picked(*out), (std::map<std::string, std::string>{{"a", "1.0 0"}})) << c;
  }
  auto a = rec("a", "1.0", "0", 0);
  a.constrains = {"b[license=MIT]"};
  std::vector<RepoDataRecord> records{a, b1, b2};
  auto task = one_repo_task(records);
  task.specs = {spec("a"), spec("b 2.*")};
  auto out = solve(task);
  ASSERT_TRUE(out.ok());
  ASSERT_FALSE(out->solved);
  EXPECT_EQ(out->explanation.to_text(),
            "  a (requested at test)\n"
            "  └─ a 1.0 0\n"
            "     └─ constrains 'b[license=MIT]', which excludes b 2.0 0 (requested as 'b 2.*')\n"
            "  b 2.* (requested at test)\n"
            "  └─ b 2.0 0\n"
            "     └─ excluded by the constraint 'b[license=MIT]' of a 1.0 0 (requested as 'a')\n");
}

TEST(Solver, FollowsDependenciesAndVirtualPackages) {
  std::vector<RepoDataRecord> records{
      rec("app", "2.0", "gpu_0", 0, {"libcuda-rt >=12", "__cuda >=12"}), rec("app", "1.0", "cpu_0", 0, {"zlib 1.*"}),
      rec("libcuda-rt", "12.1"), rec("zlib", "1.3"), rec("zlib", "2.0")};
  auto task = one_repo_task(records);
  task.specs = {spec("app")};
  // No __cuda assumed: the GPU build cannot be chosen.
  auto out = solve(task);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out), (std::map<std::string, std::string>{{"app", "1.0 cpu_0"}, {"zlib", "1.3 0"}}));
  // With __cuda 12.4 declared it can, and the virtual package itself is not part of the answer.
  task.virtual_packages = {{"__cuda", "12.4", "0"}};
  out = solve(task);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out), (std::map<std::string, std::string>{{"app", "2.0 gpu_0"}, {"libcuda-rt", "12.1 0"}}));
}

TEST(Solver, ChannelPriorityStrictFlexibleDisabled) {
  std::vector<RepoDataRecord> high{rec("lib", "1.0", "0", 0, {}, "https://example.org/high")};
  std::vector<RepoDataRecord> low{rec("lib", "2.0", "0", 0, {}, "https://example.org/low"),
                                  rec("only-low", "1.0", "0", 0, {}, "https://example.org/low")};
  SolveTask t;
  t.repos = {{"https://example.org/high", "linux-64", 0, &high}, {"https://example.org/low", "linux-64", 1, &low}};
  t.specs = {spec("lib"), spec("only-low")};

  t.channel_priority = ChannelPriority::Strict;
  auto out = solve(t);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out)["lib"], "1.0 0");
  EXPECT_EQ(picked(*out)["only-low"], "1.0 0");  // names the high channel lacks still come from low

  t.channel_priority = ChannelPriority::Disabled;
  out = solve(t);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out)["lib"], "2.0 0");

  // Strict: a version only the lower channel has is refused, with the reason named.
  t.channel_priority = ChannelPriority::Strict;
  t.specs = {spec("lib >=2")};
  out = solve(t);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->solved);
  EXPECT_NE(out->explanation.to_text().find("strict channel priority"), std::string::npos) << out->explanation.to_text();

  // Flexible: the lower channel may supply it.
  t.channel_priority = ChannelPriority::Flexible;
  out = solve(t);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out)["lib"], "2.0 0");
}

// A name requested from a named channel comes from it whatever the channel priority: records of
// that name elsewhere are left out first, then priority applies to the rest (rattler's
// resolvo/mod.rs; pixi docs channel_logic.md). A new-user attack (session 9) found `low::lib`
// refused as "excluded by strict channel priority".
TEST(Solver, AChannelNamedInASpecWinsUnderStrictPriority) {
  std::vector<RepoDataRecord> high{rec("lib", "1.0", "0", 0, {"dep"}, "https://example.org/high"),
                                   rec("dep", "1.0", "0", 0, {}, "https://example.org/high")};
  std::vector<RepoDataRecord> low{rec("lib", "2.0", "0", 0, {"dep"}, "https://example.org/low"),
                                  rec("dep", "2.0", "0", 0, {}, "https://example.org/low")};
  SolveTask t;
  t.repos = {{"https://example.org/high", "linux-64", 0, &high}, {"https://example.org/low", "linux-64", 1, &low}};
  for (auto priority : {ChannelPriority::Strict, ChannelPriority::Flexible, ChannelPriority::Disabled}) {
    t.channel_priority = priority;
    t.specs = {spec("low::lib")};
    auto out = solve(t);
    ASSERT_TRUE(out.ok() && out->solved) << static_cast<int>(priority) << out->explanation.to_text();
    EXPECT_EQ(picked(*out)["lib"], "2.0 0");
    // Its dependencies still follow the priority: strict takes `dep` from the high channel.
    EXPECT_EQ(picked(*out)["dep"], priority == ChannelPriority::Disabled ? "2.0 0" : "1.0 0");
  }
  // A version the named channel lacks is missing, named as such, even where another has it.
  t.channel_priority = ChannelPriority::Strict;
  t.specs = {spec("high::lib >=2")};
  auto out = solve(t);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->solved);
}

// A record whose depends nest deeper than VersionSpec::kMaxNesting cannot be chosen (libsolv's
// matcher recurses per parenthesis: a 200,000-deep spec crashed envlock); another record can.
TEST(Solver, ARecordWithADependencyNestedTooDeepIsNeverChosen) {
  const std::string deep = "lib " + std::string(200000, '(') + ">=1" + std::string(200000, ')');
  std::vector<RepoDataRecord> records{rec("lib", "1.0"), rec("app", "2.0", "0", 0, {deep}), rec("app", "1.0", "0", 0, {"lib"})};
  auto task = one_repo_task(records);
  task.specs = {spec("app")};
  auto out = solve(task);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out)["app"], "1.0 0");
}

// Repodata `depends` may use the bracket form (conda and rattler read it; a new-user attack,
// session 9, found "no package named 'dep[version'"): version and build keys are read.
TEST(Solver, BracketSpecsInDependsAreRead) {
  std::vector<RepoDataRecord> records{rec("dep", "1.0", "cpu_0"), rec("dep", "2.0", "cuda_0"), rec("dep", "3.0", "cpu_0"),
                                      rec("app", "1.0", "0", 0, {"dep[version='>=2,<3', build='cuda*']"})};
  auto task = one_repo_task(records);
  task.specs = {spec("app")};
  auto out = solve(task);
  ASSERT_TRUE(out.ok() && out->solved) << out->explanation.to_text();
  EXPECT_EQ(picked(*out)["dep"], "2.0 cuda_0");
}

// Bracket keys libsolv's conda parser cannot express (build_number, md5, license, ...) in a
// record's depends are matched by envlock's MatchSpec (conda and rattler read them; a new-user
// attack, session 9, compared `dep[version='100.*', build_number='>=1']` with rattler, which
// takes the build-number-1 build): the record is installable and the dependency holds.
TEST(Solver, BracketKeysLibsolvCannotReadAreMatchedInDepends) {
  auto plain = rec("dep", "100.0", "0", 0);
  auto cuda = rec("dep", "100.0", "cuda_1", 1);
  auto old = rec("dep", "99.0", "cuda_2", 2);
  cuda.license = "MIT";
  old.license = "MIT";
  cuda.md5 = std::string(32, 'a');
  std::vector<RepoDataRecord> records{plain, cuda, old,
                                      rec("nb", "1.0", "0", 0, {"dep[version='100.*', build_number='>=1']"}),
                                      rec("lic", "1.0", "0", 0, {"dep[license=MIT]"}),
                                      rec("md5", "1.0", "0", 0, {"dep[md5=" + std::string(32, 'a') + "]"}),
                                      rec("none", "1.0", "0", 0, {"dep[version='100.*', build_number='>=5']"})};
  auto task = one_repo_task(records);
  for (const auto& [request, want] : std::vector<std::pair<std::string, std::string>>{
           {"nb", "100.0 cuda_1"}, {"lic", "100.0 cuda_1"}, {"md5", "100.0 cuda_1"}}) {
    SCOPED_TRACE(request);
    task.specs = {spec(request)};
    auto out = solve(task);
    ASSERT_TRUE(out.ok() && out->solved) << out->explanation.to_text();
    EXPECT_EQ(picked(*out)["dep"], want);
  }
  task.specs = {spec("none")};
  auto out = solve(task);
  ASSERT_TRUE(out.ok());
  ASSERT_FALSE(out->solved);
  EXPECT_NE(out->explanation.to_text().find("nothing provides dep[version='100.*', build_number='>=5']"),
            std::string::npos)
      << out->explanation.to_text();
}

TEST(Solver, PreferredRecordsAreKeptWhenTheyStillFit) {
  std::vector<RepoDataRecord> records{rec("a", "1.0", "0", 0, {"b"}), rec("a", "2.0", "0", 0, {"b"}), rec("b", "1.0"),
                                      rec("b", "2.0")};
  auto task = one_repo_task(records);
  task.specs = {spec("a")};
  task.preferred = {records[0], records[2]};
  auto out = solve(task);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out), (std::map<std::string, std::string>{{"a", "1.0 0"}, {"b", "1.0 0"}}));
  // A preferred record that no longer fits the request is dropped, the rest stay.
  task.specs = {spec("a >=2")};
  out = solve(task);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out), (std::map<std::string, std::string>{{"a", "2.0 0"}, {"b", "1.0 0"}}));
}

TEST(Solver, BasePinIsKeptAndMarked) {
  std::vector<RepoDataRecord> records{rec("python", "3.9.0"), rec("python", "3.10.0"),
                                      rec("numpy", "1.0", "0", 0, {"python >=3.9"})};
  auto task = one_repo_task(records);
  task.pinned = {{records[0], "base"}};
  task.specs = {spec("numpy")};
  auto out = solve(task);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out), (std::map<std::string, std::string>{{"numpy", "1.0 0"}, {"python", "3.9.0 0"}}));
  for (const auto& p : out->solution.packages) EXPECT_EQ(p.from_pin, p.record->name == "python");
}

TEST(Solver, BasePinConflictNamesThePinAndTheChain) {
  std::vector<RepoDataRecord> records{rec("python", "3.9.0", "h_cp39"), rec("python", "3.11.2", "h_cp311"),
                                      rec("torch", "2.5", "py311", 0, {"python >=3.11,<3.12"}),
                                      rec("lightning", "2.4", "0", 0, {"torch >=2.5"})};
  auto task = one_repo_task(records);
  task.pinned = {{records[0], "base"}};
  task.specs = {spec("lightning")};
  auto out = solve(task);
  ASSERT_TRUE(out.ok());
  ASSERT_FALSE(out->solved);
  std::string text = out->explanation.to_text();
  EXPECT_NE(text.find("lightning (requested at test)"), std::string::npos) << text;
  EXPECT_NE(text.find("requires torch >=2.5"), std::string::npos) << text;
  EXPECT_NE(text.find("requires python >=3.11,<3.12"), std::string::npos) << text;
  EXPECT_NE(text.find("conflicts with python 3.9.0 h_cp39"), std::string::npos) << text;
  EXPECT_NE(text.find("pinned by the base layer 'base'"), std::string::npos) << text;

  nlohmann::json j;
  out->explanation.to_json(j);
  ASSERT_TRUE(j["conflicts"].is_array());
  EXPECT_EQ(j["conflicts"][0]["kind"], "requested");
  EXPECT_EQ(j["conflicts"][0]["text"], "lightning");
}

TEST(Solver, UnknownNameAndMissingVersionListWhatExists) {
  std::vector<RepoDataRecord> records{rec("numpy", "1.26.4"), rec("numpy", "2.0.1")};
  auto task = one_repo_task(records);
  task.specs = {spec("numpy >=3"), spec("scipy")};
  auto out = solve(task);
  ASSERT_TRUE(out.ok());
  ASSERT_FALSE(out->solved);
  std::string text = out->explanation.to_text();
  EXPECT_NE(text.find("numpy >=3 (requested at test)"), std::string::npos) << text;
  EXPECT_NE(text.find("versions that exist: 2.0.1, 1.26.4"), std::string::npos) << text;
  EXPECT_NE(text.find("no package named 'scipy'"), std::string::npos) << text;
}

TEST(Solver, MissingDependencyIsExplained) {
  std::vector<RepoDataRecord> records{rec("app", "1.0", "0", 0, {"libfoo >=2"}), rec("libfoo", "1.5")};
  auto task = one_repo_task(records);
  task.specs = {spec("app")};
  auto out = solve(task);
  ASSERT_TRUE(out.ok());
  ASSERT_FALSE(out->solved);
  std::string text = out->explanation.to_text();
  EXPECT_NE(text.find("nothing provides libfoo >=2"), std::string::npos) << text;
  EXPECT_NE(text.find("versions that exist: 1.5"), std::string::npos) << text;
}

TEST(Solver, ConstrainsAreRespected) {
  auto a = rec("a", "1.0");
  a.constrains = {"b <2"};
  std::vector<RepoDataRecord> records{a, rec("b", "1.0"), rec("b", "2.0")};
  auto task = one_repo_task(records);
  task.specs = {spec("a"), spec("b")};
  auto out = solve(task);
  ASSERT_TRUE(out.ok() && out->solved);
  EXPECT_EQ(picked(*out)["b"], "1.0 0");
}

TEST(Solver, SpecWithoutExactNameIsAUsageError) {
  std::vector<RepoDataRecord> records{rec("a", "1.0")};
  auto task = one_repo_task(records);
  task.specs = {spec("a*")};
  auto out = solve(task);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().kind, ErrorKind::Usage);
}

TEST(Solver, FindRecordsNewestFirst) {
  std::vector<RepoDataRecord> records{rec("a", "1.0"), rec("a", "1.10", "b1", 1), rec("a", "1.10", "b0", 0),
                                      rec("ab", "3.0"), rec("a", "1.9")};
  std::vector<SolverRepo> repos{{"https://example.org/chan-a", "linux-64", 0, &records}};
  auto found = find_records(repos, *MatchSpec::parse("a >=1.5"));
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0]->build, "b1");
  EXPECT_EQ(found[1]->build, "b0");
  EXPECT_EQ(found[2]->version.to_string(), "1.9");
}

// --- real repodata ---------------------------------------------------------------------------

struct CorpusRepos {
  std::vector<SubdirRepodata> data;
  std::vector<SolverRepo> repos() const {
    std::vector<SolverRepo> out;
    for (const auto& d : data) out.push_back({d.channel, d.subdir, 0, &d.records});
    return out;
  }
};

CorpusRepos load_subset(const std::filesystem::path& dir, const std::string& platform) {
  testing::make_conda_forge_subset(dir, {platform});
  auto ch = resolve_channel(dir.string(), dir);
  EXPECT_TRUE(ch.ok());
  auto data = load_repodata({*ch}, {platform});
  EXPECT_TRUE(data.ok()) << (data.ok() ? "" : data.error().to_string());
  return {data.ok() ? std::move(*data) : std::vector<SubdirRepodata>{}};
}

/// Every `depends` of every chosen record is matched by a chosen record or a virtual package.
void expect_closed(const SolveOutcome& out, const std::vector<VirtualPackage>& vps) {
  for (const auto& p : out.solution.packages) {
    for (const auto& d : p.record->depends) {
      auto ms = MatchSpec::parse(d);
      ASSERT_TRUE(ms.ok()) << d;
      bool ok = false;
      for (const auto& q : out.solution.packages) ok = ok || ms->matches(*q.record);
      for (const auto& v : vps) ok = ok || ms->exact_name() == v.name;
      EXPECT_TRUE(ok) << p.record->dist_name() << " depends on " << d << ", which nothing in the answer satisfies";
    }
  }
}

TEST(SolverCorpus, LocksCpythonFromTheCondaForgeSubset) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("solver");
  auto c = load_subset(tmp.path() / "cf", "linux-64");
  auto repos = c.repos();
  SolveTask t;
  t.repos = repos;
  t.virtual_packages = {{"__glibc", "2.28", "0"}, {"__unix", "0", "0"}, {"__linux", "4.18", "0"}};
  t.specs = {spec("python 3.9.* *_cpython"), spec("pip")};
  auto out = solve(t);
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  ASSERT_TRUE(out->solved) << out->explanation.to_text();
  auto m = picked(*out);
  EXPECT_EQ(m["python"], "3.9.19 h0755675_0_cpython");
  EXPECT_TRUE(m.count("openssl") && m.count("libzlib") && m.count("setuptools") && m.count("wheel"));
  EXPECT_EQ(m.count("pypy3.9"), 0u);
  expect_closed(*out, t.virtual_packages);
  // Records are the loader's own: channel and URL as read from the local channel.
  for (const auto& p : out->solution.packages) EXPECT_TRUE(p.record->url.starts_with("file://")) << p.record->url;
}

TEST(SolverCorpus, ShuffledRepodataGivesTheSameAnswer) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("solver");
  auto c = load_subset(tmp.path() / "cf", "linux-64");
  auto solve_names = [](const std::vector<SubdirRepodata>& data) {
    SolveTask t;
    for (const auto& d : data) t.repos.push_back({d.channel, d.subdir, 0, &d.records});
    t.virtual_packages = {{"__glibc", "2.17", "0"}, {"__unix", "0", "0"}};
    t.specs = {spec("python 3.9.*"), spec("pip"), spec("curl")};
    auto out = solve(t);
    std::vector<std::string> files;
    if (out.ok() && out->solved)
      for (const auto& p : out->solution.packages) files.push_back(p.record->subdir + "/" + p.record->file_name);
    return files;
  };
  auto first = solve_names(c.data);
  ASSERT_FALSE(first.empty());
  std::mt19937 rng(12345);
  for (int round = 0; round < 3; ++round) {
    auto shuffled = c.data;
    for (auto& d : shuffled) std::shuffle(d.records.begin(), d.records.end(), rng);
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    EXPECT_EQ(solve_names(shuffled), first) << "round " << round;
  }
}

TEST(SolverCorpus, LazyReposGiveTheSameAnswerAndParseOnlyReachableNames) {
  ENVLOCK_REQUIRE_CORPUS();
  TempDir tmp("solver");
  auto c = load_subset(tmp.path() / "cf", "linux-64");
  auto ch = resolve_channel((tmp.path() / "cf").string(), tmp.path());
  ASSERT_TRUE(ch.ok());
  RepodataOptions lazy_options;
  lazy_options.lazy = true;
  lazy_options.cache_dir = tmp.path() / "cache";
  auto lazy = load_repodata({*ch}, {"linux-64"}, lazy_options);
  ASSERT_TRUE(lazy.ok()) << lazy.error().to_string();
  for (const auto& spec_set : std::vector<std::vector<std::string>>{{"python 3.9.*", "zstd"}, {"pip", "curl"}}) {
    SolveTask eager_task, lazy_task;
    eager_task.repos = c.repos();
    for (const auto& d : *lazy) lazy_task.repos.push_back({d.channel, d.subdir, 0, nullptr, d.index.get()});
    for (auto* t : {&eager_task, &lazy_task}) {
      t->virtual_packages = {{"__glibc", "2.28", "0"}, {"__unix", "0", "0"}};
      for (const auto& s : spec_set) t->specs.push_back(spec(s));
    }
    auto eager = solve(eager_task);
    auto lazy_out = solve(lazy_task);
    ASSERT_TRUE(eager.ok() && eager->solved);
    ASSERT_TRUE(lazy_out.ok() && lazy_out->solved);
    ASSERT_EQ(eager->solution.packages.size(), lazy_out->solution.packages.size());
    for (std::size_t i = 0; i < eager->solution.packages.size(); ++i) {
      EXPECT_EQ(*eager->solution.packages[i].record, *lazy_out->solution.packages[i].record);
      // A lazy answer points into the index's records of that name.
      const auto& p = lazy_out->solution.packages[i];
      EXPECT_EQ(&(*lazy)[p.repo].index->records(p.record->name)[p.index], p.record);
    }
  }
  // Only the names reachable from the requests were ever parsed.
  const RepodataIndex& linux = *(*lazy)[0].index;
  EXPECT_GT(linux.parsed_names(), 5u);
  EXPECT_LT(linux.parsed_names(), linux.names().size()) << linux.parsed_names() << " of " << linux.names().size();
  // Search over a lazy repo gives what it gives over eager records.
  std::vector<SolverRepo> lazy_repos;
  for (const auto& d : *lazy) lazy_repos.push_back({d.channel, d.subdir, 0, nullptr, d.index.get()});
  for (const char* q : {"python >=3.9", "lib*", "zstd"}) {
    auto a = find_records(c.repos(), *MatchSpec::parse(q));
    auto b = find_records(lazy_repos, *MatchSpec::parse(q));
    ASSERT_EQ(a.size(), b.size()) << q;
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(*a[i], *b[i]) << q;
  }
}

TEST(SolverCorpus, PytorchChannelSearchAndTrackFeatures) {
  ENVLOCK_REQUIRE_CORPUS();
  auto text = testing::slurp(testing::corpus_repodata_dir() / "conda__rattler/test-data__channels__pytorch__linux-64__repodata.json");
  auto data = parse_repodata(text, "pytorch/linux-64/repodata.json", "https://conda.anaconda.org/pytorch", "linux-64");
  ASSERT_TRUE(data.ok()) << data.error().to_string();
  std::vector<SolverRepo> repos{{data->channel, "linux-64", 0, &data->records}};
  auto found = find_records(repos, *MatchSpec::parse("magma-cuda1*"));
  ASSERT_FALSE(found.empty());
  for (std::size_t i = 1; i < found.size(); ++i) {
    if (found[i - 1]->name == found[i]->name) {
      EXPECT_GE(found[i - 1]->version, found[i]->version);
    }
  }
  // cuda92 exists only as a track_features marker package; it is still installable on its own.
  SolveTask t;
  t.repos = repos;
  t.specs = {spec("cuda92")};
  auto out = solve(t);
  ASSERT_TRUE(out.ok() && out->solved) << (out.ok() ? out->explanation.to_text() : out.error().to_string());
  EXPECT_EQ(picked(*out).count("cuda92"), 1u);
}

}  // namespace
}  // namespace envlock
