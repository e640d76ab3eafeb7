// `envlock add` and `envlock rm` end to end (src/cli/add.cpp, rm.cpp, edit_run.hpp). Peer:
// pixi (prefix-dev/pixi, src/cli/add.rs and remove.rs): the manifest edited in place (toml_edit
// there, envlock/manifest_edit.hpp here), the lock updated with the old lockfile's records kept
// where they still fit, then the environment installed unless --no-install; one line
// "✔ Added SPEC" (display_success) per spec. Where envlock differs from pixi: nothing is written
// when the lock fails (pixi may leave an updated lockfile), and the lines go to stdout.
//
// The lock tests use a channel of repodata only (nothing is installed with --no-install); the
// install tests the fixture channel of real packages (scripts/make-fixture-channel).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "envlock/lockfile.hpp"
#include "support/files.hpp"
#include "support/run_command.hpp"
#include "wheel/zip_writer.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using envlock::testing::envlock_cmd;
using envlock::testing::run_command;
using envlock::testing::q;
using envlock::testing::spit;
using envlock::testing::slurp;

/// A repodata record of a noarch package (fake hashes: these tests lock, never install).
nlohmann::json record(const std::string& name, const std::string& version, std::vector<std::string> depends = {}) {
  return {{"name", name},       {"version", version}, {"build", "0"},       {"build_number", 0},
          {"depends", depends}, {"subdir", "noarch"}, {"noarch", "generic"}, {"sha256", std::string(64, 'a')},
          {"md5", std::string(32, 'b')}, {"size", 100}, {"license", "MIT"},  {"timestamp", 1767225600000}};
}

class EditCli : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("envlock-cli-edit-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "proj");
    env_ = {{"ENVLOCK_PKGS_DIR", (root_ / "pkgs").string()}, {"XDG_CACHE_HOME", (root_ / "cache").string()},
            {"HOME", root_.string()}, {"NO_COLOR", "1"}};
  }
  void TearDown() override { fs::remove_all(root_); }

  /// Runs envlock in the project folder.
  envlock::testing::CommandResult envlock(const std::string& args) {
    return run_command("cd " + q(root_ / "proj") + " && " + envlock_cmd() + " " + args, env_);
  }

  /// `text` with the test's folder written <ROOT>.
  std::string filtered(std::string text) const {
    const std::string from = root_.string();
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at))
      text.replace(at, from.size(), "<ROOT>");
    return text;
  }

  /// The repodata channel `../chan`: app 1.0 (depends on libfoo), libfoo 1.0, tool 1.0.
  void publish(const std::vector<nlohmann::json>& extra = {}) {
    nlohmann::json packages = {{"app-1.0-0.tar.bz2", record("app", "1.0", {"libfoo"})},
                               {"libfoo-1.0-0.tar.bz2", record("libfoo", "1.0")},
                               {"tool-1.0-0.tar.bz2", record("tool", "1.0")}};
    for (const auto& r : extra)
      packages[r.at("name").get<std::string>() + "-" + r.at("version").get<std::string>() + "-0.tar.bz2"] = r;
    spit(root_ / "chan/noarch/repodata.json",
         nlohmann::json{{"info", {{"subdir", "noarch"}}}, {"packages", packages}, {"packages.conda", nlohmann::json::object()}}.dump());
    spit(root_ / "chan/linux-64/repodata.json",
         nlohmann::json{{"info", {{"subdir", "linux-64"}}}, {"packages", nlohmann::json::object()},
                        {"packages.conda", nlohmann::json::object()}}.dump());
  }

  fs::path manifest() const { return root_ / "proj/envlock.yaml"; }
  fs::path lockfile() const { return root_ / "proj/envlock.lock"; }

  fs::path root_;
  std::map<std::string, std::string> env_;
};

// A commented manifest in two list styles: every byte but the new entry's line stays.
const std::string kCommented =
    "# the project's manifest\n"
    "name: demo   # a label\n"
    "channels: ['../chan']   # the team's channel\n"
    "platforms: [linux-64]\n"
    "dependencies:\n"
    "    # the application first\n"
    "    -   app   # pinned by the lock\n"
    "\n"
    "environments:\n"
    "  docs: {dependencies: [tool]}   # flow\n";

