// `envlock diff` and `envlock show` end to end: formats, --fail-on exit codes, stdin, REV:PATH,
// prefixes, and errors (exit 2 with file and line).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

#include "envlock/readers.hpp"
#include "envlock/url.hpp"
#include "support/lockfile_fixtures.hpp"
#include "support/pip_prefix.hpp"
#include "support/run_command.hpp"
#include "snapshot/fake_host.hpp"

namespace fs = std::filesystem;
using envlock::testing::envlock_cmd;
using envlock::testing::run_command;

namespace {

fs::path lockfiles() { return fs::path(ENVLOCK_SHARED_DIR) / "corpus" / "lockfiles"; }

#define REQUIRE_CORPUS()                                                                      \
  if (!fs::is_directory(lockfiles()))                                                         \
  GTEST_SKIP() << "the shared corpus (" << lockfiles().string()                               \
               << ") is absent; the real-lockfile CLI tests need ../shared/corpus/lockfiles"

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("envlock-diff-cli-" + std::to_string(::getpid()) + "-" +
                                         std::to_string(counter_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return path_ / name;
  }

 private:
  fs::path path_;
  static inline int counter_ = 0;
};

const std::string kZlib =
    "https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda";
const std::string kTorchCuda =
    "https://conda.anaconda.org/conda-forge/linux-64/pytorch-2.1.2-cuda118_py311h0123abc_300.conda";
const std::string kTorchCpu =
    "https://conda.anaconda.org/conda-forge/linux-64/pytorch-2.1.2-cpu_mkl_py311h0123abc_100.conda";

std::string explicit_file(const std::vector<std::string>& lines) {
  std::string t = "# platform: linux-64\n@EXPLICIT\n";
  for (const auto& l : lines) t += l + "\n";
  return t;
}

}  // namespace

TEST(DiffCli, FailOnExitCodes) {
  TempDir dir;
  const std::string h1(64, '1'), h2(64, '2');
  auto old_f = dir.write("old.txt", explicit_file({kZlib + "#" + h1, kTorchCuda + "#" + h1}));
  auto same = dir.write("same.txt", explicit_file({kTorchCuda + "#" + h1, kZlib + "#" + h1}));
  auto hash = dir.write("hash.txt", explicit_file({kZlib + "#" + h2, kTorchCuda + "#" + h1}));
  auto variant = dir.write("variant.txt", explicit_file({kZlib + "#" + h1, kTorchCpu + "#" + h1}));
  const std::string gate = " --fail-on downgraded,re-uploaded,hash-changed,variant-switch";

  auto r = run_command(envlock_cmd() + " diff " + q(old_f) + " " + q(same) + gate);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "no changes");

  r = run_command(envlock_cmd() + " diff " + q(old_f) + " " + q(hash) + gate);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("re-uploaded"), std::string::npos) << r.out;  // the same URL, another sha256
  EXPECT_NE(r.err.find("failing on 1 change (1 re-uploaded)"), std::string::npos) << r.err;

  r = run_command(envlock_cmd() + " diff " + q(old_f) + " " + q(variant) + gate);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("variant-switch"), std::string::npos) << r.out;

  // A kind outside the gate: rebuilt passes a gate on downgraded only; `any` fails.
  r = run_command(envlock_cmd() + " diff " + q(old_f) + " " + q(variant) + " --fail-on downgraded");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_command(envlock_cmd() + " diff " + q(old_f) + " " + q(variant) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  // Without --fail-on a diff always exits 0.
  r = run_command(envlock_cmd() + " diff " + q(old_f) + " " + q(hash));
  EXPECT_EQ(r.exit_code, 0) << r.err;

  r = run_command(envlock_cmd() + " diff " + q(old_f) + " " + q(hash) + " --fail-on bogus");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown change kind 'bogus'"), std::string::npos) << r.err;
}

TEST(DiffCli, JsonMarkdownAndNoColorByDefaultOffATty) {
  TempDir dir;
  const std::string h1(64, '1');
  auto a = dir.write("a.txt", explicit_file({kZlib + "#" + h1, kTorchCuda + "#" + h1}));
  auto b = dir.write("b.txt", explicit_file({kTorchCpu + "#" + h1}));
  auto r = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b) + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "envlock-diff/1");
  EXPECT_EQ(j["summary"]["changes"], 2);
  EXPECT_EQ(j["summary"]["by_kind"]["removed"], 1);
  EXPECT_EQ(j["summary"]["by_kind"]["variant-switch"], 1);
  EXPECT_EQ(j["old"]["format"], "@EXPLICIT");
  const auto& ch = j["groups"][0]["changes"];
  EXPECT_EQ(ch[0]["name"], "pytorch");
  EXPECT_EQ(ch[0]["flags"], nlohmann::json::array({"rebuilt"}));
  EXPECT_EQ(ch[0]["old"]["build"], "cuda118_py311h0123abc_300");
  EXPECT_EQ(ch[0]["new"]["build"], "cpu_mkl_py311h0123abc_100");
  // --json (global) is the same as --format json
  auto r2 = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b) + " --json");
  EXPECT_EQ(r2.out, r.out);

  auto md = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b) + " --format markdown");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| environment | platform |"), std::string::npos);
  EXPECT_NE(md.out.find("<details><summary>default / linux-64"), std::string::npos);

  auto text = run_command(envlock_cmd() + " diff " + q(a) + " " + q(b));
  EXPECT_EQ(text.out.find("\x1b["), std::string::npos) << "colour written to a pipe";
}

