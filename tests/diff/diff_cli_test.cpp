// `envlock diff` and `envlock show` end to end: formats, --fail-on exit codes, stdin, REV:PATH,
// prefixes, and errors (exit 2 with file and line).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/pip_prefix.hpp"
#include "support/run_command.hpp"

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
  const std::string gate = " --fail-on downgraded,hash-changed,variant-switch";

  auto r = run_command(envlock_cmd() + " diff " + q(old_f) + " " + q(same) + gate);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "no changes");

  r = run_command(envlock_cmd() + " diff " + q(old_f) + " " + q(hash) + gate);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("hash-changed"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("failing on 1 hash-changed"), std::string::npos) << r.err;

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
  EXPECT_EQ(j["summary"]["by_kind"]["hash-changed"], 1);

  r = run_command("cd " + q(dir.path()) + " && cat env.txt | " + envlock_cmd() + " diff HEAD:env.txt -");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("hash-changed"), std::string::npos);

  r = run_command("cd " + q(dir.path()) + " && " + envlock_cmd() + " diff HEAD:missing.lock env.txt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("HEAD:missing.lock: git cannot show 'missing.lock' at revision 'HEAD'"),
            std::string::npos) << r.err;
  r = run_command("cd " + q(dir.path()) + " && " + envlock_cmd() + " diff nosuchrev:env.txt env.txt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nosuchrev:env.txt"), std::string::npos) << r.err;
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
