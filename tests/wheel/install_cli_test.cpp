// tests/wheel — `envlock install` of a lockfile whose pip entries pin wheels (a url to a .whl and
// its sha256): fetched into the wheel cache before the prefix is touched, installed with
// install_wheel() after the conda packages, kept on a second install; the fixture channel's
// python stand-in runs the installed console script. docs/pypi.md.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "envlock/encoding.hpp"
#include "envlock/hash.hpp"
#include "envlock/lockfile.hpp"
#include "support/files.hpp"
#include "support/run_command.hpp"
#include "wheel/zip_writer.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using envlock::testing::q;
using envlock::testing::slurp;
using testing::run_command;

std::string record_hash(const std::string& data) {
  return "sha256=" + base64_encode(*hex_decode(hash_bytes(data, HashAlgorithm::Sha256)), Base64Alphabet::UrlSafe, Base64Padding::No);
}

/// demo_pkg VERSION: a module and a console script that prints from it (`says`: another build);
/// 1.0 also has old.py.
fs::path write_demo_wheel(const fs::path& dir, const std::string& version = "1.0", const std::string& says = "says hello") {
  const std::string di = "demo_pkg-" + version + ".dist-info";
  std::vector<testing::ZipEntry> files = {
      {"demo_pkg/__init__.py", "def main():\n    print('demo_pkg " + version + " " + says + "')\n"},
      {di + "/METADATA", "Metadata-Version: 2.1\nName: demo-pkg\nVersion: " + version + "\n"},
      {di + "/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
      {di + "/entry_points.txt", "[console_scripts]\ndemo-cli = demo_pkg:main\n"},
  };
  if (version == "1.0") files.push_back({"demo_pkg/old/old.py", "OLD = 1\n"});
  std::string record;
  for (const auto& f : files) record += f.name + "," + record_hash(f.data) + "," + std::to_string(f.data.size()) + "\n";
  record += di + "/RECORD,,\n";
  files.push_back({di + "/RECORD", record});
  fs::create_directories(dir);
  const fs::path wheel = dir / ("demo_pkg-" + version + "-py3-none-any.whl");
  testing::write_zip(wheel, files);
  return wheel;
}

class PipInstallCli : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("envlock-pip-install-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    env_ = {{"ENVLOCK_PKGS_DIR", (root_ / "pkgs").string()}, {"XDG_CACHE_HOME", (root_ / "cache").string()}, {"NO_COLOR", "1"}};
    channel_ = root_ / "channel";
    auto r = run_command(q(fs::path(ENVLOCK_SOURCE_DIR) / "scripts/make-fixture-channel") + " " + q(channel_));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  void TearDown() override { fs::remove_all(root_); }

  /// A lockfile of the fixture channel's python and `pip`.
  fs::path write_lock(std::vector<PipPackage> pip, const std::string& name = "envlock.lock") {
    Lockfile lf;
    lf.manifest_hash = "sha256:" + std::string(64, '0');
    LockedEnvironment env;
    env.name = "default";
    LockedPlatform lp;
    lp.platform = "linux-64";
    auto j = nlohmann::json::parse(slurp(channel_ / "linux-64/repodata.json"));
    for (const char* key : {"packages", "packages.conda"}) {
      if (!j.contains(key)) continue;
      for (auto it = j[key].begin(); it != j[key].end(); ++it) {
        auto rec = PackageRecord::from_json(it.value());
        if (!rec.ok() || rec->name != "python") continue;
        LockedPackage p;
        static_cast<PackageRecord&>(p) = *rec;
        p.file_name = it.key();
        p.channel = "file://" + channel_.string();
        p.url = p.channel + "/linux-64/" + it.key();
        p.layer = "default";
        lp.packages.push_back(p);
      }
    }
    EXPECT_EQ(lp.packages.size(), 1u);
    lp.channels = {"file://" + channel_.string()};
    lp.pip = std::move(pip);
    env.platforms["linux-64"] = std::move(lp);
    lf.environments["default"] = std::move(env);
    const fs::path path = root_ / name;
    auto st = lf.write(path);
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().to_string());
    return path;
  }

  testing::CommandResult envlock(const std::string& args) { return run_command(testing::envlock_cmd() + " " + args, env_); }

  fs::path root_, channel_;
  std::map<std::string, std::string> env_;
};

TEST_F(PipInstallCli, InstallsTheLockedWheelsAfterTheCondaPackages) {
  const fs::path wheel = write_demo_wheel(root_ / "wheels");
  PipPackage demo{"demo-pkg", "1.0", "file://" + wheel.string(), hash_file(wheel, HashAlgorithm::Sha256).value(), "", {}, "", false};
  PipPackage other{"toolbox", "1.0", "", "", "", {}, "", false};
  const fs::path lock = write_lock({demo, other});
  const fs::path prefix = root_ / "env";
  auto r = envlock("install -l " + q(lock) + " -p " + q(prefix));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\n  pip: 1 installed, 0 unchanged\n"), std::string::npos) << r.out;
  // A pin without a wheel URL is still named, not installed.
  EXPECT_NE(r.err.find("warning: 1 pip package(s) in the lockfile were not installed (envlock install installs the conda packages "
                       "and the locked wheels: a url to a .whl with its sha256): toolbox==1.0;"),
            std::string::npos) << r.err;
  const std::string abs = fs::absolute(prefix).lexically_normal().string();
  const std::string script = slurp(prefix / "bin/demo-cli");
  EXPECT_TRUE(script.starts_with("#!" + abs + "/bin/python")) << script;
  auto run = run_command(q(prefix / "bin/demo-cli"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "demo_pkg 1.0 says hello\n");
  fs::path dist_info;
  for (const auto& e : fs::directory_iterator(prefix / "lib"))
    dist_info = e.path() / "site-packages/demo_pkg-1.0.dist-info";
  EXPECT_EQ(slurp(dist_info / "INSTALLER"), "envlock\n");
  EXPECT_FALSE(fs::exists(dist_info / "direct_url.json")) << "an index-style pin has no PEP 610 record";
  // The wheel cache is content-addressed.
  EXPECT_TRUE(fs::exists(root_ / "cache/envlock/wheels" / demo.sha256 / wheel.filename()) ||
              fs::exists(root_ / "cache/wheels" / demo.sha256 / wheel.filename()));

  // verify reads the pip files against the RECORD install_wheel() wrote.
  auto verify = envlock("verify -p " + q(prefix));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  const std::string init = slurp(dist_info.parent_path() / "demo_pkg/__init__.py");
  std::ofstream(dist_info.parent_path() / "demo_pkg/__init__.py") << "edited\n";
  auto drift = envlock("verify -p " + q(prefix));
  EXPECT_EQ(drift.exit_code, 1) << drift.out << drift.err;
  EXPECT_NE((drift.out + drift.err).find("demo_pkg/__init__.py"), std::string::npos) << drift.out << drift.err;
  std::ofstream(dist_info.parent_path() / "demo_pkg/__init__.py") << init;

  // Again: the distribution is there, kept.
  auto again = envlock("install -l " + q(lock) + " -p " + q(prefix));
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("\n  pip: 0 installed, 1 unchanged\n"), std::string::npos) << again.out;
  EXPECT_EQ(run_command(q(prefix / "bin/demo-cli")).out, "demo_pkg 1.0 says hello\n");

  auto json = envlock("--json install -l " + q(lock) + " -p " + q(prefix));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["pip"], nlohmann::json::parse(R"({"installed": [], "kept": ["demo_pkg==1.0"], "replaced": [], "removed": []})"));
}

