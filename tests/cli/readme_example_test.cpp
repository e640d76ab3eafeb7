// The README's first command end to end, as scripts/demo runs it: the example manifest
// (manifests/example/envlock.yaml, read from the source tree, never a copy kept here) over the
// fixture channel and its find-links folder of wheels, built by scripts/make-fixture-channel into
// build/fixture-channel beside it — locked, created in one command, and its programs run with
// `envlock run`: a conda package's entry point and a PyPI package's console script (issue 20,
// "Done when": the README's example includes a PyPI package installed from a local index).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>

#include "support/run_command.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using testing::envlock_cmd;
using testing::run_command;

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

TEST(ReadmeExample, CreatesTheExampleWithItsPypiPackageAndRunsBothPrograms) {
  const fs::path source = ENVLOCK_SOURCE_DIR;
  const fs::path root = fs::temp_directory_path() / ("envlock-readme-example-" + std::to_string(::getpid()));
  fs::remove_all(root);
  // The layout of a checkout: manifests/example/ and build/fixture-channel two levels up.
  fs::create_directories(root / "manifests/example");
  fs::copy_file(source / "manifests/example/envlock.yaml", root / "manifests/example/envlock.yaml");
  auto made = run_command(q(source / "scripts/make-fixture-channel") + " " + q(root / "build/fixture-channel"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::map<std::string, std::string> env = {{"ENVLOCK_PKGS_DIR", (root / "pkgs").string()},
                                                  {"XDG_CACHE_HOME", (root / "cache").string()},
                                                  {"HOME", root.string()},
                                                  {"NO_COLOR", "1"}};
  const std::string manifest = q(root / "manifests/example/envlock.yaml");
  const fs::path prefix = root / "manifests/example/.envlock/envs/default";
  const auto filtered = [&](std::string text) {
    text = std::regex_replace(text, std::regex(root.string()), "<ROOT>");
    text = std::regex_replace(text, std::regex("python3\\.\\d+"), "python3.X");
    text = std::regex_replace(text, std::regex("python-3\\.\\d+\\.\\d+"), "python-3.X.Y");
    return std::regex_replace(text, std::regex("python 3\\.\\d+"), "python 3.X");
  };

  auto created = run_command(envlock_cmd() + " create -f " + manifest, env);
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;
  EXPECT_EQ(filtered(created.out),
            "envlock-greet 1.0.0: post-link ran\n"
            "environment 'default' (linux-64) is ready in <ROOT>/manifests/example/.envlock/envs/default\n"
            "  4 installed, 0 unchanged, 0 removed; files: 3 linked, 4 copied, 3 relocated\n"
            "  pip: 1 installed, 0 unchanged\n");
  EXPECT_EQ(filtered(created.err),
            "locked <ROOT>/manifests/example/envlock.yaml -> <ROOT>/manifests/example/envlock.lock\n"
            "warning: 4 package(s) come from file://<ROOT>/build/fixture-channel, a local folder outside the "
            "lockfile's folder <ROOT>/manifests/example (check that it is the one meant): envlock-demo-1.0.0-pyh_0, "
            "envlock-greet-1.0.0-0, envlock-hello-1.0.0-0, python-3.X.Y-0_host_shim\n"
            "warning: 1 package(s) come from file://<ROOT>/build/fixture-channel/wheels, a local folder outside the "
            "lockfile's folder <ROOT>/manifests/example (check that it is the one meant): "
            "envlock_tip-1.0.0-py3-none-any.whl\n"
            "packages: 4 (4 downloaded, 0 from the package cache)\n");
  // The lockfile pins the wheel with its sha256, relative to the lockfile as the channel is.
  std::ifstream in(root / "manifests/example/envlock.lock");
  const std::string lock((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(lock.find("        pip:\n"
                      "          - name: envlock-tip\n"
                      "            version: \"1.0.0\"\n"
                      "            url: \"../../build/fixture-channel/wheels/envlock_tip-1.0.0-py3-none-any.whl\"\n"
                      "            file_name: envlock_tip-1.0.0-py3-none-any.whl\n"
                      "            sha256: "),
            std::string::npos)
      << lock;

  auto tip = run_command(envlock_cmd() + " run -f " + manifest + " -- envlock-tip", env);
  EXPECT_EQ(tip.exit_code, 0) << tip.err;
  EXPECT_EQ(tip.err, "");
  EXPECT_EQ(filtered(tip.out),
            "envlock-tip: a PyPI package, imported from "
            "<ROOT>/manifests/example/.envlock/envs/default/lib/python3.X/site-packages/envlock_tip\n"
            "envlock-tip: installed by envlock, from its wheel\n");
  auto demo = run_command(envlock_cmd() + " run -f " + manifest + " -- envlock-demo", env);
  EXPECT_EQ(demo.exit_code, 0) << demo.err;
  EXPECT_EQ(demo.err, "");
  EXPECT_EQ(filtered(demo.out),
            "envlock-demo: imported from "
            "<ROOT>/manifests/example/.envlock/envs/default/lib/python3.X/site-packages/envlock_demo\n"
            "envlock-demo: python 3.X\n"
            "Hello from an environment that envlock made.\n"
            "envlock-hello: running from <ROOT>/manifests/example/.envlock/envs/default\n");
  auto verified = run_command(envlock_cmd() + " verify -p " + q(prefix), env);
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  EXPECT_EQ(filtered(verified.out), "<ROOT>/manifests/example/.envlock/envs/default: 4 packages, 18 files checked (9 of "
                                    "them pip-installed): no drift\n");
  fs::remove_all(root);
}

}  // namespace
}  // namespace envlock