TEST_F(EditCli, AddKeepsACommentedManifestByteIdenticalOutsideTheChangedLine) {
  publish();
  spit(manifest(), kCommented);
  ASSERT_EQ(envlock("lock -f envlock.yaml").exit_code, 0);
  auto r = envlock("add 'tool >=1' --no-install");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "✔ Added tool >=1\n"
            "locked envlock.lock\n"
            "  default / linux-64: 3 packages (1 added, 0 removed, 0 changed)\n"
            "      + tool 1.0 0\n"
            "  docs / linux-64: 1 packages (0 added, 0 removed, 0 changed)\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(slurp(manifest()),
            "# the project's manifest\n"
            "name: demo   # a label\n"
            "channels: ['../chan']   # the team's channel\n"
            "platforms: [linux-64]\n"
            "dependencies:\n"
            "    # the application first\n"
            "    -   app   # pinned by the lock\n"
            "    -   tool >=1\n"
            "\n"
            "environments:\n"
            "  docs: {dependencies: [tool]}   # flow\n");
  // The flow list of another environment, named with -e; the same spec again replaces it in place.
  auto docs = envlock("add app -e docs --no-install");
  EXPECT_EQ(docs.exit_code, 0) << docs.err;
  auto again = envlock("add 'tool >=1.0' --no-install");
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out,
            "✔ Added tool >=1.0 (was tool >=1)\n"
            "locked envlock.lock\n"  // the requested spec is recorded: the lockfile changes, no package moves
            "  default / linux-64: 3 packages (0 added, 0 removed, 0 changed)\n"
            "  docs / linux-64: 3 packages (0 added, 0 removed, 0 changed)\n");
  EXPECT_EQ(slurp(manifest()),
            "# the project's manifest\n"
            "name: demo   # a label\n"
            "channels: ['../chan']   # the team's channel\n"
            "platforms: [linux-64]\n"
            "dependencies:\n"
            "    # the application first\n"
            "    -   app   # pinned by the lock\n"
            "    -   tool >=1.0\n"
            "\n"
            "environments:\n"
            "  docs: {dependencies: [tool, \"app >=1.0,<2\"]}   # flow\n");
  // The lockfile agrees with the manifest it was written with.
  EXPECT_EQ(envlock("lock -f envlock.yaml --check").exit_code, 0);
}

// Only what the change requires moves (pixi add keeps the old lock's records as it re-solves):
// libfoo 2.0 is published after the lock; adding tool keeps libfoo 1.0, as `lock --update-all`
// would not.
TEST_F(EditCli, TheLockfileMovesOnlyForWhatChanged) {
  publish();
  spit(manifest(), "channels: [../chan]\nplatforms: [linux-64]\ndependencies:\n  - app\n");
  ASSERT_EQ(envlock("lock -f envlock.yaml").exit_code, 0);
  auto before = Lockfile::read(lockfile());
  ASSERT_TRUE(before.ok());
  publish({record("libfoo", "2.0")});
  auto r = envlock("add tool --no-install");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "✔ Added tool >=1.0,<2\n"
            "locked envlock.lock\n"
            "  default / linux-64: 3 packages (1 added, 0 removed, 0 changed)\n"
            "      + tool 1.0 0\n");
  EXPECT_EQ(r.err, "");
  auto after = Lockfile::read(lockfile());
  ASSERT_TRUE(after.ok());
  const auto& old_packages = before->find("default", "linux-64")->packages;
  const auto& new_packages = after->find("default", "linux-64")->packages;
  ASSERT_EQ(new_packages.size(), old_packages.size() + 1);
  for (const auto& p : old_packages) {
    auto it = std::find_if(new_packages.begin(), new_packages.end(), [&](const LockedPackage& n) { return n.name == p.name; });
    ASSERT_NE(it, new_packages.end()) << p.name;
    EXPECT_EQ(it->url, p.url) << p.name;  // the same record: libfoo stays 1.0
  }
  // A fresh solve would have moved libfoo: the add did not re-lock from scratch.
  auto all = envlock("lock -f envlock.yaml --update-all");
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out,
            "locked envlock.lock\n"
            "  default / linux-64: 3 packages (0 added, 0 removed, 1 changed)\n"
            "      ~ libfoo 1.0 0 -> 2.0 0\n");
}

TEST_F(EditCli, AnUnsatisfiableSpecLeavesManifestAndLockfileByteIdentical) {
  publish();
  spit(manifest(), kCommented);
  ASSERT_EQ(envlock("lock -f envlock.yaml").exit_code, 0);
  const std::string manifest_bytes = slurp(manifest());
  const std::string lock_bytes = slurp(lockfile());
  auto r = envlock("add 'tool >=9' --no-install");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(filtered(r.err),
            "error: envlock.yaml:8:9: no package matches 'tool >=9' in file://<ROOT>/chan (linux-64 and noarch); "
            "versions that exist: 1.0\n"
            "  tool >=9 (requested at envlock.yaml:8:9)\n"
            "  └─ no package matches 'tool >=9'; versions that exist: 1.0\n"
            "nothing was written: envlock.yaml and envlock.lock are as they were\n"
            "hint: relax the version or build in the spec, or add a channel that has the version you need\n");
  EXPECT_EQ(slurp(manifest()), manifest_bytes);
  EXPECT_EQ(slurp(lockfile()), lock_bytes);
  // --json: the solver's conflict as JSON on stdout, the files untouched still; with an install
  // asked for, nothing is installed either.
  auto j = envlock("--json add 'tool >=9'");
  EXPECT_EQ(j.exit_code, 1);
  auto parsed = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << j.out;
  EXPECT_EQ(parsed.at("error").at("kind"), "unsatisfiable");
  EXPECT_EQ(parsed.at("conflict").at("environment"), "default");
  EXPECT_EQ(parsed.at("conflict").at("platform"), "linux-64");
  EXPECT_EQ(slurp(manifest()), manifest_bytes);
  EXPECT_EQ(slurp(lockfile()), lock_bytes);
  EXPECT_FALSE(fs::exists(root_ / "proj/.envlock"));
  // A spec that is not a MatchSpec never reaches the solver: a usage error, nothing written.
  auto bad = envlock("add 'tool >=' --no-install");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_EQ(bad.out, "");
  EXPECT_EQ(slurp(manifest()), manifest_bytes);
  EXPECT_EQ(slurp(lockfile()), lock_bytes);
}