// A lockfile that pins another version: the old one's files go (by its RECORD), all or nothing.
TEST_F(PipInstallCli, AnotherLockedVersionReplacesTheInstalledOne) {
  const fs::path v1 = write_demo_wheel(root_ / "wheels", "1.0");
  const fs::path v2 = write_demo_wheel(root_ / "wheels", "2.0");
  const fs::path prefix = root_ / "env";
  auto lock1 = write_lock({{"demo-pkg", "1.0", "file://" + v1.string(), hash_file(v1, HashAlgorithm::Sha256).value(), "", {}, "", false}}, "v1.lock");
  ASSERT_EQ(envlock("install -l " + q(lock1) + " -p " + q(prefix)).exit_code, 0);
  fs::path site;
  for (const auto& e : fs::directory_iterator(prefix / "lib")) site = e.path() / "site-packages";
  ASSERT_TRUE(fs::exists(site / "demo_pkg/old/old.py"));
  auto lock2 = write_lock({{"demo-pkg", "2.0", "file://" + v2.string(), hash_file(v2, HashAlgorithm::Sha256).value(), "", {}, "", false}}, "v2.lock");
  auto r = envlock("install -l " + q(lock2) + " -p " + q(prefix));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\n  pip: 1 installed, 0 unchanged, 1 replaced\n"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(site / "demo_pkg/old")) << "a folder the old version leaves empty goes with it";
  EXPECT_FALSE(fs::exists(site / "demo_pkg-1.0.dist-info"));
  EXPECT_TRUE(fs::exists(site / "demo_pkg-2.0.dist-info/RECORD"));
  EXPECT_EQ(run_command(q(prefix / "bin/demo-cli")).out, "demo_pkg 2.0 says hello\n");
  EXPECT_EQ(envlock("verify -p " + q(prefix)).exit_code, 0);
}

// A wheel upgrade alone (the conda packages unchanged) is a change of the environment (attack 23
// F6): it keeps the tree it replaces as a generation, whose record still names the lockfile it
// was installed from, and rollback brings the old version back; installing the same lockfile again
// keeps no generation. It kept none, rewrote generation 1's record to the new lockfile, and
// `rollback` said there was no older generation.
TEST_F(PipInstallCli, AWheelUpgradeAloneKeepsAGenerationThatRollbackUndoes) {
  const fs::path v1 = write_demo_wheel(root_ / "wheels", "1.0");
  const fs::path v2 = write_demo_wheel(root_ / "wheels", "2.0");
  const fs::path prefix = root_ / "env";
  auto lock1 = write_lock({{"demo-pkg", "1.0", "file://" + v1.string(), hash_file(v1, HashAlgorithm::Sha256).value(), "", {}, "", false}}, "v1.lock");
  auto lock2 = write_lock({{"demo-pkg", "2.0", "file://" + v2.string(), hash_file(v2, HashAlgorithm::Sha256).value(), "", {}, "", false}}, "v2.lock");
  ASSERT_EQ(envlock("install -l " + q(lock1) + " -p " + q(prefix)).exit_code, 0);
  auto r = envlock("install -l " + q(lock2) + " -p " + q(prefix));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\n  0 installed, 1 unchanged, 0 removed; files: 0 linked, 0 copied, 0 relocated\n"
                       "  pip: 1 installed, 0 unchanged, 1 replaced\n"),
            std::string::npos)
      << r.out;
  ASSERT_EQ(envlock("install -l " + q(lock2) + " -p " + q(prefix)).exit_code, 0) << "the same again: no generation";
  const auto untimed = [](const std::string& text) {
    return std::regex_replace(text, std::regex("\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d"), "TIME");
  };
  auto h = envlock("history -p " + q(prefix));
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(h.err, "");
  EXPECT_EQ(untimed(h.out), prefix.string() + ": 2 generations (* current)\n"
                            "     1  TIME  1 package   envlock install -l v1.lock -e default\n"
                            "*    2  TIME  1 package   envlock install -l v2.lock -e default\n");
  h = envlock("history -p " + q(prefix) + " --json");
  const auto j = nlohmann::json::parse(h.out);
  ASSERT_EQ(j["generations"].size(), 2u);
  EXPECT_EQ(j["generations"][0]["lockfile_hash"], "sha256:" + hash_file(lock1, HashAlgorithm::Sha256).value());
  EXPECT_EQ(j["generations"][1]["lockfile_hash"], "sha256:" + hash_file(lock2, HashAlgorithm::Sha256).value());
  EXPECT_EQ(run_command(q(prefix / "bin/demo-cli")).out, "demo_pkg 2.0 says hello\n");

  r = envlock("rollback -p " + q(prefix));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "rolled back " + prefix.string() + " from generation 2 to generation 1 (1 package); generation 2 is "
                   "kept: envlock rollback --to 2 returns to it\n");
  EXPECT_EQ(run_command(q(prefix / "bin/demo-cli")).out, "demo_pkg 1.0 says hello\n");
  auto verify = envlock("verify -p " + q(prefix));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(prefix / "conda-meta/envlock"))["lockfile_hash"],
            "sha256:" + hash_file(lock1, HashAlgorithm::Sha256).value());
}

// Wheels of one namespace package (PEP 420: `nspace/` has no __init__.py and each wheel adds a
// subpackage) unpack in parallel and merge into one folder; every file is there and verified.
TEST_F(PipInstallCli, WheelsOfOneNamespaceInstallTogether) {
  std::vector<PipPackage> pip;
  for (char c = 'a'; c <= 'h'; ++c) {
    const std::string name = std::string("ns_") + c, di = name + "-1.0.dist-info";
    std::vector<testing::ZipEntry> files = {
        {"nspace/" + name + "/__init__.py", "X = '" + name + "'\n"},
        {"nspace-data/" + name + ".txt", name + "\n"},
        {di + "/METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n"},
        {di + "/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"},
    };
    std::string record;
    for (const auto& f : files) record += f.name + "," + record_hash(f.data) + "," + std::to_string(f.data.size()) + "\n";
    files.push_back({di + "/RECORD", record + di + "/RECORD,,\n"});
    fs::create_directories(root_ / "wheels");
    const fs::path wheel = root_ / "wheels" / (name + "-1.0-py3-none-any.whl");
    testing::write_zip(wheel, files);
    pip.push_back({name, "1.0", "file://" + wheel.string(), hash_file(wheel, HashAlgorithm::Sha256).value(), "", {}, "", false});
  }
  const fs::path prefix = root_ / "env";
  auto r = envlock("install -l " + q(write_lock(pip)) + " -p " + q(prefix));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\n  pip: 8 installed, 0 unchanged\n"), std::string::npos) << r.out;
  fs::path site;
  for (const auto& e : fs::directory_iterator(prefix / "lib")) site = e.path() / "site-packages";
  for (char c = 'a'; c <= 'h'; ++c) {
    EXPECT_EQ(slurp(site / "nspace" / (std::string("ns_") + c) / "__init__.py"), std::string("X = 'ns_") + c + "'\n");
    EXPECT_TRUE(fs::exists(site / "nspace-data" / (std::string("ns_") + c + ".txt")));
  }
  auto verify = envlock("verify -p " + q(prefix));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
}

TEST_F(PipInstallCli, AWheelWhoseHashDiffersIsRefusedBeforeThePrefixIsTouched) {
  const fs::path wheel = write_demo_wheel(root_ / "wheels");
  const std::string wrong(64, 'a');
  const fs::path lock = write_lock({{"demo-pkg", "1.0", "file://" + wheel.string(), wrong, "", {}, "", false}});
  const fs::path prefix = root_ / "env";
  auto r = envlock("install -l " + q(lock) + " -p " + q(prefix));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(wrong), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pip package: demo-pkg==1.0 from file://" + wheel.string() + "\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was installed; the prefix was not touched"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(prefix));
}

