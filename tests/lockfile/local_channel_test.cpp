// Local channels named by a relative directory travel with the project: the lockfile records them
// relative to its own directory, reading resolves them against it, `lock --check` passes and
// `install` works in a copy of the project made elsewhere (issue 3, docs/lockfile.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "envlock/lockfile.hpp"
#include "support/lockfile_fixtures.hpp"
#include "support/run_command.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using testing::envlock_cmd;
using testing::run_command;

std::string slurp_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void spit_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

Lockfile one_package(const std::string& channel) {
  return testing::one_package_lockfile(channel, {"file:///srv/shared-channel", "https://conda.anaconda.org/conda-forge"});
}

TEST(LocalChannels, WrittenRelativeToTheLockfileAndResolvedWhereItIsRead) {
  Lockfile lf = one_package("file:///work/project/channel");
  lf.relative_channels = {"file:///work/project/channel"};

  const std::string text = lf.to_yaml("/work/project");
  EXPECT_NE(text.find("          - \"./channel\"\n          - file:///srv/shared-channel\n"), std::string::npos) << text;
  EXPECT_NE(text.find("channel: \"./channel\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("url: \"./channel/linux-64/tool-1.2-h0_0.conda\"\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("/work/project"), std::string::npos) << text;
  // The bytes do not depend on where the project is.
  Lockfile moved = one_package("file:///elsewhere/ci/clone/channel");
  moved.relative_channels = {"file:///elsewhere/ci/clone/channel"};
  EXPECT_EQ(moved.to_yaml("/elsewhere/ci/clone"), text);

  // Reading resolves against the directory given: the copy's own channel.
  auto back = Lockfile::parse(text, "envlock.lock", "/elsewhere/ci/clone");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  const LockedPlatform* lp = back->find("default", "linux-64");
  ASSERT_NE(lp, nullptr);
  EXPECT_EQ(lp->channels, (std::vector<std::string>{"file:///elsewhere/ci/clone/channel", "file:///srv/shared-channel",
                                                    "https://conda.anaconda.org/conda-forge"}));
  ASSERT_EQ(lp->packages.size(), 1u);
  EXPECT_EQ(lp->packages[0].channel, "file:///elsewhere/ci/clone/channel");
  EXPECT_EQ(lp->packages[0].url, "file:///elsewhere/ci/clone/channel/linux-64/tool-1.2-h0_0.conda");
  EXPECT_EQ(lp->packages[0].file_name, "tool-1.2-h0_0.conda");
  EXPECT_EQ(back->relative_channels, std::vector<std::string>{"file:///elsewhere/ci/clone/channel"});
  // ... and writing it back there gives the same bytes.
  EXPECT_EQ(back->to_yaml("/elsewhere/ci/clone"), text);

  // Without a directory (text from git or stdin) the paths stay as written.
  auto raw = Lockfile::parse(text, "envlock.lock");
  ASSERT_TRUE(raw.ok()) << raw.error().to_string();
  EXPECT_EQ(raw->find("default", "linux-64")->packages[0].url, "./channel/linux-64/tool-1.2-h0_0.conda");
  EXPECT_EQ(raw->relative_channels, std::vector<std::string>{"./channel"});
  EXPECT_EQ(raw->to_yaml(), text);
}

TEST(LocalChannels, ParentDirectoriesAndAbsoluteChannels) {
  Lockfile lf = one_package("file:///work/fixtures/channel");
  lf.relative_channels = {"file:///work/fixtures/channel"};
  const std::string text = lf.to_yaml("/work/manifests/example");
  EXPECT_NE(text.find("url: \"../../fixtures/channel/linux-64/tool-1.2-h0_0.conda\"\n"), std::string::npos) << text;
  auto back = Lockfile::parse(text, "envlock.lock", "/work/manifests/example");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->find("default", "linux-64")->packages[0].url, "file:///work/fixtures/channel/linux-64/tool-1.2-h0_0.conda");

  // A channel the manifest gave as an absolute path (not in relative_channels) stays absolute,
  // and so does everything when no directory is given.
  Lockfile absolute = one_package("file:///work/fixtures/channel");
  EXPECT_NE(absolute.to_yaml("/work/manifests/example").find("url: file:///work/fixtures/channel/linux-64/"),
            std::string::npos);
  EXPECT_NE(lf.to_yaml().find("url: file:///work/fixtures/channel/linux-64/"), std::string::npos);
}

// A channel folder and a project folder with a space, '#', '%' and non-ASCII: the lockfile holds
// the relative path as a path (what the manifest says), reading gives the percent-encoded URL a
// channel resolves to (envlock/url.hpp), and writing it back gives the same bytes.
TEST(LocalChannels, PathsWithSpacesAndOddBytesAreEncodedInUrlsAndPlainInTheFile) {
  const std::string channel = "file:///work/proj%20sp/my%20chan%20%231%20100%25%C3%A9";
  Lockfile lf = one_package(channel);
  lf.relative_channels = {channel};
  const std::string text = lf.to_yaml("/work/proj sp/sub dir");
  EXPECT_NE(text.find("channel: \"../my chan #1 100%\xc3\xa9\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("url: \"../my chan #1 100%\xc3\xa9/linux-64/tool-1.2-h0_0.conda\"\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("%20"), std::string::npos) << text;

  auto back = Lockfile::parse(text, "envlock.lock", "/work/proj sp/sub dir");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  const LockedPackage& p = back->find("default", "linux-64")->packages.at(0);
  EXPECT_EQ(p.channel, channel);
  EXPECT_EQ(p.url, channel + "/linux-64/tool-1.2-h0_0.conda");
  EXPECT_EQ(back->relative_channels, std::vector<std::string>{channel});
  EXPECT_EQ(back->to_yaml("/work/proj sp/sub dir"), text);
}

// Lockfiles written before URLs were encoded (a raw space in an absolute file:// URL) still read,
// and write back unchanged.
TEST(LocalChannels, UnencodedFileUrlsOfOlderLockfilesStillRead) {
  Lockfile lf = one_package("file:///tmp/x/my chan");
  const std::string text = lf.to_yaml("/tmp/x/proj");
  auto back = Lockfile::parse(text, "envlock.lock", "/tmp/x/proj");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->find("default", "linux-64")->packages.at(0).url, "file:///tmp/x/my chan/linux-64/tool-1.2-h0_0.conda");
  EXPECT_EQ(back->to_yaml("/tmp/x/proj"), text);
}

/// `envlock lock` over ./channel, then the project copied elsewhere and the original deleted.
TEST(LocalChannels, MovedCheckoutPassesCheckAndInstalls) {
  const fs::path root = fs::temp_directory_path() / ("envlock-local-channel-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path project = root / "first/project";
  const std::map<std::string, std::string> env = {{"ENVLOCK_PKGS_DIR", (root / "pkgs").string()},
                                                  {"ENVLOCK_CACHE_DIR", (root / "cache").string()},
                                                  {"NO_COLOR", "1"}};
  auto made = run_command(q(fs::path(ENVLOCK_SOURCE_DIR) / "scripts/make-fixture-channel") + " " + q(project / "channel"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  spit_file(project / "envlock.yaml",
            "name: moved\nchannels: [./channel]\nplatforms: [linux-64]\ndependencies:\n  - envlock-greet\n");
  auto locked = run_command(envlock_cmd() + " lock -f " + q(project / "envlock.yaml"), env);
  ASSERT_EQ(locked.exit_code, 0) << locked.err;
  const std::string text = slurp_file(project / "envlock.lock");
  EXPECT_NE(text.find("url: \"./channel/noarch/envlock-greet-1.0.0-0.tar.bz2\"\n"), std::string::npos) << text;
  EXPECT_EQ(text.find(root.string()), std::string::npos) << text;
  ASSERT_EQ(run_command(envlock_cmd() + " lock --check -f " + q(project / "envlock.yaml"), env).exit_code, 0);

  const fs::path moved = root / "second/clone";
  fs::create_directories(moved.parent_path());
  fs::copy(project, moved, fs::copy_options::recursive);
  fs::remove_all(root / "first");

  auto check = run_command(envlock_cmd() + " lock --check -f " + q(moved / "envlock.yaml") + " --json", env);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("\"fresh\": true"), std::string::npos) << check.out;
  // Locking again in the copy changes no byte.
  auto again = run_command(envlock_cmd() + " lock -f " + q(moved / "envlock.yaml"), env);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(slurp_file(moved / "envlock.lock"), text);

  // `envlock create` writes the same lockfile as `envlock lock`.
  fs::remove(moved / "envlock.lock");
  auto created = run_command(envlock_cmd() + " create -f " + q(moved / "envlock.yaml"), env);
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;
  EXPECT_EQ(slurp_file(moved / "envlock.lock"), text);

  const fs::path prefix = root / "env";
  auto installed = run_command(envlock_cmd() + " install -l " + q(moved / "envlock.lock") + " -p " + q(prefix), env);
  ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;
  auto greet = run_command(q(prefix / "bin/envlock-greet"));
  EXPECT_EQ(greet.exit_code, 0) << greet.err;
  EXPECT_NE(greet.out.find("envlock-greet: prefix is " + prefix.string()), std::string::npos) << greet.out;

  // A channel that really changed is still reported.
  spit_file(moved / "envlock.yaml",
            "name: moved\nchannels: [./other]\nplatforms: [linux-64]\ndependencies:\n  - envlock-greet\n");
  auto stale = run_command(envlock_cmd() + " lock --check -f " + q(moved / "envlock.yaml") + " --json", env);
  EXPECT_EQ(stale.exit_code, 1);
  EXPECT_NE(stale.out.find("channels-changed"), std::string::npos) << stale.out;
  fs::remove_all(root);
}

// A new-user attack (session 8): a package URL that starts with its channel's relative spelling but
// leaves it (`./channel/../../elsewhere/…`) is normalised as a whole, so install's warning about a
// local folder outside the project names the folder really read, not the channel.
TEST(LocalChannels, AUrlThatLeavesItsChannelIsNormalisedAsAWhole) {
  Lockfile lf = one_package("file:///work/project/channel");
  lf.relative_channels = {"file:///work/project/channel"};
  std::string text = lf.to_yaml("/work/project");
  const std::string url = "url: \"./channel/linux-64/tool-1.2-h0_0.conda\"";
  ASSERT_NE(text.find(url), std::string::npos) << text;
  text.replace(text.find(url), url.size(), "url: \"./channel/../../elsewhere/tool-1.2-h0_0.conda\"");
  auto back = Lockfile::parse(text, "envlock.lock", "/work/project");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->find("default", "linux-64")->packages[0].url, "file:///work/elsewhere/tool-1.2-h0_0.conda");
  EXPECT_EQ(back->find("default", "linux-64")->packages[0].channel, "file:///work/project/channel");
}

// Issue 17, point 9: no lockfile holds the home folder of whoever wrote it. A `file://` channel
// (and its package URLs, and a pip URL) under $HOME is written `~/…` by its decoded path, read
// back against $HOME (so a lockfile moved to another user's machine names their folder), kept as
// written without a directory (`envlock show`), and written back to the same bytes.
TEST(LocalChannels, ChannelsUnderTheHomeFolderAreWrittenWithTilde) {
  const char* old_home = std::getenv("HOME");
  const std::string saved = old_home != nullptr ? old_home : "";
  ::setenv("HOME", "/home/ana/", 1);  // a trailing slash is no part of the folder
  const std::string channel = "file:///home/ana/chans/my%20chan";
  Lockfile lf = one_package(channel);
  PipPackage wheel;
  wheel.name = "tool-py";
  wheel.version = "1.0";
  wheel.url = "file:///home/ana/wheels/tool_py-1.0-py3-none-any.whl";
  lf.environments["default"].platforms["linux-64"].pip = {wheel};
  const std::string text = lf.to_yaml("/work/project");
  EXPECT_NE(text.find("          - \"~/chans/my chan\"\n          - file:///srv/shared-channel\n"), std::string::npos) << text;
  EXPECT_NE(text.find("channel: \"~/chans/my chan\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("url: \"~/chans/my chan/linux-64/tool-1.2-h0_0.conda\"\n"), std::string::npos) << text;
  // A pip source too (an editable tree, a local wheel): `~/…`, looked for in the reader's home.
  EXPECT_NE(text.find("url: \"~/wheels/tool_py-1.0-py3-none-any.whl\"\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("/home/ana"), std::string::npos) << text;
  // `/home/ana2` is not under `/home/ana`.
  EXPECT_NE(one_package("file:///home/ana2/chan").to_yaml("/work/project").find("url: file:///home/ana2/chan/"),
            std::string::npos);

  ::setenv("HOME", "/home/bo", 1);  // the same file read by another user
  auto back = Lockfile::parse(text, "envlock.lock", "/work/project");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  const LockedPlatform* lp = back->find("default", "linux-64");
  ASSERT_NE(lp, nullptr);
  EXPECT_EQ(lp->channels.front(), "file:///home/bo/chans/my%20chan");
  EXPECT_EQ(lp->packages[0].channel, "file:///home/bo/chans/my%20chan");
  EXPECT_EQ(lp->packages[0].url, "file:///home/bo/chans/my%20chan/linux-64/tool-1.2-h0_0.conda");
  ASSERT_EQ(lp->pip.size(), 1u);
  EXPECT_EQ(lp->pip[0].url, "file:///home/bo/wheels/tool_py-1.0-py3-none-any.whl");
  EXPECT_TRUE(back->relative_channels.empty());
  EXPECT_EQ(back->to_yaml("/elsewhere"), text);

  auto raw = Lockfile::parse(text, "envlock.lock");
  ASSERT_TRUE(raw.ok()) << raw.error().to_string();
  EXPECT_EQ(raw->find("default", "linux-64")->packages[0].url, "~/chans/my chan/linux-64/tool-1.2-h0_0.conda");
  EXPECT_EQ(raw->to_yaml(), text);
  if (old_home != nullptr) ::setenv("HOME", saved.c_str(), 1);
  else ::unsetenv("HOME");
}

// `envlock lock` of a manifest naming a channel in the home folder by an absolute path: the
// lockfile holds `~/…`, stderr warns whole, stdout names the lockfile as the user spelled it.
TEST(LocalChannels, LockWarnsForAHomeChannelOutsideTheProject) {
  const fs::path root = fs::temp_directory_path() / ("envlock-home-channel-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path home = root / "home/ana";
  const std::map<std::string, std::string> env = {{"ENVLOCK_PKGS_DIR", (root / "pkgs").string()},
                                                  {"ENVLOCK_CACHE_DIR", (root / "cache").string()},
                                                  {"HOME", home.string()},
                                                  {"NO_COLOR", "1"}};
  auto made = run_command(q(fs::path(ENVLOCK_SOURCE_DIR) / "scripts/make-fixture-channel") + " " + q(home / "chan"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  spit_file(home / "proj/envlock.yaml", "name: p\nchannels: [" + (home / "chan").string() +
                                            "]\nplatforms: [linux-64]\ndependencies:\n  - envlock-greet\n");
  auto locked = run_command("cd " + q(home / "proj") + " && " + envlock_cmd() + " lock -f envlock.yaml", env);
  EXPECT_EQ(locked.exit_code, 0) << locked.err;
  EXPECT_EQ(locked.out, "locked envlock.lock\n  default / linux-64: 2 packages\n");
  EXPECT_EQ(locked.err,
            "warning: channel ~/chan is in the home folder, outside the project: the lockfile records it as ~/chan, "
            "which install looks up in the home folder of whoever runs it; to make the lockfile portable, move the "
            "channel into the project and name it by a relative path (./channel)\n");
  const std::string text = slurp_file(home / "proj/envlock.lock");
  EXPECT_EQ(text.find(home.string()), std::string::npos) << text;
  EXPECT_NE(text.find("url: \"~/chan/noarch/envlock-greet-1.0.0-0.tar.bz2\"\n"), std::string::npos) << text;
  auto check = run_command(envlock_cmd() + " lock --check -f " + q(home / "proj/envlock.yaml"), env);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  auto installed =
      run_command(envlock_cmd() + " install -l " + q(home / "proj/envlock.lock") + " -p " + q(root / "env"), env);
  EXPECT_EQ(installed.exit_code, 0) << installed.out << installed.err;
  fs::remove_all(root);
}

}  // namespace
}  // namespace envlock