TEST_F(EditCli, RmDeletesTheEntryAndWhatOnlyItNeeded) {
  publish();
  spit(manifest(), "channels: [../chan]\nplatforms: [linux-64]\ndependencies:\n  - app  # the app\n  # tools\n  - tool\n");
  ASSERT_EQ(envlock("lock -f envlock.yaml").exit_code, 0);
  auto r = envlock("rm app --no-install");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "✔ Removed app\n"
            "locked envlock.lock\n"
            "  default / linux-64: 1 packages (0 added, 2 removed, 0 changed)\n"
            "      - app 1.0 0\n"
            "      - libfoo 1.0 0\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(slurp(manifest()), "channels: [../chan]\nplatforms: [linux-64]\ndependencies:\n  # tools\n  - tool\n");
  EXPECT_EQ(envlock("lock -f envlock.yaml --check").exit_code, 0);
}

// pixi remove fails on a name the manifest does not list; so does envlock, naming what it has.
TEST_F(EditCli, RmOfANameThatIsNotADependencyWritesNothing) {
  publish();
  spit(manifest(), "channels: [../chan]\nplatforms: [linux-64]\ndependencies:\n  - app\n");
  auto r = envlock("rm tool --no-install");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "error: envlock.yaml: environment 'default' has no dependency 'tool'\n"
            "its dependencies: app\n"
            "hint: name one of them, or `--pypi` for a pip requirement\n");
  EXPECT_EQ(slurp(manifest()), "channels: [../chan]\nplatforms: [linux-64]\ndependencies:\n  - app\n");
  EXPECT_FALSE(fs::exists(lockfile()));  // no lockfile is made either
  auto j = envlock("--json rm tool --no-install");
  EXPECT_EQ(j.exit_code, 1);
  EXPECT_EQ(j.err, r.err);  // --json: the error as JSON on stdout, and as text on stderr as always
  auto parsed = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << j.out;
  EXPECT_EQ(parsed.at("error").at("kind"), "incompatible");
  EXPECT_FALSE(fs::exists(lockfile()));
  // No manifest here and no -f (run from another folder).
  auto elsewhere = run_command("cd " + q(root_) + " && " + envlock_cmd() + " rm tool", env_);
  EXPECT_EQ(elsewhere.exit_code, 1);
  EXPECT_EQ(elsewhere.out, "");
  EXPECT_EQ(elsewhere.err, "error: envlock.yaml: no manifest in the current folder\n"
                           "hint: run in the project's folder, or pass the manifest with -f\n");
  // No name at all is a usage error.
  auto none = envlock("rm");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.err, "error: rm: name is required\nhint: run `envlock rm --help` for its options\n");
}

// add and rm install where create does, so a `.envlock` committed as a link is refused as create
// refuses it (docs/install.md, "The project's environments") — before either file is edited;
// --no-install only locks and is not concerned.
TEST_F(EditCli, AProjectEnvsFolderThatIsALinkIsRefusedBeforeAnyEdit) {
  publish();
  const std::string text = "channels: [../chan]\nplatforms: [linux-64]\ndependencies:\n  - app\n";
  spit(manifest(), text);
  fs::create_directories(root_ / "elsewhere");
  fs::create_directory_symlink(root_ / "elsewhere", root_ / "proj/.envlock");
  for (const std::string command : {"add tool", "rm app"}) {
    auto r = envlock(command);
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_EQ(r.out, "") << command;
    EXPECT_EQ(filtered(r.err),
              "error: <ROOT>/proj/.envlock: is a symbolic link: the project's environments must live in the project's own folder\n"
              "hint: remove the link (a checkout should not carry one), or install elsewhere with -p PREFIX\n")
        << command;
    EXPECT_EQ(slurp(manifest()), text) << command;
    EXPECT_FALSE(fs::exists(lockfile())) << command;
  }
  EXPECT_TRUE(fs::is_empty(root_ / "elsewhere"));
  auto only_lock = envlock("add tool --no-install");
  EXPECT_EQ(only_lock.exit_code, 0) << only_lock.err;
  EXPECT_TRUE(fs::is_empty(root_ / "elsewhere"));
}