TEST_F(PipInstallCli, AnEntryWhoseUrlNamesAnotherWheelIsRefused) {
  const fs::path wheel = write_demo_wheel(root_ / "wheels");
  const fs::path lock = write_lock({{"other", "1.0", "file://" + wheel.string(), hash_file(wheel, HashAlgorithm::Sha256).value(), "", {}, "", false}});
  auto r = envlock("install -l " + q(lock) + " -p " + q(root_ / "env"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("error: " + lock.string() + ": pip package other==1.0: its url names the wheel of demo_pkg 1.0\n"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(root_ / "env"));
}

// Attack 22 A3: replacing an installed version whose package folder in site-packages is a link
// out of the prefix never follows it: nothing outside is deleted or written, exit 1 (the conda
// linker resolves every path beneath the prefix the same way; pip and uv follow such links).
TEST_F(PipInstallCli, ReplacingAVersionNeverFollowsALinkOutOfThePrefix) {
  const fs::path v1 = write_demo_wheel(root_ / "wheels", "1.0");
  const fs::path v2 = write_demo_wheel(root_ / "wheels", "2.0");
  const fs::path prefix = root_ / "env";
  auto lock1 = write_lock({{"demo-pkg", "1.0", "file://" + v1.string(), hash_file(v1, HashAlgorithm::Sha256).value(), "", {}, "", false}}, "v1.lock");
  ASSERT_EQ(envlock("install -l " + q(lock1) + " -p " + q(prefix)).exit_code, 0);
  fs::path site;
  for (const auto& e : fs::directory_iterator(prefix / "lib")) site = e.path() / "site-packages";
  const fs::path outside = root_ / "outside/demo_pkg";
  fs::create_directories(outside.parent_path());
  fs::rename(site / "demo_pkg", outside);
  fs::create_directory_symlink(outside, site / "demo_pkg");
  const std::string before = slurp(outside / "__init__.py");
  auto lock2 = write_lock({{"demo-pkg", "2.0", "file://" + v2.string(), hash_file(v2, HashAlgorithm::Sha256).value(), "", {}, "", false}}, "v2.lock");
  auto r = envlock("install -l " + q(lock2) + " -p " + q(prefix));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string site_rel = fs::relative(site, prefix).string();
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "packages: 1 (0 downloaded, 1 from the package cache)\n"
                   "error: " + prefix.string() + ": " + site_rel + "/demo_pkg-1.0.dist-info/RECORD lists '" + site_rel +
                       "/demo_pkg/__init__.py', which leads outside the prefix through a link: nothing was changed\n"
                       "pip package: demo_pkg==2.0\n"
                       "nothing was installed; the prefix was not touched\n"
                       "hint: a folder of the installed distribution is a link out of the prefix; remove it by hand\n");
  EXPECT_EQ(slurp(outside / "__init__.py"), before) << "the file outside is neither deleted nor replaced";
  EXPECT_TRUE(fs::exists(outside / "old/old.py"));
  EXPECT_TRUE(fs::exists(site / "demo_pkg-1.0.dist-info/RECORD"));
  EXPECT_FALSE(fs::exists(site / "demo_pkg-2.0.dist-info"));
}

// Attack 22 A10: an install killed (SIGKILL) while a big wheel unpacks leaves its staging folder
// `.envlock-wheel-<pid>-<n>`, inside the installer's stage; verify of the prefix is clean, and the
// next install removes the stale stage (its pid is dead) and installs the wheel.
TEST_F(PipInstallCli, AStagingFolderOfAKilledInstallIsRemovedByTheNextInstall) {
  const std::string di = "big-1.0.dist-info";
  std::vector<testing::ZipEntry> files;
  for (int i = 0; i < 6000; ++i) files.push_back({"big/m/f" + std::to_string(i) + ".py", std::string(2000, 'x') + std::to_string(i) + "\n"});
  files.push_back({di + "/METADATA", "Metadata-Version: 2.1\nName: big\nVersion: 1.0\n"});
  files.push_back({di + "/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"});
  std::string record;
  for (const auto& f : files) record += f.name + "," + record_hash(f.data) + "," + std::to_string(f.data.size()) + "\n";
  files.push_back({di + "/RECORD", record + di + "/RECORD,,\n"});
  fs::create_directories(root_ / "wheels");
  const fs::path wheel = root_ / "wheels/big-1.0-py3-none-any.whl";
  testing::write_zip(wheel, files);
  const fs::path lock = write_lock({{"big", "1.0", "file://" + wheel.string(), hash_file(wheel, HashAlgorithm::Sha256).value(), "", {}, "", false}});
  const fs::path prefix = root_ / "env";
  ASSERT_EQ(envlock("install -l " + q(write_lock({}, "conda.lock")) + " -p " + q(prefix)).exit_code, 0);
  // Started in the background, killed once its staging folder holds files. The wheels install
  // into the installer's stage beside the prefix (attack 23 F11), so the wheel's staging folder
  // is in there: the prefix itself is untouched.
  const std::string stages = q(root_) + "/.env.envlock-stage-*";
  auto killed = run_command(testing::envlock_cmd() + " install -l " + q(lock) + " -p " + q(prefix) + " >/dev/null 2>&1 & pid=$!; "
                            "for i in $(seq 4000); do n=$(find " + stages + "/.envlock-wheel-* -type f 2>/dev/null | head -50 | wc -l); "
                            "[ \"$n\" -ge 50 ] && break; sleep 0.005; done; kill -9 $pid; wait $pid; echo \"rc=$?\"",
                            env_);
  EXPECT_EQ(killed.out, "rc=137\n") << killed.err;
  fs::path staging;
  for (const auto& e : fs::directory_iterator(root_))
    if (e.path().filename().string().starts_with(".env.envlock-stage-"))
      for (const auto& w : fs::directory_iterator(e.path()))
        if (w.path().filename().string().starts_with(".envlock-wheel-")) staging = w.path();
  ASSERT_FALSE(staging.empty()) << "the kill came while the wheel was staged";
  for (const auto& e : fs::directory_iterator(prefix)) EXPECT_FALSE(e.path().filename().string().starts_with(".envlock-wheel-")) << e.path();
  auto verify = envlock("verify -p " + q(prefix));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  auto again = envlock("install -l " + q(lock) + " -p " + q(prefix));
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("\n  pip: 1 installed, 0 unchanged\n"), std::string::npos) << again.out;
  EXPECT_FALSE(fs::exists(staging.parent_path())) << "the killed install's stage is removed";
  for (const auto& e : fs::directory_iterator(prefix)) EXPECT_FALSE(e.path().filename().string().starts_with(".envlock-wheel-")) << e.path();
  verify = envlock("verify -p " + q(prefix));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
}

// Attack 22 A4, A14: verify reports a RECORD row leading outside the prefix (install refuses such
// a RECORD as altered) and a pip file replaced by a link to a same-content file outside the prefix
// (the conda side reports a link as "not a regular file"; installer and pip write regular files).
TEST_F(PipInstallCli, VerifyReportsARecordRowOutsideThePrefixAndAPipFileLinkedOutside) {
  const fs::path wheel = write_demo_wheel(root_ / "wheels");
  const fs::path prefix = root_ / "env";
  auto lock = write_lock({{"demo-pkg", "1.0", "file://" + wheel.string(), hash_file(wheel, HashAlgorithm::Sha256).value(), "", {}, "", false}});
  ASSERT_EQ(envlock("install -l " + q(lock) + " -p " + q(prefix)).exit_code, 0);
  fs::path site;
  for (const auto& e : fs::directory_iterator(prefix / "lib")) site = e.path() / "site-packages";
  const std::string site_rel = fs::relative(site, prefix).string();
  const std::string record = slurp(site / "demo_pkg-1.0.dist-info/RECORD");
  const int rows = static_cast<int>(std::count(record.begin(), record.end(), '\n'));
  std::ofstream(site / "demo_pkg-1.0.dist-info/RECORD", std::ios::app) << "../../../../../../../../../../etc/hostname,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n";
  fs::copy_file(site / "demo_pkg/__init__.py", root_ / "same.py");
  fs::remove(site / "demo_pkg/__init__.py");
  fs::create_symlink(root_ / "same.py", site / "demo_pkg/__init__.py");
  auto r = envlock("verify -p " + q(prefix));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "modified  " + site_rel + "/demo_pkg-1.0.dist-info/RECORD  (pip:demo_pkg-1.0: row " + std::to_string(rows + 1) +
                       " leads outside the prefix (the RECORD was altered))\n"
                       "modified  " + site_rel + "/demo_pkg/__init__.py  (pip:demo_pkg-1.0: not a regular file (a link to outside the prefix))\n" +
                       prefix.string() + ": 1 packages, 13 files checked (10 of them pip-installed): 2 drifted\n");
}