TEST(DiffCli, StdinAndGitRevisions) {
  TempDir dir;
  const std::string h1(64, '1'), h2(64, '2');
  dir.write("env.txt", explicit_file({kZlib + "#" + h1}));
  const std::string git = "cd " + q(dir.path()) +
                          " && git -c init.defaultBranch=main init -q . && git add env.txt && "
                          "git -c user.name=t -c user.email=t@example.invalid commit -q -m one";
  ASSERT_EQ(run_command(git).exit_code, 0);
  dir.write("env.txt", explicit_file({kZlib + "#" + h2}));

  auto r = run_command("cd " + q(dir.path()) + " && " + envlock_cmd() + " diff HEAD:env.txt env.txt --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["old"]["source"], "HEAD:env.txt");
  EXPECT_EQ(j["summary"]["by_kind"]["re-uploaded"], 1);

  r = run_command("cd " + q(dir.path()) + " && cat env.txt | " + envlock_cmd() + " diff HEAD:env.txt -");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("re-uploaded"), std::string::npos);

  r = run_command("cd " + q(dir.path()) + " && " + envlock_cmd() + " diff HEAD:missing.lock env.txt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("HEAD:missing.lock: git cannot show 'missing.lock' at revision 'HEAD'"),
            std::string::npos) << r.err;
  r = run_command("cd " + q(dir.path()) + " && " + envlock_cmd() + " diff nosuchrev:env.txt env.txt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nosuchrev:env.txt"), std::string::npos) << r.err;
}

// An envlock.lock whose channel is a path relative to its folder (the README's example lockfile
// has `../../build/fixture-channel`) reads the same from the working tree, from git (REV:PATH:
// against PATH's folder in the working tree) and from standard input (against the current
// folder): an unchanged copy is no change, not a channel-changed per package (docs/review.md).
TEST(DiffCli, RelativeChannelsResolveAlikeFromFilesGitAndStdin) {
  TempDir dir;
  const fs::path repo = dir.path() / "repo";
  const fs::path sub = repo / "sub";
  fs::create_directories(sub);
  const std::string channel = envlock::file_url_from_path((repo / "build/fixture channel").string());
  envlock::Lockfile lf = envlock::testing::one_package_lockfile(channel);
  lf.relative_channels = {channel};
  const std::string text = lf.to_yaml(sub);
  ASSERT_NE(text.find("channel: \"../build/fixture channel\"\n"), std::string::npos) << text;
  std::ofstream(sub / "envlock.lock") << text;
  const std::string git = "cd " + q(repo) +
                          " && git -c init.defaultBranch=main init -q . && git add sub/envlock.lock && "
                          "git -c user.name=t -c user.email=t@example.invalid commit -q -m one";
  ASSERT_EQ(run_command(git).exit_code, 0);

  struct Case {
    fs::path cwd;
    std::string args;
  };
  for (const Case& c : {Case{repo, "sub/envlock.lock sub/envlock.lock"},
                        Case{repo, "HEAD:sub/envlock.lock sub/envlock.lock"},
                        Case{sub, "HEAD:sub/envlock.lock envlock.lock"},   // PATH is from the top level
                        Case{sub, "HEAD:./envlock.lock envlock.lock"},     // ./ : from the current folder
                        Case{repo, "sub/envlock.lock HEAD:sub/envlock.lock"},
                        Case{sub, "- envlock.lock < envlock.lock"},
                        Case{sub, "envlock.lock - < envlock.lock"},
                        Case{sub, "HEAD:sub/envlock.lock - < envlock.lock"}}) {
    const auto r = run_command("cd " + q(c.cwd) + " && " + envlock_cmd() + " diff " + c.args);
    EXPECT_EQ(r.exit_code, 0) << c.args << "\n" << r.err;
    EXPECT_TRUE(r.out.starts_with("no changes\n")) << "in " << c.cwd << ": diff " << c.args << "\n" << r.out;
    EXPECT_EQ(r.out.find("channel-changed"), std::string::npos) << c.args << "\n" << r.out;
  }
  // `show` prints the channel as the file holds it, from the working tree and from git alike
  // (git's textconv hands it a temporary copy: ShowCli.GitTextconvWithARelativeChannelIsExact).
  const auto shown = run_command("cd " + q(sub) + " && " + envlock_cmd() + " show HEAD:sub/envlock.lock --json");
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(shown.out.find(channel), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("\"channel\": \"../build/fixture channel\""), std::string::npos) << shown.out;

  // A real change is still reported, and only it.
  std::string changed = text;
  changed.replace(changed.find(std::string(64, 'a')), 64, std::string(64, 'b'));
  std::ofstream(sub / "envlock.lock") << changed;
  const auto r = run_command("cd " + q(repo) + " && " + envlock_cmd() + " diff HEAD:sub/envlock.lock sub/envlock.lock");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("1 change: 1 re-uploaded")) << r.out;
}