// The manifest is written first (pixi's order), so a lockfile write that fails afterwards puts the
// manifest's old bytes back: here envlock.lock is a link into a folder that cannot exist (/proc
// makes none), so only the lockfile's write fails.
TEST_F(EditCli, ALockfileThatCannotBeWrittenPutsTheManifestBack) {
  publish();
  const std::string text = "channels: [../chan]\nplatforms: [linux-64]\ndependencies:\n  - app\n";
  spit(manifest(), text);
  // A file-size limit of one 1024-byte block lets the manifest be written and the lockfile not
  // (EFBIG; SIGXFSZ ignored, as a shell's `trap '' XFSZ` leaves it for the process it starts).
  auto r = run_command("cd " + q(root_ / "proj") + " && trap '' XFSZ && ulimit -f 1 && " + envlock_cmd() +
                           " add tool --no-install",
                       env_);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("nothing was written: envlock.yaml and envlock.lock are as they were"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(manifest()), text);
  EXPECT_FALSE(fs::exists(fs::symlink_status(lockfile())));
}

// A checkout that carries envlock.lock (or, for add and rm, envlock.yaml) as a symbolic link
// (attack 30, F0): root's `envlock create` in CI wrote the new lockfile through it, making a file
// anywhere on the machine (/etc/profile.d/...). Every command that reads or writes the project's
// lockfile without being told its name refuses the link first, as a `.envlock` link is refused;
// nothing is created where it points. A lockfile named with -l is followed, as the user's own.
TEST_F(EditCli, AProjectLockfileOrManifestThatIsALinkIsNeverReadOrWrittenThrough) {
  publish();
  const std::string text = "channels: [../chan]\nplatforms: [linux-64]\ndependencies:\n  - app\n";
  spit(manifest(), text);
  fs::create_directories(root_ / "victim");
  fs::create_symlink(root_ / "victim/zz-envlock.sh", lockfile());
  const std::string refusal = ": is a symbolic link: envlock reads and writes a project's lockfile in the project's "
                              "own folder, never through a link (a checkout's link could name any file on the "
                              "machine)\nhint: replace the link with the file it names, or delete it\n";
  for (const std::string cmd : {"lock -f envlock.yaml", "lock -f envlock.yaml --check", "add tool --no-install",
                                 "rm app --no-install", "create -f envlock.yaml", "create -f envlock.yaml --frozen",
                                 "run -- true", "shell-hook"}) {
    SCOPED_TRACE(cmd);
    auto r = envlock(cmd);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    const bool absolute = cmd.starts_with("create") || cmd.starts_with("run") || cmd.starts_with("shell-hook");
    EXPECT_EQ(filtered(r.err), "error: " + std::string(absolute ? "<ROOT>/proj/" : "") + "envlock.lock" + refusal);
  }
  EXPECT_TRUE(fs::is_empty(root_ / "victim")) << "nothing is written where the link points";
  EXPECT_EQ(slurp(manifest()), text);
  // -o names the user's own file: followed.
  auto r = envlock("lock -f envlock.yaml -o envlock.lock");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(root_ / "victim/zz-envlock.sh"));
  fs::remove(lockfile());
  // A manifest that is a link is not edited through it by add or rm.
  fs::rename(manifest(), root_ / "victim/envlock.yaml");
  fs::create_symlink(root_ / "victim/envlock.yaml", manifest());
  for (const std::string cmd : {"add tool --no-install", "rm app --no-install"}) {
    SCOPED_TRACE(cmd);
    r = envlock(cmd);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "error: envlock.yaml: is a symbolic link: envlock reads and writes a project's manifest in the "
                     "project's own folder, never through a link (a checkout's link could name any file on the "
                     "machine)\nhint: edit the file it names (pass it with -f), or replace the link with it\n");
  }
  EXPECT_EQ(slurp(root_ / "victim/envlock.yaml"), text);
  EXPECT_FALSE(fs::exists(fs::symlink_status(lockfile())));
}