// Attack 22 A9: a locked wheel's local url that is a link to /proc/self/environ is refused by
// read_input_file()'s rule (as a base lockfile is), never read: no digest or size of the
// environment is printed.
TEST_F(PipInstallCli, AWheelUrlLinkedIntoProcIsNotRead) {
  fs::create_directories(root_ / "wheels");
  const fs::path wheel = root_ / "wheels/demo_pkg-1.0-py3-none-any.whl";
  fs::create_symlink("/proc/self/environ", wheel);
  const fs::path lock = write_lock({{"demo-pkg", "1.0", "file://" + wheel.string(), std::string(64, '0'), "", {}, "", false}});
  auto r = envlock("install -l " + q(lock) + " -p " + q(root_ / "env"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "packages: 1 (1 downloaded, 0 from the package cache)\n"
                   "error: file://" + wheel.string() + ": is in /proc, not a file of a project; it is not read\n"
                   "pip package: demo-pkg==1.0 from file://" + wheel.string() + "\n"
                   "nothing was installed; the prefix was not touched\n"
                   "hint: a locked wheel's url names a wheel file of the project or a download\n");
  EXPECT_FALSE(fs::exists(root_ / "env"));
}

// Attack 22 A18: a locked wheel whose PEP 425 tags the environment cannot run (another OS, another
// CPython, a manylinux newer than the host's glibc) is refused before anything is fetched or the
// prefix is touched, naming the wheel, its tags and the environment (pip: "is not a supported
// wheel on this platform"; uv refuses it too). The glibc is CONDA_OVERRIDE_GLIBC's, as for conda's
// __glibc.
TEST_F(PipInstallCli, AWheelWhoseTagsTheEnvironmentCannotRunIsRefused) {
  env_["CONDA_OVERRIDE_GLIBC"] = "2.17";
  const fs::path built = write_demo_wheel(root_ / "built");
  auto lock = write_lock({});
  std::string python_xy;
  const auto read = Lockfile::read(lock);
  ASSERT_TRUE(read.ok());
  for (const auto& [name, platform] : read->environments.at("default").platforms)
    for (const auto& p : platform.packages) python_xy = p.version.to_string().substr(0, p.version.to_string().rfind('.'));
  ASSERT_EQ(python_xy.size(), 4u) << "the host python is 3.1x: " << python_xy;
  const std::string other_cp = "cp3" + std::to_string(std::stoi(python_xy.substr(2)) + 1);
  bool first = true;
  for (const std::string& tags : std::vector<std::string>{"cp311-cp311-win_amd64", "py3-none-macosx_11_0_arm64", other_cp + "-" + other_cp + "-manylinux_2_17_x86_64",
                                 "py3-none-manylinux_2_28_x86_64"}) {
    const fs::path wheel = root_ / "wheels" / ("demo_pkg-1.0-" + tags + ".whl");
    fs::create_directories(wheel.parent_path());
    fs::copy_file(built, wheel, fs::copy_options::overwrite_existing);
    lock = write_lock({{"demo-pkg", "1.0", "file://" + wheel.string(), hash_file(wheel, HashAlgorithm::Sha256).value(), "", {}, "", false}});
    const fs::path prefix = root_ / "env";
    auto r = envlock("install -l " + q(lock) + " -p " + q(prefix));
    EXPECT_EQ(r.exit_code, 1) << tags << r.out << r.err;
    EXPECT_EQ(r.out, "") << tags;
    const std::string packages = first ? "packages: 1 (1 downloaded, 0 from the package cache)\n" : "packages: 1 (0 downloaded, 1 from the package cache)\n";
    first = false;
    EXPECT_EQ(r.err, packages + "error: " + lock.string() +
                         ": pip package demo-pkg==1.0: demo_pkg-1.0-" + tags + ".whl is not compatible with linux-64 / CPython " + python_xy +
                         " / glibc 2.17 (tags " + tags + ")\npip package: demo-pkg==1.0 from file://" + wheel.string() +
                         "\nnothing was installed; the prefix was not touched\n"
                         "hint: lock a wheel built for this environment (PEP 425 tags); pip and uv refuse it too\n")
        << tags;
    EXPECT_FALSE(fs::exists(prefix)) << tags;
    EXPECT_FALSE(fs::exists(root_ / "cache/envlock/wheels")) << tags << ": nothing fetched";
  }
}

// Attack 22 A12: a locked wheel whose METADATA names another project is refused, nothing is
// installed (the wheels go into the installer's stage: attack 23 F11) (pip and uv: inconsistent name).
TEST_F(PipInstallCli, AWheelWhoseMetadataNamesAnotherProjectIsRefused) {
  env_["HOME"] = root_.string();
  const std::string di = "demo_pkg-1.0.dist-info";
  std::vector<testing::ZipEntry> files = {{"demo_pkg/__init__.py", "X = 1\n"},
                                          {di + "/METADATA", "Metadata-Version: 2.1\nName: requests\nVersion: 9.9\n"},
                                          {di + "/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"}};
  std::string record;
  for (const auto& f : files) record += f.name + "," + record_hash(f.data) + "," + std::to_string(f.data.size()) + "\n";
  files.push_back({di + "/RECORD", record + di + "/RECORD,,\n"});
  fs::create_directories(root_ / "wheels");
  const fs::path wheel = root_ / "wheels/demo_pkg-1.0-py3-none-any.whl";
  testing::write_zip(wheel, files);
  const fs::path lock = write_lock({{"demo-pkg", "1.0", "file://" + wheel.string(), hash_file(wheel, HashAlgorithm::Sha256).value(), "", {}, "", false}});
  const fs::path prefix = root_ / "env";
  auto r = envlock("install -l " + q(lock) + " -p " + q(prefix));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  // The cached wheel is named with the home folder spelled `~` (attack 22 A9: no home paths).
  const std::string cached = std::string(fs::exists(root_ / "cache/envlock/wheels") ? "~/cache/envlock/wheels" : "~/cache/wheels") + "/" +
                             hash_file(wheel, HashAlgorithm::Sha256).value() + "/" + wheel.filename().string();
  EXPECT_NE(r.err.find("error: " + cached + ": its METADATA names 'requests' version '9.9', not demo_pkg 1.0 as its file name\n"
                       "pip package: demo_pkg==1.0\n"),
            std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(prefix)) << "a new environment whose pip step failed is not made";
}

/// `text` with every occurrence of `from` replaced by `to` (a path filter for whole outputs).
std::string replaced_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); !from.empty() && at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// A pip package that a new lockfile drops goes, as `pip uninstall` removes it: every file its
// RECORD lists (the console script in bin/ too) and its bytecode, the folders left empty; a
// distribution pip installed (INSTALLER `pip`) is the user's and stays (issue 20).
TEST_F(PipInstallCli, APipPackageTheNewLockfileDropsIsRemovedByItsRecord) {
  const fs::path demo = write_demo_wheel(root_ / "wheels");
  const std::string di = "keeper-1.0.dist-info";
  std::vector<testing::ZipEntry> files = {{"keeper/__init__.py", "K = 1\n"},
                                          {di + "/METADATA", "Metadata-Version: 2.1\nName: keeper\nVersion: 1.0\n"},
                                          {di + "/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"}};
  std::string record;
  for (const auto& f : files) record += f.name + "," + record_hash(f.data) + "," + std::to_string(f.data.size()) + "\n";
  files.push_back({di + "/RECORD", record + di + "/RECORD,,\n"});
  const fs::path keeper = root_ / "wheels/keeper-1.0-py3-none-any.whl";
  testing::write_zip(keeper, files);
  PipPackage keep{"keeper", "1.0", "file://" + keeper.string(), hash_file(keeper, HashAlgorithm::Sha256).value(), "", {}, "", false};
  keep.required_by = {"demo-pkg"};  // a dependency: no REQUESTED (PEP 376), as pip writes it
  const PipPackage drop{"demo-pkg", "1.0", "file://" + demo.string(), hash_file(demo, HashAlgorithm::Sha256).value(), "", {}, "", false};
  const fs::path prefix = root_ / "env";
  ASSERT_EQ(envlock("install -l " + q(write_lock({drop, keep}, "both.lock")) + " -p " + q(prefix)).exit_code, 0);
  fs::path site;
  for (const auto& e : fs::directory_iterator(prefix / "lib")) site = e.path() / "site-packages";
  const std::string xy = site.parent_path().filename().string().substr(6);  // "3.11"
  const std::string tag = "cpython-" + xy.substr(0, xy.find('.')) + xy.substr(xy.find('.') + 1);
  // What an import would have written, and a project pip installed by hand.
  testing::spit(site / "demo_pkg/__pycache__" / ("__init__." + tag + ".pyc"), "bytecode");
  testing::spit(site / "demo_pkg/old/__pycache__" / ("old." + tag + ".opt-1.pyc"), "bytecode");
  testing::spit(site / "byhand.py", "B = 1\n");
  testing::spit(site / "byhand-2.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: byhand\nVersion: 2.0\n");
  testing::spit(site / "byhand-2.0.dist-info/INSTALLER", "pip\n");
  testing::spit(site / "byhand-2.0.dist-info/RECORD", "byhand.py,,\nbyhand-2.0.dist-info/METADATA,,\nbyhand-2.0.dist-info/INSTALLER,,\n"
                                                    "byhand-2.0.dist-info/RECORD,,\n");
  ASSERT_TRUE(fs::exists(prefix / "bin/demo-cli"));
  EXPECT_TRUE(fs::exists(site / "demo_pkg-1.0.dist-info/REQUESTED")) << "no required_by: marked, as before";
  EXPECT_FALSE(fs::exists(site / "keeper-1.0.dist-info/REQUESTED")) << "required by demo-pkg only";

  auto r = envlock("install -l " + q(write_lock({keep}, "keeper.lock")) + " -p " + q(prefix));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string abs = fs::absolute(prefix).lexically_normal().string();
  EXPECT_EQ(replaced_all(r.out, abs, "PREFIX"),
            "environment 'default' (linux-64) is ready in PREFIX\n"
            "  0 installed, 1 unchanged, 0 removed; files: 0 linked, 0 copied, 0 relocated\n"
            "  pip: 0 installed, 1 unchanged, 1 removed\n");
  EXPECT_FALSE(fs::exists(site / "demo_pkg")) << "its files, its bytecode and the folders they leave empty";
  EXPECT_FALSE(fs::exists(site / "demo_pkg-1.0.dist-info"));
  EXPECT_FALSE(fs::exists(prefix / "bin/demo-cli"));
  EXPECT_TRUE(fs::is_directory(prefix / "bin")) << "a scheme folder stays";
  EXPECT_TRUE(fs::exists(site / "keeper/__init__.py"));
  EXPECT_TRUE(fs::exists(site / "byhand.py")) << "pip's install is the user's";
  EXPECT_TRUE(fs::exists(site / "byhand-2.0.dist-info/RECORD"));

  // Again: nothing left to remove; --json says what went.
  auto again = envlock("--json install -l " + q(write_lock({keep}, "keeper.lock")) + " -p " + q(prefix));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["pip"],
            nlohmann::json::parse(R"({"installed": [], "kept": ["keeper==1.0"], "replaced": [], "removed": []})"));
  // A lockfile with no pip entry at all removes the last one.
  auto none = envlock("--json install -l " + q(write_lock({}, "none.lock")) + " -p " + q(prefix));
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(nlohmann::json::parse(none.out)["pip"],
            nlohmann::json::parse(R"({"installed": [], "kept": [], "replaced": [], "removed": ["keeper==1.0"]})"));
  EXPECT_FALSE(fs::exists(site / "keeper"));
  EXPECT_TRUE(fs::exists(site / "byhand.py"));
}