TEST(DiffCli, BadInputExitsTwoWithFileAndLine) {
  TempDir dir;
  auto good = dir.write("good.txt", explicit_file({kZlib + "#" + std::string(64, '1')}));
  auto bad = dir.write("bad.txt", "@EXPLICIT\nnot-a-url\n");
  auto r = run_command(envlock_cmd() + " diff " + q(good) + " " + q(bad));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(bad.string() + ":2:1: expected a package URL"), std::string::npos) << r.err;
  r = run_command(envlock_cmd() + " diff " + q(good) + " " + q(dir.path() / "absent.lock"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no such file or directory"), std::string::npos) << r.err;
}

// A snapshot bundle given to `envlock diff`: the error says so and points to `envlock snapshot
// diff`, which reads bundles (not to package-archive tools).
TEST(DiffCli, ASnapshotBundlePointsToSnapshotDiff) {
  TempDir dir;
  auto good = dir.write("good.txt", explicit_file({kZlib + "#" + std::string(64, '1')}));
  const std::string zstd("\x28\xb5\x2f\xfd\x04\x58\x00\x00", 8);
  auto bundle = dir.write("train.tar.zst", zstd);
  auto r = run_command(envlock_cmd() + " diff " + q(bundle) + " " + q(good));
  EXPECT_EQ(r.exit_code, 2) << r.err;  // diff's own code for an input it cannot read (docs/review.md)
  EXPECT_NE(r.err.find("error: " + bundle.string() + ": this is zstd-compressed data (by its name, an envlock snapshot bundle), not a lockfile"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("hint: an envlock snapshot bundle (`envlock snapshot capture --bundle`) is compared with `envlock snapshot diff A B`"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("cph extract"), std::string::npos) << r.err;
  // Another name: still zstd data, still the same pointer.
  auto other = dir.write("data.bin", zstd);
  r = run_command(envlock_cmd() + " show " + q(other));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(": this is zstd-compressed data, not a lockfile"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("`envlock snapshot diff A B`"), std::string::npos) << r.err;
}

TEST(DiffCli, ReviewFindingsExitTwo) {
  TempDir dir;
  auto good = dir.write("good.txt", explicit_file({kZlib + "#" + std::string(64, '1')}));
  // A package line repeated: before, "no changes" and exit 0.
  auto dup = dir.write("dup.txt", explicit_file({kZlib + "#" + std::string(64, '1'), kZlib + "#" + std::string(64, '1')}));
  auto r = run_command(envlock_cmd() + " diff " + q(good) + " " + q(dup));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find(dup.string() + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("duplicated package 'zlib'"), std::string::npos) << r.err;
  // `--fail-on ""` (an empty CI variable) is a usage error like `--fail-on ","`.
  for (const char* arg : {"''", "','"}) {
    r = run_command(envlock_cmd() + " diff " + q(good) + " " + q(good) + " --fail-on " + arg);
    EXPECT_EQ(r.exit_code, 2) << arg << ": " << r.err;
    EXPECT_NE(r.err.find("--fail-on"), std::string::npos) << r.err;
  }
  // A package archive is named as one, not as a YAML error.
  auto archive = dir.write("zlib-1.3.1-hb9d3cd8_2.conda", std::string("PK\x03\x04\x14\0\0\0\x08\0\\t", 12));
  r = run_command(envlock_cmd() + " diff " + q(good) + " " + q(archive));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("this is a package archive (.conda, a zip file), not a lockfile"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("YAML"), std::string::npos) << r.err;
}

TEST(DiffCli, EmptyNoColorKeepsColourOnATerminal) {
  // A real terminal is needed (colour is only on for a tty); script(1) is the portable way to get one.
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "needs script(1) for a terminal";
  TempDir dir;
  auto a = dir.write("a.txt", explicit_file({kZlib + "#" + std::string(64, '1')}));
  auto b = dir.write("b.txt", explicit_file({kZlib + "#" + std::string(64, '2')}));
  auto on_tty = [&](const std::string& env) {
    const std::string inner = env + " " + envlock_cmd() + " diff " + q(a) + " " + q(b);
    return run_command("script -qec \"" + inner + "\" /dev/null").out;
  };
  EXPECT_NE(on_tty("NO_COLOR=").find("\x1b["), std::string::npos);   // empty: colour stays on
  EXPECT_EQ(on_tty("NO_COLOR=1").find("\x1b["), std::string::npos);  // non-empty: off
}

TEST(DiffCli, CorpusPairsThroughTheCli) {
  REQUIRE_CORPUS();
  auto r = run_command(envlock_cmd() + " diff " +
                       q(lockfiles() / "conda__rattler/test-data__conda-lock__v5__stability-original.yml") + " " +
                       q(lockfiles() / "conda__rattler/test-data__conda-lock__v5__stability-shuffled.yml") +
                       " --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "no changes");

  r = run_command(envlock_cmd() + " diff " + q(lockfiles() / "mamba-org__mamba/libmamba__tests__data__env_lockfile__good_one_package-lock.yaml") +
                  " " + q(lockfiles() / "conda__rattler/test-data__conda-lock__forward-compatible-lock.yml"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("forward-compatible-lock.yml:11:10: lockfile format version 1000"), std::string::npos) << r.err;
}

// docs/review.md's textconv, run by the real `git diff`: a lockfile whose channel is a local folder
// relative to it (`../build/fixture channel`, as `envlock lock` writes a manifest's relative
// channel) shows exactly the one package that changed. Before, git's temporary copy of the old
// side resolved the channel under /tmp and every line differed.
TEST(ShowCli, GitTextconvWithARelativeChannelIsExact) {
  TempDir dir;
  const fs::path repo = dir.path() / "repo";
  const fs::path sub = repo / "sub";
  fs::create_directories(sub);
  const std::string channel = envlock::file_url_from_path((repo / "build/fixture channel").string());
  envlock::Lockfile lf = envlock::testing::one_package_lockfile(channel);
  lf.relative_channels = {channel};
  const std::string text = lf.to_yaml(sub);
  std::ofstream(sub / "envlock.lock") << text;
  std::ofstream(repo / ".gitattributes") << "envlock.lock      diff=envlock\nconda-lock.yml    diff=envlock\n";
  const std::string git = "cd " + q(repo) + " && git -c init.defaultBranch=main init -q . && git config diff.envlock.textconv " +
                          q(std::string(ENVLOCK_BINARY) + " show") +
                          " && git config diff.envlock.cachetextconv true && git add . && "
                          "git -c user.name=t -c user.email=t@example.invalid commit -q -m one";
  ASSERT_EQ(run_command(git).exit_code, 0);
  std::string changed = text;
  changed.replace(changed.find(std::string(64, 'a')), 64, std::string(64, 'b'));
  std::ofstream(sub / "envlock.lock") << changed;
  for (const char* cwd : {"", "/sub"}) {
    const auto r = run_command("cd " + q(repo.string() + cwd) + " && git diff --no-color HEAD -- . | sed '/^index /d'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "diff --git a/sub/envlock.lock b/sub/envlock.lock\n"
                     "--- a/sub/envlock.lock\n"
                     "+++ b/sub/envlock.lock\n"
                     "@@ -1,2 +1,2 @@\n"
                     " default/linux-64  channel ../build/fixture channel\n"
                     "-default/linux-64 tool 1.2 h0_0 ../build/fixture channel sha256:" + std::string(64, 'a') + "\n"
                     "+default/linux-64 tool 1.2 h0_0 ../build/fixture channel sha256:" + std::string(64, 'b') + "\n")
        << "git diff from " << repo.string() + cwd;
    EXPECT_EQ(r.err, "");
  }
  // Unchanged: git diff is empty (the two sides print the same, wherever each copy sits).
  std::ofstream(sub / "envlock.lock") << text;
  const auto same = run_command("cd " + q(repo) + " && git diff --no-color HEAD");
  EXPECT_EQ(same.exit_code, 0);
  EXPECT_EQ(same.out, "");
}

TEST(ShowCli, NormalizedViewIsTheSameAcrossFormatsAndOrder) {
  REQUIRE_CORPUS();
  auto a = run_command(envlock_cmd() + " show " + q(lockfiles() / "conda__rattler/test-data__conda-lock__v5__stability-original.yml"));
  auto b = run_command(envlock_cmd() + " show " + q(lockfiles() / "conda__rattler/test-data__conda-lock__v5__stability-shuffled.yml"));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out.find("default/osx-arm64 bzip2 1.0.8 h93a5062_5 https://conda.anaconda.org/conda-forge "
                       "sha256:bfa84296a638bea78a8bb29abc493ee95f2a0218775642474a840411b950fe5f\n"),
            std::string::npos) << a.out;
  auto bad = run_command(envlock_cmd() + " show " + q(lockfiles() / "prefix-dev__pixi/examples__pypi__pixi.toml"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("TOML table header"), std::string::npos);
}

// A prefix before and after `pip install`: diff sees the pip side, show lists it, and a damaged
// dist-info is a warning naming its file, not a failure.
TEST(DiffCli, PrefixPipSideBeforeAndAfterPipInstall) {
  envlock::testing::PipPrefix before, after;
  after.dist_info("Foo_Bar", "1.2.0", "pip");
  const auto broken = after.dist_info("broken", "3.0", "pip");
  fs::remove(broken / "METADATA");
  const auto d = run_command(envlock_cmd() + " diff " + q(before.path()) + " " + q(after.path()) + " --format json");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const auto j = nlohmann::json::parse(d.out);
  ASSERT_EQ(j["groups"].size(), 1u);
  ASSERT_EQ(j["groups"][0]["changes"].size(), 1u) << d.out;
  EXPECT_EQ(j["groups"][0]["changes"][0]["name"], "Foo_Bar");
  EXPECT_EQ(j["groups"][0]["changes"][0]["kind"], "added");
  EXPECT_NE(d.err.find("warning: " + (after.path() / envlock::testing::PipPrefix::kSite / "broken-3.0.dist-info/METADATA").string() +
                       ": missing"),
            std::string::npos)
      << d.err;
  const auto s = run_command(envlock_cmd() + " show " + q(after.path()));
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.out.find("Foo_Bar 1.2.0"), std::string::npos) << s.out;
  EXPECT_EQ(s.out.find("six 1.16.0 pyhd8ed1ab_1"), s.out.rfind("six 1.16.0")) << "six is listed once, as conda\n" << s.out;
}

// `envlock list -p` shows the pip side as conda list does: channel "pypi", kind "pypi" in JSON;
// a conda package's own dist-info (six) stays one conda row.
TEST(DiffCli, ListPrefixShowsPipPackages) {
  envlock::testing::PipPrefix prefix;
  prefix.dist_info("Foo_Bar", "1.2.0", "pip");
  const auto j = run_command(envlock_cmd() + " list -p " + q(prefix.path()) + " --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto rows = nlohmann::json::parse(j.out);
  ASSERT_EQ(rows.size(), 3u) << j.out;
  EXPECT_EQ(rows[0]["name"], "Foo_Bar");
  EXPECT_EQ(rows[0]["kind"], "pypi");
  EXPECT_EQ(rows[0]["version"], "1.2.0");
  EXPECT_EQ(rows[0]["channel"], "pypi");
  EXPECT_EQ(rows[1]["name"], "python");
  EXPECT_EQ(rows[1]["kind"], "conda");
  EXPECT_EQ(rows[2]["name"], "six");
  EXPECT_EQ(rows[2]["kind"], "conda");
  EXPECT_EQ(rows[2]["build"], "pyhd8ed1ab_1");
  const auto t = run_command(envlock_cmd() + " list -p " + q(prefix.path()));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("Foo_Bar  1.2.0"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("pypi\n"), std::string::npos) << t.out;
}

// Two dist-info folders of one project (pip left the old one behind): `list -p` shows the newest
// only, as snapshot capture keeps it, and warns naming the stale folder and the one kept.
TEST(DiffCli, ListPrefixKeepsTheNewestOfTwoDistInfos) {
  envlock::testing::PipPrefix prefix;
  prefix.dist_info("dup", "1.0", "pip");
  prefix.dist_info("dup", "2.0", "pip");
  prefix.dist_info("other", "1.10", "pip");
  prefix.dist_info("other", "1.9", "pip");
  const std::string site = envlock::testing::PipPrefix::kSite;
  const auto j = run_command(envlock_cmd() + " list -p " + q(prefix.path()) + " --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto rows = nlohmann::json::parse(j.out);
  std::vector<std::string> pip;
  for (const auto& row : rows) {
    if (row["kind"] == "pypi") pip.push_back(row["name"].get<std::string>() + " " + row["version"].get<std::string>());
  }
  EXPECT_EQ(pip, (std::vector<std::string>{"dup 2.0", "other 1.10"})) << j.out;
  for (const auto& [stale, kept] : {std::pair<std::string, std::string>{"dup-1.0", "dup-2.0"}, {"other-1.9", "other-1.10"}}) {
    EXPECT_NE(j.err.find("warning: " + (prefix.path() / site / (stale + ".dist-info")).string() + ": a second dist-info of " +
                         stale.substr(0, stale.find('-')) + " (" + stale.substr(stale.find('-') + 1) + ") beside " + site + "/" +
                         kept + ".dist-info; left out of the pip packages (remove the stale folder)"),
              std::string::npos)
        << j.err;
  }
  const auto t = run_command(envlock_cmd() + " list -p " + q(prefix.path()));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("\ndup     2.0 "), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find(" 1.0 "), std::string::npos) << t.out;
  EXPECT_NE(t.err.find("dup-1.0.dist-info: a second dist-info of dup (1.0)"), std::string::npos) << t.err;
}

// `envlock list -l` lists a lockfile's pip entries too: a pinned one with its version, an
// unresolved one with its requirement text (JSON "requirement", version empty).
TEST(DiffCli, ListLockfileShowsPipEntries) {
  auto lock = envlock::testing::one_package_lockfile("https://conda.anaconda.org/conda-forge");
  auto& lp = lock.environments["default"].platforms["linux-64"];
  lp.pip = {envlock::PipPackage{"requests", "2.31.0", "", "", "requests==2.31.0"},
            envlock::PipPackage{"torch", "", "", "", "torch>=2"}};
  const fs::path file = fs::temp_directory_path() / ("envlock-list-pip-" + std::to_string(::getpid()) + ".lock");
  ASSERT_TRUE(lock.write(file)) << "write " << file;
  const auto j = run_command(envlock_cmd() + " list -l " + q(file) + " --platform linux-64 --json");
  const auto t = run_command(envlock_cmd() + " list -l " + q(file) + " --platform linux-64");
  fs::remove(file);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto rows = nlohmann::json::parse(j.out);
  ASSERT_EQ(rows.size(), 3u) << j.out;
  EXPECT_EQ(rows[0]["name"], "requests");
  EXPECT_EQ(rows[0]["kind"], "pypi");
  EXPECT_EQ(rows[0]["version"], "2.31.0");
  EXPECT_TRUE(rows[0]["requirement"].is_null());
  EXPECT_EQ(rows[1]["name"], "tool");
  EXPECT_EQ(rows[1]["kind"], "conda");
  EXPECT_EQ(rows[2]["name"], "torch");
  EXPECT_EQ(rows[2]["version"], "");
  EXPECT_EQ(rows[2]["requirement"], "torch>=2");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("torch     torch>=2"), std::string::npos) << t.out;
}

// A newcomer's environment.yml with pip lines that carry credentials, options and bare URLs, end
// to end: `lock` writes every line credential-free, invents no name (`-e .` has none, a bare
// archive URL is named by its file), and `show`, `list`, `diff` and `install` name such a line
// by its text and never print a token — nor report a credential-only difference as a change.
// The `--extra-index-url` line is the environment's PyPI index since issue 20 (docs/manifest.md,
// `pypi-indexes`), read into the manifest's model like pip's requirement-file options, not
// carried as a pip entry; its credential-free form is in the manifest hash.
TEST(DiffCli, PipLinesEndToEndWithoutCredentialsOrInventedNames) {
  TempDir t;
  const std::map<std::string, std::string> env = {{"ENVLOCK_PKGS_DIR", (t.path() / "pkgs").string()},
                                                  {"ENVLOCK_CACHE_DIR", (t.path() / "cache").string()},
                                                  {"NO_COLOR", "1"}};
  auto made = run_command(q(fs::path(ENVLOCK_SOURCE_DIR) / "scripts/make-fixture-channel") + " " + q(t.path() / "channel"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  t.write("environment.yml",
          "name: newcomer\n"
          "channels: [./channel]\n"
          "platforms: [linux-64]\n"
          "dependencies:\n"
          "  - envlock-greet\n"
          "  - pip:\n"
          "    - -e .\n"
          "    - --extra-index-url https://bob:PW_SECRET_888@pypi.corp.example.com/simple\n"
          "    - https://carol:TOKEN_SECRET_999@files.example.com/pkg-1.0.tar.gz\n"
          "    - mypkg @ git+https://alice:ghp_SECRET777@github.com/acme/mypkg.git@main\n");
  const fs::path lockfile = t.path() / "envlock.lock";
  auto locked = run_command(envlock_cmd() + " lock -f " + q(t.path() / "environment.yml") + " -o " + q(lockfile), env);
  ASSERT_EQ(locked.exit_code, 0) << locked.err;
  EXPECT_EQ(locked.err.find("SECRET"), std::string::npos) << locked.err;
  std::ifstream in(lockfile);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("SECRET"), std::string::npos) << text;
  EXPECT_EQ(text.find("name: \"\""), std::string::npos) << text;
  EXPECT_EQ(text.find("name: https"), std::string::npos) << text;
  EXPECT_NE(text.find("        pip:\n"
                      "          - requirement: \"-e .\"\n"
                      "          - name: mypkg\n"
                      "            url: git+https://github.com/acme/mypkg.git@main\n"
                      "            requirement: mypkg @ git+https://github.com/acme/mypkg.git@main\n"
                      "          - name: pkg\n"
                      "            url: https://files.example.com/pkg-1.0.tar.gz\n"
                      "            requirement: https://files.example.com/pkg-1.0.tar.gz\n"),
            std::string::npos)
      << text;

  const auto show = run_command(envlock_cmd() + " show " + q(lockfile), env);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("default/linux-64 pip -e .\n"), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find("extra-index-url"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("default/linux-64 pypi:pkg - https://files.example.com/pkg-1.0.tar.gz -\n"), std::string::npos)
      << show.out;
  EXPECT_EQ(show.out.find("pypi: "), std::string::npos) << show.out;

  const auto list = run_command(envlock_cmd() + " list -l " + q(lockfile) + " --platform linux-64 --json", env);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::vector<std::string> names;
  for (const auto& row : nlohmann::json::parse(list.out)) names.push_back(row["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"-e .", "envlock-greet", "envlock-hello", "mypkg", "pkg"}));

  // The prefix has mypkg from the same repository, installed with another token.
  envlock::testing::PipPrefix prefix;
  const auto vcs = prefix.dist_info("mypkg", "0.3", "pip");
  prefix.write(vcs / "direct_url.json",
               R"({"url": "https://alice:ghp_SECRETTOKEN123@github.com/acme/mypkg.git",
                   "vcs_info": {"vcs": "git", "commit_id": "0123456789abcdef0123456789abcdef01234567"}})");
  for (const std::string format : {"text", "markdown", "json"}) {
    const auto d = run_command(envlock_cmd() + " diff " + q(lockfile) + " " + q(prefix.path()) + " --format " + format, env);
    EXPECT_EQ(d.exit_code, 0) << d.err;
    EXPECT_EQ(d.out.find("SECRET"), std::string::npos) << d.out;
    EXPECT_EQ(d.out.find("mypkg"), std::string::npos) << "a credential-only difference is no change\n" << d.out;
    EXPECT_EQ(d.out.find("pypi:`"), std::string::npos) << d.out;
    EXPECT_NE(d.out.find(format == "json" ? "\"name\": \"-e .\"" : "pip -e ."), std::string::npos) << d.out;
  }

  const auto installed = run_command(envlock_cmd() + " install -l " + q(lockfile) + " -p " + q(t.path() / "env"), env);
  ASSERT_EQ(installed.exit_code, 0) << installed.err;
  EXPECT_EQ(installed.err.find("SECRET"), std::string::npos) << installed.err;
  EXPECT_NE(installed.err.find("3 pip package(s) in the lockfile were not installed"), std::string::npos) << installed.err;
  EXPECT_NE(installed.err.find("-e ."), std::string::npos) << installed.err;
}

namespace {

// The real osx-arm64 python 3.13t prefix of conda's env_metadata tests (conda wrote its
// conda-meta: every `channel` ends in the subdir) and what `conda list --explicit --md5` prints for
// it: each record's URL and md5.
struct CorpusPrefix {
  envlock::testing::FakeHost host;
  fs::path prefix;
  std::string explicit_text = "# platform: osx-arm64\n@EXPLICIT\n";
  CorpusPrefix() {
    host.corpus_prefix("/env");
    prefix = host.local("/env");
    std::vector<std::string> lines;
    for (const auto& e : fs::directory_iterator(prefix / "conda-meta")) {
      if (e.path().extension() != ".json") continue;
      const auto j = nlohmann::json::parse(envlock::testing::slurp(e.path()));
      lines.push_back(j.at("url").get<std::string>() + "#" + j.at("md5").get<std::string>());
    }
    std::sort(lines.begin(), lines.end());
    for (const auto& l : lines) explicit_text += l + "\n";
  }
};

}  // namespace

// A prefix compares like its lockfile (issue 17): conda's `channel` with the subdir
// (`https://conda.anaconda.org/conda-forge/osx-arm64`) is the lockfile's channel, so the only change
// between the prefix and its own `conda list --explicit` is the pip package that list leaves out.
TEST(DiffCli, APrefixAgainstItsOwnExplicitListIsOnlyItsPipSide) {
  REQUIRE_CORPUS();
  CorpusPrefix c;
  TempDir dir;
  const auto lock = dir.write("explicit.txt", c.explicit_text);
  const auto r = run_command(envlock_cmd() + " diff " + q(lock) + " " + q(c.prefix));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "1 change: 1 added; size unknown\n"
                   "old: " + lock.string() + " (@EXPLICIT)\n"
                   "new: " + c.prefix.string() + " (conda-meta prefix)\n"
                   "\n"
                   "default / osx-arm64: 1 change, size unknown (16 -> 17 packages)\n"
                   "    added" + std::string(25, ' ') + "pypi:imagesize  1.4.1\n");
  // The prefix against itself and against a copy that conda would write without the subdir.
  const auto same = run_command(envlock_cmd() + " diff " + q(c.prefix) + " " + q(c.prefix) + " --fail-on any");
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_TRUE(same.out.starts_with("no changes\n")) << same.out;
  const auto show = run_command(envlock_cmd() + " show " + q(c.prefix));
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("default/osx-arm64 tzdata 2025a h78e105d_0 https://conda.anaconda.org/conda-forge sha256:"),
            std::string::npos) << show.out;
  EXPECT_EQ(show.out.find("conda-forge/osx-arm64 "), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find("conda-forge/noarch "), std::string::npos) << show.out;
}

// A prefix of noarch packages alone takes the other side's platform; a prefix envlock made pairs
// with the environment it was installed from (conda-meta/envlock), and `-e ENV` chooses one.
TEST(DiffCli, PrefixPlatformAndEnvironmentPairing) {
  REQUIRE_CORPUS();
  CorpusPrefix c;
  TempDir dir;
  // Only the two noarch records (pip, tzdata), and no pip side.
  for (const auto& e : fs::directory_iterator(c.prefix / "conda-meta")) {
    const std::string n = e.path().filename().string();
    if (e.path().extension() == ".json" && !n.starts_with("pip-") && !n.starts_with("tzdata-")) fs::remove(e.path());
  }
  fs::remove_all(c.prefix / "lib");
  std::string noarch_list = "# platform: osx-arm64\n@EXPLICIT\n";
  for (const auto& l : {std::string("pip-"), std::string("tzdata-")}) {
    const auto at = c.explicit_text.find("/noarch/" + l);
    const auto start = c.explicit_text.rfind('\n', at) + 1;
    noarch_list += c.explicit_text.substr(start, c.explicit_text.find('\n', at) + 1 - start);
  }
  const auto lock = dir.write("noarch.txt", noarch_list);
  auto r = run_command(envlock_cmd() + " diff " + q(lock) + " " + q(c.prefix) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "no changes\n"
                   "old: " + lock.string() + " (@EXPLICIT)\n"
                   "new: " + c.prefix.string() + " (conda-meta prefix)\n"
                   "\n"
                   "default / osx-arm64: no changes (2 packages)\n");

  // A lockfile of two environments holding these records (as the lock that installed them would):
  // the prefix names the one it was installed from.
  auto read = envlock::read_lockfile_path(c.prefix);
  ASSERT_TRUE(read.ok()) << read.error().to_string();
  envlock::Lockfile two;
  for (const char* name : {"docs", "tools"}) {
    envlock::LockedEnvironment env;
    env.name = name;
    envlock::LockedPlatform plat = read->lockfile.environments.at("default").platforms.at("noarch");
    plat.platform = "osx-arm64";
    plat.channels = {"https://conda.anaconda.org/conda-forge"};
    for (auto& p : plat.packages) p.layer = name;
    env.platforms["osx-arm64"] = plat;
    two.environments[name] = env;
  }
  two.environments["docs"].platforms["osx-arm64"].packages.pop_back();  // docs lacks tzdata
  const fs::path two_path = dir.path() / "envlock.lock";
  std::ofstream(two_path) << two.to_yaml(dir.path());
  r = run_command(envlock_cmd() + " diff " + q(two_path) + " " + q(c.prefix));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + two_path.string() + ": has environments docs, tools; the prefix " + c.prefix.string() +
                       " does not say which one it was installed from\nhint: choose one with -e ENV\n");
  r = run_command(envlock_cmd() + " diff " + q(two_path) + " " + q(c.prefix) + " -e tools --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(r.out.starts_with("no changes\n")) << r.out;
  r = run_command(envlock_cmd() + " diff " + q(two_path) + " " + q(c.prefix) + " -e nope");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: " + two_path.string() +
                       ": has no environment 'nope'\nenvironments in it: docs, tools\nhint: pass one of them with -e\n");
  // conda-meta/envlock (written by install, create and snapshot deploy) names the environment.
  std::ofstream(c.prefix / "conda-meta/envlock") << R"({"command": "install", "environment": "docs", "lockfile": "envlock.lock", "lockfile_hash": "", "manifest_hash": "", "platform": "osx-arm64"})";
  r = run_command(envlock_cmd() + " diff " + q(two_path) + " " + q(c.prefix) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "1 change: 1 added; size +120.0 KiB\n"
                   "old: " + two_path.string() + " (envlock.lock v1)\n"
                   "new: " + c.prefix.string() + " (conda-meta prefix)\n"
                   "\n"
                   "docs / osx-arm64: 1 change, size +120.0 KiB (1 -> 2 packages)\n"
                   "    added" + std::string(25, ' ') + "tzdata  2025a h78e105d_0  +120.0 KiB\n");
  EXPECT_EQ(r.err, "envlock diff: failing on 1 change (1 added) (--fail-on any)\n");
}