// A lockfile or manifest reached through a link to someone's credentials file (attack 30, F13): a
// one-line JSON auth file passes as a YAML map, and its line was quoted under "no `version`"; a
// YAML config's first key was quoted under "unknown key". Those errors quote no text of the file.
TEST_F(EditCli, ErrorsAboutAFileOfAnotherKindQuoteNoneOfItsText) {
  publish();
  const std::string secret = "dXNlcjpTRUNSRVQ=";
  spit(root_ / "config.json", "{\"auths\": {\"ghcr.io\": {\"auth\": \"" + secret + "\"}}}\n");
  fs::create_symlink(root_ / "config.json", root_ / "proj/other.lock");
  auto r = envlock("install -l other.lock -p env");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: other.lock:1:1: not an envlock lockfile: no `version`\n"
                   "hint: envlock lockfiles start with `version: 1`\n");
  spit(root_ / "ngrok.yml", "version: 1\nauthtoken: " + secret + "\n");
  fs::remove(root_ / "proj/other.lock");
  fs::create_symlink(root_ / "ngrok.yml", root_ / "proj/other.lock");
  r = envlock("install -l other.lock -p env");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.find(secret), std::string::npos) << r.err;
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')), "error: other.lock:2:1: unknown key 'authtoken' in the lockfile");
  // As a manifest: an unknown key is quoted up to its `:`, and a file with nothing to lock (an
  // environment.yml's other keys are ignored) not at all.
  spit(root_ / "envlock-token.yaml", "platforms: [linux-64]\noauth_token: " + secret + "\n");
  r = envlock("lock -f ../envlock-token.yaml");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.substr(0, r.err.find("hint:")), "error: ../envlock-token.yaml:2:1: unknown key 'oauth_token'\n"
                                                  "  oauth_token:\n"
                                                  "  ^\n");
  spit(root_ / "gh.yml", "oauth_token: " + secret + "\n");
  r = envlock("lock -f ../gh.yml");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.find(secret), std::string::npos) << r.err;
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')), "error: ../gh.yml:1:1: nothing to lock: no `dependencies` and no `environments`");
}

TEST_F(EditCli, JsonIsOneObject) {
  publish();
  spit(manifest(), "channels: [../chan]\nplatforms: [linux-64]\ndependencies:\n  - app\n");
  auto r = envlock("--json add tool --no-install");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
            "{\n"
            "  \"edits\": [\n"
            "    {\n"
            "      \"action\": \"added\",\n"
            "      \"line\": 5,\n"
            "      \"name\": \"tool\",\n"
            "      \"spec\": \"tool >=1.0,<2\"\n"
            "    }\n"
            "  ],\n"
            "  \"environment\": \"default\",\n"
            "  \"hints\": [],\n"
            "  \"install\": null,\n"
            "  \"kind\": \"conda\",\n"
            "  \"lock\": {\n"
            "    \"changed\": true,\n"
            "    \"environments\": {\n"
            "      \"default\": {\n"
            "        \"linux-64\": {\n"
            "          \"added\": [\n"
            "            \"app 1.0 0\",\n"
            "            \"libfoo 1.0 0\",\n"
            "            \"tool 1.0 0\"\n"
            "          ],\n"
            "          \"changed\": [],\n"
            "          \"packages\": 3,\n"
            "          \"removed\": []\n"
            "        }\n"
            "      }\n"
            "    }\n"
            "  },\n"
            "  \"lockfile\": \"envlock.lock\",\n"
            "  \"manifest\": \"envlock.yaml\",\n"
            "  \"warnings\": []\n"
            "}\n");
}

// A spec added without a version gets pixi's implicit constraint from the locked version (add.rs,
// determine_version_constraint, "semver" pinning): `>=1.0,<2`, and for 0.x `>=0.4.1,<0.5`.
// --no-pin, or a version of `*`, keeps the spec as written.
TEST_F(EditCli, ABareSpecGetsPixisImplicitConstraint) {
  publish({record("zlib", "0.4.1")});
  spit(manifest(), "channels: [../chan]\nplatforms: [linux-64]\ndependencies: [app]\n");
  auto r = envlock("add zlib --no-install");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "✔ Added zlib >=0.4.1,<0.5\n"
            "locked envlock.lock\n"
            "  default / linux-64: 3 packages\n");
  EXPECT_EQ(r.err, "");
  auto bare = envlock("add --no-pin tool --no-install");
  EXPECT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_EQ(bare.out,
            "✔ Added tool\n"
            "locked envlock.lock\n"
            "  default / linux-64: 4 packages (1 added, 0 removed, 0 changed)\n"
            "      + tool 1.0 0\n");
  auto any = envlock("add 'app *' --no-install");
  EXPECT_EQ(any.exit_code, 0) << any.err;
  EXPECT_EQ(any.out.substr(0, any.out.find('\n')), "✔ Added app * (was app)");
  EXPECT_EQ(slurp(manifest()), "channels: [../chan]\nplatforms: [linux-64]\ndependencies: [app *, \"zlib >=0.4.1,<0.5\", \"tool\"]\n");
  // (`"tool"` is quoted as the list's last entry was: manifest_edit.hpp's rule for new entries.)
  EXPECT_EQ(envlock("lock -f envlock.yaml --check").exit_code, 0);  // the lockfile is the pinned manifest's
  // A bare name replacing an entry is pinned too; the entry it replaced is the one named.
  auto again = envlock("add app --no-install");
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out.substr(0, again.out.find('\n')), "✔ Added app >=1.0,<2 (was app *)");
}