// The installed METADATA version and the locked one are compared as PEP 440 versions, as pip
// compares them ("Requirement already satisfied"): 1.0 installed is the locked 1.0.0, kept.
TEST_F(PipInstallCli, AnInstalledVersionEqualUnderPep440IsKept) {
  const fs::path v1 = write_demo_wheel(root_ / "wheels", "1.0");
  const fs::path prefix = root_ / "env";
  ASSERT_EQ(envlock("install -l " + q(write_lock({{"demo-pkg", "1.0", "file://" + v1.string(), hash_file(v1, HashAlgorithm::Sha256).value(),
                                                    "", {}, "", false}}, "v1.lock")) + " -p " + q(prefix)).exit_code, 0);
  // As pip installs it: no record of which wheel (ENVLOCK_SHA256, direct_url.json), so the
  // version alone is compared; a recorded other build is replaced (attack 23 F8).
  for (const auto& e : fs::directory_iterator(prefix / "lib")) fs::remove(e.path() / "site-packages/demo_pkg-1.0.dist-info/ENVLOCK_SHA256");
  const fs::path v100 = write_demo_wheel(root_ / "other", "1.0.0");
  auto r = envlock("--json install -l " + q(write_lock({{"demo-pkg", "1.0.0", "file://" + v100.string(),
                                                           hash_file(v100, HashAlgorithm::Sha256).value(), "", {}, "", false}}, "v100.lock")) +
                   " -p " + q(prefix));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["pip"],
            nlohmann::json::parse(R"({"installed": [], "kept": ["demo_pkg==1.0.0"], "replaced": [], "removed": []})"));
  fs::path site;
  for (const auto& e : fs::directory_iterator(prefix / "lib")) site = e.path() / "site-packages";
  EXPECT_TRUE(fs::exists(site / "demo_pkg-1.0.dist-info")) << "the installed distribution stays as it is";
  // A locked version that is no PEP 440 version's equal is another version: replaced.
  const fs::path v101 = write_demo_wheel(root_ / "third", "1.0.1");
  auto other = envlock("install -l " + q(write_lock({{"demo-pkg", "1.0.1", "file://" + v101.string(),
                                                        hash_file(v101, HashAlgorithm::Sha256).value(), "", {}, "", false}}, "v101.lock")) +
                       " -p " + q(prefix));
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(other.out.find("\n  pip: 1 installed, 0 unchanged, 1 replaced\n"), std::string::npos) << other.out;
}

// Attack 23 F9: replacing a version never deletes what its RECORD lists beyond what a pip package
// owns: a row naming a conda package's file (bin/pythonX.Y) or the environment's records
// (conda-meta/) is left in place and named, as conda reports a path two packages claim (a clobber)
// instead of deleting the other's file; pip trusts RECORD and would delete them. The environment
// verifies clean after.
TEST_F(PipInstallCli, ReplacingAVersionLeavesWhatItsRecordListsOfCondaInPlace) {
  const fs::path v1 = write_demo_wheel(root_ / "wheels", "1.0");
  const fs::path v2 = write_demo_wheel(root_ / "wheels", "2.0");
  const fs::path prefix = root_ / "env";
  auto lock1 = write_lock({{"demo-pkg", "1.0", "file://" + v1.string(), hash_file(v1, HashAlgorithm::Sha256).value(), "", {}, "", false}}, "v1.lock");
  ASSERT_EQ(envlock("install -l " + q(lock1) + " -p " + q(prefix)).exit_code, 0);
  fs::path site;
  for (const auto& e : fs::directory_iterator(prefix / "lib")) site = e.path() / "site-packages";
  const std::string python = "python" + site.parent_path().filename().string().substr(6);  // python3.11
  std::string record_json;
  for (const auto& e : fs::directory_iterator(prefix / "conda-meta"))
    if (e.path().extension() == ".json") record_json = e.path().filename().string();
  ASSERT_TRUE(fs::exists(prefix / "bin" / python));
  std::ofstream(site / "demo_pkg-1.0.dist-info/RECORD", std::ios::app) << "../../../bin/" << python << ",,\n../../../conda-meta/" << record_json << ",,\n";
  auto lock2 = write_lock({{"demo-pkg", "2.0", "file://" + v2.string(), hash_file(v2, HashAlgorithm::Sha256).value(), "", {}, "", false}}, "v2.lock");
  auto r = envlock("install -l " + q(lock2) + " -p " + q(prefix));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string abs = fs::absolute(prefix).lexically_normal().string();
  const std::string dist = record_json.substr(0, record_json.size() - 5);
  EXPECT_EQ(r.out,
            "environment 'default' (linux-64) is ready in " + abs + "\n"
            "  0 installed, 1 unchanged, 0 removed; files: 0 linked, 0 copied, 0 relocated\n"
            "  pip: 1 installed, 0 unchanged, 1 replaced\n");
  EXPECT_EQ(r.err, "packages: 1 (0 downloaded, 1 from the package cache)\n"
                   "warning: replacing demo-pkg==1.0 by demo_pkg==2.0 left 2 file(s) its RECORD lists in place, which are no pip "
                   "package's to remove: bin/" + python + " (a file of conda package " + dist + "), conda-meta/" + record_json +
                       " (the environment's records)\n");
  EXPECT_TRUE(fs::exists(prefix / "bin" / python));
  EXPECT_TRUE(fs::exists(prefix / "conda-meta" / record_json));
  EXPECT_FALSE(fs::exists(site / "demo_pkg-1.0.dist-info"));
  EXPECT_FALSE(fs::exists(site / "demo_pkg/old")) << "the old version's own files still go";
  EXPECT_EQ(run_command(q(prefix / "bin/demo-cli")).out, "demo_pkg 2.0 says hello\n");
  auto verify = envlock("verify -p " + q(prefix));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_EQ(verify.err, "");
  EXPECT_EQ(verify.out, abs + ": 1 packages, 12 files checked (9 of them pip-installed): no drift\n");
}

// Issue 20 (remove by RECORD): a pip package the new lockfile drops is removed by its RECORD as a
// replaced version is — what no pip package owns (a conda record's file, conda-meta/) is left in
// place and named in a warning (it was left silently), a RECORD row with `..` out of the prefix or
// an absolute path removes nothing and is named, and `envlock remove` of the environment takes the
// pip files with the prefix.
TEST_F(PipInstallCli, ADroppedPipPackageIsRemovedByItsRecordAndWhatItDoesNotOwnIsNamed) {
  const fs::path v1 = write_demo_wheel(root_ / "wheels", "1.0");
  const fs::path prefix = root_ / "env";
  const PipPackage demo{"demo-pkg", "1.0", "file://" + v1.string(), hash_file(v1, HashAlgorithm::Sha256).value(), "", {}, "", false};
  const fs::path with = write_lock({demo}, "with.lock"), without = write_lock({}, "without.lock");
  ASSERT_EQ(envlock("install -l " + q(with) + " -p " + q(prefix)).exit_code, 0);
  fs::path site;
  for (const auto& e : fs::directory_iterator(prefix / "lib")) site = e.path() / "site-packages";
  const std::string python = "python" + site.parent_path().filename().string().substr(6);  // python3.11
  std::string record_json;
  for (const auto& e : fs::directory_iterator(prefix / "conda-meta"))
    if (e.path().extension() == ".json") record_json = e.path().filename().string();
  const std::string dist = record_json.substr(0, record_json.size() - 5);
  const fs::path record = site / "demo_pkg-1.0.dist-info/RECORD";
  const std::string original = slurp(record);
  const std::string abs = fs::absolute(prefix).lexically_normal().string();

  // Rows out of the prefix: refused, nothing removed, the row named.
  testing::spit(root_ / "outside.txt", "keep\n");
  for (const std::string& row : {std::string("../../../../outside.txt"), (root_ / "outside.txt").string()}) {
    SCOPED_TRACE(row);
    testing::spit(record, original + row + ",,\n");
    auto r = envlock("install -l " + q(without) + " -p " + q(prefix));
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "packages: 1 (0 downloaded, 1 from the package cache)\n"
                     "error: " + site.lexically_relative(prefix).string() + "/demo_pkg-1.0.dist-info/RECORD: lists '" + row +
                         "', outside the prefix: nothing is removed\n"
                         "pip package: demo-pkg==1.0, which the lockfile no longer holds\n"
                         "nothing was installed; the prefix was not touched\n"
                         "hint: the RECORD was altered; remove the distribution by hand\n");
    EXPECT_EQ(slurp(root_ / "outside.txt"), "keep\n");
    EXPECT_TRUE(fs::exists(site / "demo_pkg/__init__.py"));
    EXPECT_TRUE(fs::exists(prefix / "bin/demo-cli"));
  }

  // Rows of conda's files: left in place and named; the rest goes, the dist-info and the folders
  // left empty with it.
  testing::spit(record, original + "../../../bin/" + python + ",,\n../../../conda-meta/" + record_json + ",,\n");
  auto r = envlock("install -l " + q(without) + " -p " + q(prefix));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "environment 'default' (linux-64) is ready in " + abs + "\n"
                   "  0 installed, 1 unchanged, 0 removed; files: 0 linked, 0 copied, 0 relocated\n"
                   "  pip: 0 installed, 0 unchanged, 1 removed\n");
  EXPECT_EQ(r.err, "packages: 1 (0 downloaded, 1 from the package cache)\n"
                   "warning: removing demo-pkg==1.0, which the lockfile no longer holds, left 2 file(s) its RECORD lists in place, "
                   "which are no pip package's to remove: bin/" + python + " (a file of conda package " + dist + "), conda-meta/" +
                       record_json + " (the environment's records)\n");
  EXPECT_TRUE(fs::exists(prefix / "bin" / python));
  EXPECT_TRUE(fs::exists(prefix / "conda-meta" / record_json));
  EXPECT_FALSE(fs::exists(site / "demo_pkg-1.0.dist-info"));
  EXPECT_FALSE(fs::exists(site / "demo_pkg"));
  EXPECT_FALSE(fs::exists(prefix / "bin/demo-cli"));
  auto verify = envlock("verify -p " + q(prefix));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_EQ(verify.out, abs + ": 1 packages, 3 files checked: no drift\n");

  // envlock remove: the whole prefix, pip files included, and nothing beside it.
  ASSERT_EQ(envlock("install -l " + q(with) + " -p " + q(prefix)).exit_code, 0);
  ASSERT_TRUE(fs::exists(site / "demo_pkg/__init__.py"));
  auto removed = envlock("remove -p " + q(prefix));
  EXPECT_EQ(removed.exit_code, 0) << removed.out << removed.err;
  EXPECT_EQ(removed.out, "removed " + prefix.string() + " (1 packages)\n");
  EXPECT_EQ(removed.err, "");
  EXPECT_FALSE(fs::exists(fs::symlink_status(prefix)));
  EXPECT_EQ(slurp(root_ / "outside.txt"), "keep\n");
}

// Attack 23 F19: a wheel that would overwrite a file a conda package installed names that package
// (its dist name) beside the wheel and the path, as conda names the package of a clobbered path;
// a file no package owns is named alone.
TEST_F(PipInstallCli, AWheelThatWouldOverwriteACondaFileNamesTheCondaPackage) {
  const std::string di = "clash-1.0.dist-info";
  std::vector<testing::ZipEntry> files = {{"clash/__init__.py", "C = 1\n"},
                                          {"clash-1.0.data/data/bin/python3", "not python\n"},
                                          {"clash-1.0.data/data/share/notes.txt", "mine\n"},
                                          {di + "/METADATA", "Metadata-Version: 2.1\nName: clash\nVersion: 1.0\n"},
                                          {di + "/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"}};
  std::string record;
  for (const auto& f : files) record += f.name + "," + record_hash(f.data) + "," + std::to_string(f.data.size()) + "\n";
  files.push_back({di + "/RECORD", record + di + "/RECORD,,\n"});
  fs::create_directories(root_ / "wheels");
  const fs::path wheel = root_ / "wheels/clash-1.0-py3-none-any.whl";
  testing::write_zip(wheel, files);
  const fs::path prefix = root_ / "env";
  ASSERT_EQ(envlock("install -l " + q(write_lock({}, "plain.lock")) + " -p " + q(prefix)).exit_code, 0);
  testing::spit(prefix / "share/notes.txt", "the user's\n");
  std::string record_json;
  for (const auto& e : fs::directory_iterator(prefix / "conda-meta"))
    if (e.path().extension() == ".json") record_json = e.path().filename().string();
  const std::string dist = record_json.substr(0, record_json.size() - 5);
  const fs::path lock = write_lock({{"clash", "1.0", "./wheels/clash-1.0-py3-none-any.whl", hash_file(wheel, HashAlgorithm::Sha256).value(),
                                     "", {}, "", false}}, "envlock.lock");
  auto r = envlock("install -l " + q(lock) + " -p " + q(prefix));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "packages: 1 (0 downloaded, 1 from the package cache)\n"
                   "error: " + prefix.string() + ": the wheel clash-1.0-py3-none-any.whl would overwrite 2 file(s) already in the prefix "
                   "(of conda package " + dist + ")\n"
                   "  bin/python3 (a file of conda package " + dist + ")\n"
                   "  share/notes.txt\n"
                   "pip package: clash==1.0\n"
                   "nothing was installed; the prefix was not touched\n"
                   "hint: the conda package and the wheel install the same file(s): drop one of them from the environment and lock "
                   "again (nothing of this wheel was installed)\n");
  EXPECT_EQ(slurp(prefix / "share/notes.txt"), "the user's\n");
  for (const auto& e : fs::recursive_directory_iterator(prefix)) EXPECT_EQ(e.path().string().find("clash"), std::string::npos) << e.path();
}