// Two runs at once in one project take turns (flock on the manifest's folder): both edits land
// and the lockfile is the final manifest's, whichever went first.
TEST_F(EditCli, TwoAddsAtOnceTakeTurns) {
  publish({record("zlib", "0.4.1")});
  spit(manifest(), "channels: [../chan]\nplatforms: [linux-64]\ndependencies:\n  - app\n");
  const std::string cmd = envlock_cmd();
  auto r = run_command("cd " + q(root_ / "proj") + " && { " + cmd + " add tool --no-install >a.out 2>&1 & " + cmd +
                           " add zlib --no-install >b.out 2>&1 & wait; } && cat a.out b.out >/dev/null",
                       env_);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string text = slurp(manifest());
  EXPECT_TRUE(text == "channels: [../chan]\nplatforms: [linux-64]\ndependencies:\n  - app\n  - tool >=1.0,<2\n  - zlib >=0.4.1,<0.5\n" ||
              text == "channels: [../chan]\nplatforms: [linux-64]\ndependencies:\n  - app\n  - zlib >=0.4.1,<0.5\n  - tool >=1.0,<2\n")
      << text << slurp(root_ / "proj/a.out") << slurp(root_ / "proj/b.out");
  EXPECT_EQ(envlock("lock -f envlock.yaml --check").exit_code, 0);
}

// `envlock lock` takes the same turn as add and rm (attack 21, F10: a lock beside an add left a
// lockfile for the old manifest): while another command holds the project, lock waits, saying so,
// and goes on when it is free; `lock --check` only reads and does not wait.
TEST_F(EditCli, LockWaitsForTheProjectsTurn) {
  publish();
  spit(manifest(), "channels: [../chan]\nplatforms: [linux-64]\ndependencies:\n  - app\n");
  const int held = ::open((root_ / "proj").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);  // an add under way
  const std::string cmd = "cd " + q(root_ / "proj") + " && " + envlock_cmd();
  auto check = run_command(cmd + " lock -f envlock.yaml --check", env_);
  EXPECT_EQ(check.err.find("waiting"), std::string::npos) << check.err;
  auto r = run_command("{ " + cmd + " lock -f envlock.yaml >" + q(root_ / "lock.out") + " 2>&1 & } ; sleep 1; test ! -e " + q(lockfile()) + " && echo waited",
                       env_);
  EXPECT_EQ(r.out, "waited\n") << r.err;
  ::close(held);
  for (int i = 0; i < 100 && !fs::exists(lockfile()); ++i) ::usleep(100 * 1000);
  EXPECT_TRUE(fs::exists(lockfile()));
  for (int i = 0; i < 50 && slurp(root_ / "lock.out").find("locked") == std::string::npos; ++i) ::usleep(100 * 1000);
  EXPECT_EQ(filtered(slurp(root_ / "lock.out")).rfind("waiting for another envlock command writing the lockfile in <ROOT>/proj\n", 0), 0u)
      << slurp(root_ / "lock.out");
}

// --pypi edits the environment's `- pip:` list (made when missing); the lockfile records it.
TEST_F(EditCli, PypiAddsToThePipList) {
  publish();
  spit(manifest(), "channels: [../chan]\nplatforms: [linux-64]\ndependencies:\n  - app\n");
  auto r = envlock("add --pypi 'requests>=2' --no-install");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "✔ Added requests>=2\n"
            "Added these as pip requirements.\n"
            "locked envlock.lock\n"
            "  default / linux-64: 2 packages\n");
  EXPECT_EQ(slurp(manifest()), "channels: [../chan]\nplatforms: [linux-64]\ndependencies:\n  - app\n  - pip:\n    - requests>=2\n");
  auto lock = Lockfile::read(lockfile());
  ASSERT_TRUE(lock.ok());
  ASSERT_EQ(lock->find("default", "linux-64")->pip.size(), 1u);
  EXPECT_EQ(lock->find("default", "linux-64")->pip[0].name, "requests");
  auto gone = envlock("rm --pypi requests --no-install");
  EXPECT_EQ(gone.exit_code, 0) << gone.err;
  EXPECT_EQ(slurp(manifest()), "channels: [../chan]\nplatforms: [linux-64]\ndependencies:\n  - app\n");

  // A requirement's URL credentials stay in the manifest the user wrote, never in the output
  // (attack 21, F5), text or JSON.
  auto secret = envlock("add --pypi 'mylib @ git+https://user:tok3n@git.example/mylib.git' --no-install");
  EXPECT_EQ(secret.exit_code, 0) << secret.err;
  EXPECT_EQ(secret.out,
            "✔ Added mylib @ git+https://git.example/mylib.git\n"
            "Added these as pip requirements.\n"
            "locked envlock.lock\n"
            "  default / linux-64: 2 packages (0 added, 0 removed, 0 changed)\n");
  EXPECT_NE(slurp(manifest()).find("user:tok3n@"), std::string::npos);
  auto secret_json = envlock("--json rm --pypi mylib --no-install");
  EXPECT_EQ(secret_json.exit_code, 0) << secret_json.err;
  EXPECT_EQ(secret_json.out.find("tok3n"), std::string::npos) << secret_json.out;
}

/// A pure-Python wheel `dist`-`version` (py3-none-any) at `path`: what a find-links folder holds.
void make_wheel(const fs::path& path, const std::string& dist, const std::string& version) {
  const std::string di = dist + "-" + version + ".dist-info";
  envlock::testing::write_zip(path, {{di + "/METADATA", "Metadata-Version: 2.1\nName: " + dist + "\nVersion: " + version + "\n"},
                                     {di + "/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
                                     {di + "/RECORD", ""}});
}

// A manifest with `find-links:` resolves its pip lines, and --pypi still edits them: the `pip:`
// list, or `pypi-dependencies:` when the environment has that key (pixi's `pixi add --pypi`
// writes pypi-dependencies); the lock pins the wheels (attack 23, F14: add was refused as "does
// not read back as written", rm said "its pip requirements: none").
TEST_F(EditCli, PypiEditsTheListOfAManifestThatResolvesPipLines) {
  const nlohmann::json python = {{"name", "python"}, {"version", "3.11.2"}, {"build", "h0_cpython"}, {"build_number", 0},
                                 {"depends", nlohmann::json::array()}, {"subdir", "linux-64"}};
  spit(root_ / "chan/linux-64/repodata.json",
       nlohmann::json{{"info", {{"subdir", "linux-64"}}}, {"packages", nlohmann::json::object()},
                      {"packages.conda", {{"python-3.11.2-h0_cpython.conda", python}}}}.dump());
  spit(root_ / "chan/noarch/repodata.json", R"({"info": {"subdir": "noarch"}, "packages": {}})");
  fs::create_directories(root_ / "wheels");
  make_wheel(root_ / "wheels/okpkg-1.0-py3-none-any.whl", "okpkg", "1.0");
  make_wheel(root_ / "wheels/other-1.0-py3-none-any.whl", "other", "1.0");
  auto pins = [&] {
    std::string names;
    auto lock = Lockfile::read(lockfile());
    if (!lock) return lock.error().to_string();
    for (const auto& p : lock->find("default", "linux-64")->pip) names += p.name + "=" + p.version + " ";
    return names;
  };
  const std::string head = "channels: [../chan]\nplatforms: [linux-64]\nfind-links: [../wheels]\n";

  spit(manifest(), head + "dependencies:\n  - python 3.11.*\n  - pip:\n    - okpkg\n");
  auto add = envlock("add --pypi other --no-install");
  EXPECT_EQ(add.exit_code, 0) << add.err;
  EXPECT_EQ(add.err, "");
  EXPECT_EQ(add.out,
            "✔ Added other\n"
            "Added these as pip requirements.\n"
            "locked envlock.lock\n"
            "  default / linux-64: 1 packages\n");
  EXPECT_EQ(slurp(manifest()), head + "dependencies:\n  - python 3.11.*\n  - pip:\n    - okpkg\n    - other\n");
  EXPECT_EQ(pins(), "okpkg=1.0 other=1.0 ");
  auto rm = envlock("rm --pypi okpkg --no-install");
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(rm.err, "");
  EXPECT_EQ(rm.out,
            "✔ Removed okpkg\n"
            "Removed these as pip requirements.\n"
            "locked envlock.lock\n"
            "  default / linux-64: 1 packages (0 added, 0 removed, 0 changed)\n");
  EXPECT_EQ(slurp(manifest()), head + "dependencies:\n  - python 3.11.*\n  - pip:\n    - other\n");
  EXPECT_EQ(pins(), "other=1.0 ");

  fs::remove(lockfile());
  spit(manifest(), head + "dependencies: [python 3.11.*]\npypi-dependencies: [okpkg]\n");
  auto add2 = envlock("add --pypi 'other>=1' --no-install");
  EXPECT_EQ(add2.exit_code, 0) << add2.err;
  EXPECT_EQ(add2.err, "");
  EXPECT_EQ(add2.out,
            "✔ Added other>=1\n"
            "Added these as pypi-dependencies.\n"
            "locked envlock.lock\n"
            "  default / linux-64: 1 packages\n");
  EXPECT_EQ(slurp(manifest()), head + "dependencies: [python 3.11.*]\npypi-dependencies: [okpkg, other>=1]\n");
  EXPECT_EQ(pins(), "okpkg=1.0 other=1.0 ");
  auto rm2 = envlock("rm --pypi okpkg --no-install");
  EXPECT_EQ(rm2.exit_code, 0) << rm2.err;
  EXPECT_EQ(rm2.out,
            "✔ Removed okpkg\n"
            "Removed these as pypi-dependencies.\n"
            "locked envlock.lock\n"
            "  default / linux-64: 1 packages (0 added, 0 removed, 0 changed)\n");
  EXPECT_EQ(slurp(manifest()), head + "dependencies: [python 3.11.*]\npypi-dependencies: [other>=1]\n");
  EXPECT_EQ(pins(), "other=1.0 ");
  auto missing = envlock("rm --pypi okpkg --no-install");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.out, "");
  EXPECT_EQ(missing.err,
            "error: envlock.yaml: environment 'default' has no pip requirement 'okpkg'\n"
            "its pip requirements: other>=1\n"
            "hint: name one of them, or drop --pypi for a conda dependency\n");
}