// Attack 23 F11: the wheels install into the installer's stage before its one swap, so a pip step
// that fails leaves the prefix as it was: a new environment is not made, an existing one keeps
// its packages and its conda-meta/envlock (which names the lockfile installed), and `envlock run`
// of the project installs again and fails with the same error instead of running without the
// pip package (pixi installs again a prefix that does not match the lock).
TEST_F(PipInstallCli, APipStepThatFailsLeavesThePrefixAsItWasAndRunInstallsAgain) {
  const std::string di = "clash-1.0.dist-info";
  std::vector<testing::ZipEntry> files = {{"clash/__init__.py", "C = 1\n"},
                                          {"clash-1.0.data/data/bin/python3", "not python\n"},
                                          {di + "/METADATA", "Metadata-Version: 2.1\nName: clash\nVersion: 1.0\n"},
                                          {di + "/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"}};
  std::string record;
  for (const auto& f : files) record += f.name + "," + record_hash(f.data) + "," + std::to_string(f.data.size()) + "\n";
  files.push_back({di + "/RECORD", record + di + "/RECORD,,\n"});
  fs::create_directories(root_ / "wheels");
  const fs::path wheel = root_ / "wheels/clash-1.0-py3-none-any.whl";
  testing::write_zip(wheel, files);
  const fs::path lock = write_lock({{"clash", "1.0", "./wheels/clash-1.0-py3-none-any.whl", hash_file(wheel, HashAlgorithm::Sha256).value(),
                                     "", {}, "", false}}, "envlock.lock");
  const fs::path prefix = root_ / "env";
  std::string dist;  // the fixture's python, whose bin/python3 the wheel would overwrite (attack 23 F19)
  for (const auto& e : fs::directory_iterator(channel_ / "linux-64"))
    if (const std::string f = e.path().filename().string(); f.starts_with("python-") && f.ends_with(".tar.bz2"))
      dist = f.substr(0, f.size() - 8);
  const std::string error = "error: " + prefix.string() + ": the wheel clash-1.0-py3-none-any.whl would overwrite 1 file(s) already in the prefix "
                            "(of conda package " + dist + ")\n"
                            "  bin/python3 (a file of conda package " + dist + ")\n"
                            "pip package: clash==1.0\n"
                            "nothing was installed; the prefix was not touched\n"
                            "hint: the conda package and the wheel install the same file(s): drop one of them from the environment and "
                            "lock again (nothing of this wheel was installed)\n";
  auto r = envlock("install -l " + q(lock) + " -p " + q(prefix));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "packages: 1 (1 downloaded, 0 from the package cache)\n" + error);
  EXPECT_FALSE(fs::exists(prefix)) << "a new environment whose pip step failed is not made";
  for (const auto& e : fs::directory_iterator(root_)) EXPECT_FALSE(e.path().filename().string().starts_with(".env.envlock-stage-")) << e.path();

  // Over an environment there: it stays as it was, its record of the lockfile installed too.
  const fs::path demo = write_demo_wheel(root_ / "wheels");
  ASSERT_EQ(envlock("install -l " + q(write_lock({{"demo-pkg", "1.0", "file://" + demo.string(), hash_file(demo, HashAlgorithm::Sha256).value(),
                                                    "", {}, "", false}}, "demo.lock")) + " -p " + q(prefix)).exit_code, 0);
  const std::string origin = slurp(prefix / "conda-meta/envlock");
  r = envlock("install -l " + q(lock) + " -p " + q(prefix));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "packages: 1 (0 downloaded, 1 from the package cache)\n" + error);
  EXPECT_EQ(slurp(prefix / "conda-meta/envlock"), origin);
  EXPECT_EQ(run_command(q(prefix / "bin/demo-cli")).out, "demo_pkg 1.0 says hello\n");
  auto verify = envlock("verify -p " + q(prefix));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;

  // `run` of the project (its lockfile as it is): installs, fails the same way, every time.
  testing::spit(root_ / "envlock.yaml", "name: proj\nchannels: [\"file://" + channel_.string() + "\"]\nplatforms: [linux-64]\n"
                                             "dependencies: [python]\n");
  const fs::path run_prefix = root_ / "run-env";
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto run = envlock("run --frozen -f " + q(root_ / "envlock.yaml") + " -p " + q(run_prefix) + " -- true");
    EXPECT_EQ(run.exit_code, 1) << attempt << run.out << run.err;
    EXPECT_EQ(run.out, "") << attempt;
    EXPECT_EQ(run.err, "packages: 1 (0 downloaded, 1 from the package cache)\n" +
                           replaced_all(error, prefix.string(), run_prefix.string()))
        << attempt;
    EXPECT_FALSE(fs::exists(run_prefix)) << attempt;
  }
}

// Attack 23 F8: envlock records the sha256 of the wheel it installed (ENVLOCK_SHA256 in the
// dist-info, listed in RECORD; PEP 610 direct_url.json's archive_info hashes are read too), so a
// prefix holding another build of the locked name and version is replaced by the locked build,
// as uv pip sync installs again a distribution whose recorded hash differs; the locked build
// installed again is kept.
TEST_F(PipInstallCli, AnotherBuildOfTheLockedVersionIsReplacedByTheLockedOne) {
  const fs::path good = write_demo_wheel(root_ / "good", "1.0");
  const fs::path evil = write_demo_wheel(root_ / "evil", "1.0", "says EVIL");
  const std::string good_sha = hash_file(good, HashAlgorithm::Sha256).value();
  const fs::path prefix = root_ / "env";
  auto evil_lock = write_lock({{"demo-pkg", "1.0", "file://" + evil.string(), hash_file(evil, HashAlgorithm::Sha256).value(), "", {}, "", false}}, "evil.lock");
  auto good_lock = write_lock({{"demo-pkg", "1.0", "file://" + good.string(), good_sha, "", {}, "", false}}, "good.lock");
  ASSERT_EQ(envlock("install -l " + q(evil_lock) + " -p " + q(prefix)).exit_code, 0);
  ASSERT_EQ(run_command(q(prefix / "bin/demo-cli")).out, "demo_pkg 1.0 says EVIL\n");
  auto r = envlock("install -l " + q(good_lock) + " -p " + q(prefix));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string abs = fs::absolute(prefix).lexically_normal().string();
  EXPECT_EQ(r.out, "environment 'default' (linux-64) is ready in " + abs + "\n"
                   "  0 installed, 1 unchanged, 0 removed; files: 0 linked, 0 copied, 0 relocated\n"
                   "  pip: 1 installed, 0 unchanged, 1 replaced\n");
  EXPECT_EQ(r.err, "packages: 1 (0 downloaded, 1 from the package cache)\n");
  EXPECT_EQ(run_command(q(prefix / "bin/demo-cli")).out, "demo_pkg 1.0 says hello\n");
  fs::path site;
  for (const auto& e : fs::directory_iterator(prefix / "lib")) site = e.path() / "site-packages";
  EXPECT_EQ(slurp(site / "demo_pkg-1.0.dist-info/ENVLOCK_SHA256"), good_sha + "\n");
  EXPECT_NE(slurp(site / "demo_pkg-1.0.dist-info/RECORD").find("demo_pkg-1.0.dist-info/ENVLOCK_SHA256,sha256="), std::string::npos);
  auto again = envlock("--json install -l " + q(good_lock) + " -p " + q(prefix));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["pip"],
            nlohmann::json::parse(R"({"installed": [], "kept": ["demo_pkg==1.0"], "replaced": [], "removed": []})"));
  auto verify = envlock("verify -p " + q(prefix));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
}