// The install comes after both files are written: when it fails (here: the manifest locks no
// platform of this host) they stay updated, agreeing with each other, and the hint says how to
// install them.
TEST_F(EditCli, AFailedInstallKeepsTheEditAndSaysHowToInstall) {
  publish();
  spit(root_ / "chan/osx-arm64/repodata.json",
       nlohmann::json{{"info", {{"subdir", "osx-arm64"}}}, {"packages", nlohmann::json::object()},
                      {"packages.conda", nlohmann::json::object()}}.dump());
  spit(manifest(), "channels: [../chan]\nplatforms: [osx-arm64]\ndependencies:\n  - app\n");
  auto r = envlock("add tool");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out,
            "✔ Added tool >=1.0,<2\n"
            "locked envlock.lock\n"
            "  default / osx-arm64: 3 packages\n");
  EXPECT_EQ(r.err,
            "error: envlock.lock: environment 'default' is not locked for this host's platform linux-64\n"
            "locked platforms: osx-arm64\n"
            "hint: add linux-64 to `platforms` in the manifest and run `envlock lock`\n"
            "hint: envlock.yaml and envlock.lock were updated; `envlock create -f envlock.yaml` installs them once "
            "the cause is fixed\n");
  EXPECT_EQ(slurp(manifest()), "channels: [../chan]\nplatforms: [osx-arm64]\ndependencies:\n  - app\n  - tool >=1.0,<2\n");
  EXPECT_EQ(envlock("lock -f envlock.yaml --check").exit_code, 0);
  // --json: one object still, the install's error inside it.
  auto j = envlock("--json rm tool");
  EXPECT_EQ(j.exit_code, 1);
  auto parsed = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << j.out;
  EXPECT_EQ(parsed.at("edits").at(0).at("action"), "removed");
  EXPECT_EQ(parsed.at("install").at("error").at("kind"), "incompatible");
}

// Without --no-install the environment is installed or updated through `envlock install`'s path
// (run_install), into .envlock/envs/<env> as `envlock create` puts it.
TEST_F(EditCli, AddAndRmUpdateTheEnvironment) {
  auto made = run_command("'" + std::string(ENVLOCK_SOURCE_DIR) + "/scripts/make-fixture-channel' " + q(root_ / "proj/channel"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  spit(manifest(), "# demo\nchannels: [./channel]\nplatforms: [linux-64]\ndependencies:\n  - envlock-hello\n");
  auto r = envlock("add envlock-greet");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const fs::path prefix = root_ / "proj/.envlock/envs/default";
  EXPECT_EQ(filtered(r.out),
            "✔ Added envlock-greet >=1.0.0,<2\n"
            "locked envlock.lock\n"
            "  default / linux-64: 2 packages\n"
            "envlock-greet 1.0.0: post-link ran\n"
            "environment 'default' (linux-64) is ready in <ROOT>/proj/.envlock/envs/default\n"
            "  2 installed, 0 unchanged, 0 removed; files: 2 linked, 2 copied, 2 relocated\n");
  EXPECT_EQ(filtered(r.err), "packages: 2 (2 downloaded, 0 from the package cache)\n");
  EXPECT_TRUE(fs::exists(prefix / "bin/envlock-greet"));
  EXPECT_TRUE(fs::exists(prefix / "bin/envlock-hello"));
  EXPECT_NE(slurp(prefix / "conda-meta/history").find("add"), std::string::npos);

  auto gone = envlock("--json rm envlock-greet");
  EXPECT_EQ(gone.exit_code, 0) << gone.err;
  EXPECT_EQ(gone.err, "");
  auto parsed = nlohmann::json::parse(gone.out, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << gone.out;
  EXPECT_EQ(parsed.at("edits").at(0).at("action"), "removed");
  EXPECT_EQ(parsed.at("install").at("prefix"), prefix.string());
  EXPECT_EQ(parsed.at("install").at("removed"), nlohmann::json::array({"envlock-greet-1.0.0-0"}));
  EXPECT_FALSE(fs::exists(prefix / "bin/envlock-greet"));
  EXPECT_TRUE(fs::exists(prefix / "bin/envlock-hello"));
  EXPECT_EQ(slurp(manifest()), "# demo\nchannels: [./channel]\nplatforms: [linux-64]\ndependencies:\n  - envlock-hello\n");
}

}  // namespace
}  // namespace envlock