// Issue 20: `verify -l LOCKFILE` compares each pip package's recorded wheel sha256 (ENVLOCK_SHA256)
// with the lockfile's pin, as install does before it keeps one, and `diff LOCKFILE PREFIX` reads
// the prefix's recorded sha256: another build of the locked version was "no drift" / "no changes".
TEST_F(PipInstallCli, VerifyAndDiffCompareTheInstalledWheelsSha256WithTheLockfiles) {
  const fs::path good = write_demo_wheel(root_ / "good", "1.0");
  const fs::path evil = write_demo_wheel(root_ / "evil", "1.0", "says EVIL");
  const std::string good_sha = hash_file(good, HashAlgorithm::Sha256).value();
  const std::string evil_sha = hash_file(evil, HashAlgorithm::Sha256).value();
  const fs::path prefix = root_ / "env";
  auto evil_lock = write_lock({{"demo-pkg", "1.0", "file://" + evil.string(), evil_sha, "", {}, "", false}}, "evil.lock");
  auto good_lock = write_lock({{"demo-pkg", "1.0", "file://" + good.string(), good_sha, "", {}, "", false}}, "good.lock");
  ASSERT_EQ(envlock("install -l " + q(evil_lock) + " -p " + q(prefix)).exit_code, 0);
  fs::path site;
  for (const auto& e : fs::directory_iterator(prefix / "lib")) site = e.path() / "site-packages";
  const std::string site_rel = site.lexically_relative(prefix).string();

  auto plain = envlock("verify -p " + q(prefix));
  EXPECT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  EXPECT_EQ(plain.out, prefix.string() + ": 1 packages, 13 files checked (10 of them pip-installed): no drift\n");
  auto same = envlock("verify -p " + q(prefix) + " -l " + q(evil_lock));
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_EQ(same.out, plain.out);
  EXPECT_EQ(same.err, "");

  auto r = envlock("verify -p " + q(prefix) + " -l " + q(good_lock));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out, "modified  " + site_rel + "/demo_pkg-1.0.dist-info/ENVLOCK_SHA256  (pip:demo_pkg-1.0: installed from the wheel of sha256 " +
                       evil_sha.substr(0, 12) + "…, the lockfile pins " + good_sha.substr(0, 12) + "… (good.lock))\n" +
                       prefix.string() + ": 1 packages, 13 files checked (10 of them pip-installed): 1 drifted\n");
  EXPECT_EQ(r.err, "");
  auto j = envlock("--json verify -p " + q(prefix) + " -l " + q(good_lock) + " -e default");
  EXPECT_EQ(j.exit_code, 1) << j.out << j.err;
  EXPECT_EQ(nlohmann::json::parse(j.out)["modified"],
            nlohmann::json::parse("[{\"path\": \"" + site_rel + "/demo_pkg-1.0.dist-info/ENVLOCK_SHA256\", \"package\": \"pip:demo_pkg-1.0\", "
                                  "\"reason\": \"installed from the wheel of sha256 " + evil_sha.substr(0, 12) + "…, the lockfile pins " +
                                  good_sha.substr(0, 12) + "… (good.lock)\"}]"));

  // The lockfile's pin names a path (file://), the prefix's install an index: source-changed
  // either way; the swapped build is hash-changed, a red flag, only with the prefix's sha256.
  const std::string header = "old: " + root_.string() + "/LOCK (envlock.lock v1)\nnew: " + prefix.string() + " (conda-meta prefix)\n\n"
                             "default / linux-64: 1 change, size unknown (2 -> 2 packages)\n";
  const std::string source = "source path file://" + root_.string() + "/DIR/demo_pkg-1.0-py3-none-any.whl -> index\n";
  auto d = envlock("diff " + q(good_lock) + " " + q(prefix));
  EXPECT_EQ(d.exit_code, 0) << d.out << d.err;
  EXPECT_EQ(d.out, "1 change: 1 hash-changed; size unknown; 1 red flag\n" + replaced_all(header, "LOCK", "good.lock") +
                       "  ! hash-changed+source-changed   pypi:demo-pkg  1.0 -> 1.0\n"
                       "                                  sha256 " + good_sha.substr(0, 12) + "… -> " + evil_sha.substr(0, 12) + "…\n"
                       "                                  " + replaced_all(source, "DIR", "good"));
  EXPECT_EQ(d.err, "");
  auto d_same = envlock("diff " + q(evil_lock) + " " + q(prefix));
  EXPECT_EQ(d_same.exit_code, 0) << d_same.out << d_same.err;
  EXPECT_EQ(d_same.out, "1 change: 1 source-changed; size unknown\n" + replaced_all(header, "LOCK", "evil.lock") +
                            "    source-changed                pypi:demo-pkg  1.0 -> 1.0\n"
                            "                                  " + replaced_all(source, "DIR", "evil"));

  // Installed again from the good lockfile, both agree.
  ASSERT_EQ(envlock("install -l " + q(good_lock) + " -p " + q(prefix)).exit_code, 0);
  auto fixed = envlock("verify -p " + q(prefix) + " -l " + q(good_lock));
  EXPECT_EQ(fixed.exit_code, 0) << fixed.out << fixed.err;
  EXPECT_EQ(fixed.out, plain.out);
}

// Attack 23 F16: a locked wheel from a local folder outside the lockfile's folder gets the warning
// a conda package from such a folder gets, naming the folder and the wheel; one inside does not.
TEST_F(PipInstallCli, AWheelFromAFolderOutsideTheLockfilesFolderIsNamedInAWarning) {
  const fs::path inside = write_demo_wheel(root_ / "proj/wheels", "1.0");
  const fs::path outside = write_demo_wheel(root_ / "elsewhere", "2.0");
  fs::create_directories(root_ / "proj");
  const std::string rel_outside = "../elsewhere/" + outside.filename().string();
  auto lock = write_lock({{"demo-pkg", "2.0", rel_outside, hash_file(outside, HashAlgorithm::Sha256).value(), "", {}, "", false}},
                         "proj/outside.lock");
  const fs::path prefix = root_ / "env";
  auto r = envlock("install -l " + q(lock) + " -p " + q(prefix));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string root = fs::weakly_canonical(root_).string();
  EXPECT_EQ(r.err, "warning: 1 package(s) come from file://" + root + "/channel, a local folder outside the lockfile's folder " + root +
                       "/proj (check that it is the one meant): " + [&] {
                         std::string dist;
                         for (const auto& e : fs::directory_iterator(channel_ / "linux-64"))
                           if (e.path().filename().string().starts_with("python-")) dist = e.path().filename().string();
                         return dist.substr(0, dist.find(".tar.bz2") != std::string::npos ? dist.find(".tar.bz2") : dist.find(".conda"));
                       }() + "\n"
                       "warning: 1 package(s) come from file://" + root + "/elsewhere, a local folder outside the lockfile's folder " + root +
                       "/proj (check that it is the one meant): " + outside.filename().string() + "\n"
                       "packages: 1 (1 downloaded, 0 from the package cache)\n");
  auto in_lock = write_lock({{"demo-pkg", "1.0", "./wheels/" + inside.filename().string(), hash_file(inside, HashAlgorithm::Sha256).value(), "", {},
                              "", false}}, "proj/inside.lock");
  auto again = envlock("install -l " + q(in_lock) + " -p " + q(prefix));
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(again.err.find("elsewhere"), std::string::npos) << again.err;
  EXPECT_EQ(again.err.find("wheels"), std::string::npos) << again.err;
}

}  // namespace
}  // namespace envlock
