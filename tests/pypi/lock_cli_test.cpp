// `envlock lock` of pypi-dependencies (issue 20 point 2): after the conda solve, for the solution's
// python; the pins are pip entries `envlock install` reads (a wheel url and its sha256); a
// project a conda record provides is not pinned again; an sdist-only project is named.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "envlock/hash.hpp"
#include "support/files.hpp"
#include "support/run_command.hpp"
#include "wheel/zip_writer.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using testing::q;
using testing::run_command;
using testing::slurp;
using testing::spit;

void make_wheel(const fs::path& path, const std::string& dist, const std::string& version, const std::string& requires_dist) {
  const std::string di = dist + "-" + version + ".dist-info";
  testing::write_zip(path, {{di + "/METADATA", "Metadata-Version: 2.1\nName: " + dist + "\nVersion: " + version + "\n" + requires_dist},
                            {di + "/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
                            {di + "/RECORD", ""}});
}

/// `text` with the value of its `manifest_hash:` line (and any `sha256:<hex>` of a manifest) as `HASH`.
std::string without_manifest_hashes(std::string text) {
  for (std::size_t at = text.find("sha256:"); at != std::string::npos; at = text.find("sha256:", at + 1)) {
    std::size_t end = at + 7;
    while (end < text.size() && std::isxdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end - at - 7 == 64) text.replace(at, end - at, "HASH");
  }
  return text;
}

class PypiLockCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("envlock-pypi-lock-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    auto rec = [](const std::string& name, const std::string& version, std::vector<std::string> depends) {
      return nlohmann::json{{"name", name}, {"version", version}, {"build", "h0_cpython"}, {"build_number", 0},
                            {"depends", depends}, {"subdir", "linux-64"}};
    };
    nlohmann::json j = {{"info", {{"subdir", "linux-64"}}}, {"packages", nlohmann::json::object()},
                        {"packages.conda", {{"python-3.11.2-h0_cpython.conda", rec("python", "3.11.2", {})},
                                            {"six-1.16.0-h0_cpython.conda", rec("six", "1.16.0", {"python >=3.8"})}}}};
    spit(dir_ / "chan/linux-64/repodata.json", j.dump());
    spit(dir_ / "chan/noarch/repodata.json", R"({"info": {"subdir": "noarch"}, "packages": {}})");
    fs::create_directories(dir_ / "wheels");
    make_wheel(dir_ / "wheels/demo_app-1.2-py3-none-any.whl", "demo_app", "1.2",
               "Requires-Python: >=3.8\nRequires-Dist: six>=1.10\nRequires-Dist: helper>=1; python_version >= '3.9'\n"
               "Requires-Dist: legacy; python_version < '3'\n");
    make_wheel(dir_ / "wheels/helper-1.0-py3-none-any.whl", "helper", "1.0", "");
    make_wheel(dir_ / "wheels/helper-2.0-py3-none-any.whl", "helper", "2.0", "");
    spit(dir_ / "wheels/srconly-1.0.tar.gz", "x");
    cache_ = dir_.string() + "-cache";  // outside the checkout, which a test moves
    env_ = {{"XDG_CACHE_HOME", cache_.string()}, {"NO_COLOR", "1"}};
  }
  void TearDown() override {
    fs::remove_all(dir_);
    fs::remove_all(moved_);
    fs::remove_all(cache_);
  }
  testing::CommandResult envlock_in(const fs::path& where, const std::string& args) {
    return run_command("cd " + q(where) + " && " + testing::envlock_cmd() + " " + args, env_);
  }
  std::string sha(const std::string& file) { return hash_file(dir_ / "wheels" / file, HashAlgorithm::Sha256).value(); }
  std::string size(const std::string& file) { return std::to_string(fs::file_size(dir_ / "wheels" / file)); }

  /// A sha256 as the lockfile writes it: quoted when it starts with a digit (YAML would read a number).
  std::string sha_written(const std::string& file) {
    const std::string h = sha(file);
    return std::isdigit(static_cast<unsigned char>(h[0])) ? "\"" + h + "\"" : h;
  }

  fs::path dir_, moved_, cache_;
  std::map<std::string, std::string> env_;
};

const char* const kManifest =
    "channels: [./chan]\nplatforms: [linux-64]\nfind-links: [./wheels]\ndependencies: [python 3.11.*, six]\n"
    "pypi-dependencies: [demo-app]\n";

// The whole lockfile: each pin records what uv.lock and pixi.lock record (url, file name, sha256,
// size, index, requires_python, requires_dist) and what required it, the find-links folder's
// wheels relative to the lockfile; six is the conda package's, legacy's marker is false.
TEST_F(PypiLockCli, PinsWheelsForTheSolvedPythonAndLeavesCondaProvidedOnes) {
  spit(dir_ / "envlock.yaml", kManifest);
  auto r = envlock_in(dir_, "lock -f envlock.yaml");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string lock = slurp(dir_ / "envlock.lock");
  EXPECT_EQ(without_manifest_hashes(lock),
            "# envlock.lock — written by `envlock lock`; do not edit by hand. Format: docs/lockfile.md\n"
            "version: 1\n"
            "manifest_hash: HASH\n"
            "environments:\n"
            "  default:\n"
            "    requested:\n"
            "      - python 3.11.*\n"
            "      - six\n"
            "    platforms:\n"
            "      linux-64:\n"
            "        channels:\n"
            "          - \"./chan\"\n"
            "        virtual_packages:\n"
            "          - __archspec=1=x86_64\n"
            "          - __glibc=2.28=0\n"
            "          - __linux=4.18=0\n"
            "          - __unix=0=0\n"
            "        packages:\n"
            "          - name: python\n"
            "            version: \"3.11.2\"\n"
            "            build: h0_cpython\n"
            "            build_number: 0\n"
            "            subdir: linux-64\n"
            "            channel: \"./chan\"\n"
            "            url: \"./chan/linux-64/python-3.11.2-h0_cpython.conda\"\n"
            "            depends: []\n"
            "            constrains: []\n"
            "            track_features: []\n"
            "            layer: default\n"
            "          - name: six\n"
            "            version: \"1.16.0\"\n"
            "            build: h0_cpython\n"
            "            build_number: 0\n"
            "            subdir: linux-64\n"
            "            channel: \"./chan\"\n"
            "            url: \"./chan/linux-64/six-1.16.0-h0_cpython.conda\"\n"
            "            depends:\n"
            "              - python >=3.8\n"
            "            constrains: []\n"
            "            track_features: []\n"
            "            layer: default\n"
            "        pip:\n"
            "          - name: demo-app\n"
            "            version: \"1.2\"\n"
            "            url: \"./wheels/demo_app-1.2-py3-none-any.whl\"\n"
            "            file_name: demo_app-1.2-py3-none-any.whl\n"
            "            sha256: " + sha_written("demo_app-1.2-py3-none-any.whl") + "\n"
            "            size: " + size("demo_app-1.2-py3-none-any.whl") + "\n"
            "            index: \"./wheels\"\n"
            "            requires_python: \">=3.8\"\n"
            "            requires_dist:\n"
            "              - six>=1.10\n"
            "              - \"helper>=1; python_version >= '3.9'\"\n"
            "              - \"legacy; python_version < '3'\"\n"
            "            required_by:\n"
            "              - \"(manifest)\"\n"
            "          - name: helper\n"
            "            version: \"2.0\"\n"
            "            url: \"./wheels/helper-2.0-py3-none-any.whl\"\n"
            "            file_name: helper-2.0-py3-none-any.whl\n"
            "            sha256: " + sha_written("helper-2.0-py3-none-any.whl") + "\n"
            "            size: " + size("helper-2.0-py3-none-any.whl") + "\n"
            "            index: \"./wheels\"\n"
            "            required_by:\n"
            "              - demo-app\n");

  // The checkout moved (CI's clone): the lockfile is still fresh, names the wheels there, and a
  // lock there writes the same bytes.
  moved_ = dir_.string() + "-moved";
  fs::remove_all(moved_);
  fs::rename(dir_, moved_);
  r = envlock_in(moved_, "lock --check -f envlock.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "envlock.lock is up to date with envlock.yaml\n");
  r = envlock_in(moved_, "lock -f envlock.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(moved_ / "envlock.lock"), lock);
  fs::rename(moved_, dir_);

  // Only an sdist: named, exit 1.
  spit(dir_ / "envlock.yaml", "channels: [./chan]\nplatforms: [linux-64]\nfind-links: [./wheels]\ndependencies: [python 3.11.*]\n"
                              "pypi-dependencies: [srconly]\n");
  r = envlock_in(dir_, "lock -f envlock.yaml");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("srconly has only sdists (srconly-1.0.tar.gz): envlock installs wheels only"), std::string::npos) << r.err;
}

// Issue 20: the lock records the indexes its pins were resolved against (`pypi_indexes`, primary
// first, after virtual_packages), as pixi.lock records an environment's `indexes`; a relock writes
// the same bytes and `lock --check` reads it; a lockfile with no PyPI pin has no such key.
TEST_F(PypiLockCli, TheIndexesThePinsWereResolvedAgainstAreWritten) {
  const std::string index = "file://" + (dir_ / "simple").string();
  spit(dir_ / "simple/helper/index.html",
       "<html><body><a href=\"../../wheels/helper-2.0-py3-none-any.whl#sha256=" + sha("helper-2.0-py3-none-any.whl") +
           "\">helper-2.0-py3-none-any.whl</a></body></html>\n");
  spit(dir_ / "envlock.yaml", "channels: [./chan]\nplatforms: [linux-64]\npypi-indexes: [\"" + index +
                                  "\"]\ndependencies: [python 3.11.*]\npypi-dependencies: [helper]\n");
  auto r = envlock_in(dir_, "lock -f envlock.yaml");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string lock = slurp(dir_ / "envlock.lock");
  const std::string block = "          - __unix=0=0\n        pypi_indexes:\n          - " + index + "\n        packages:\n";
  EXPECT_NE(lock.find(block), std::string::npos) << lock;
  EXPECT_NE(lock.find("            index: " + index + "\n"), std::string::npos) << lock;
  r = envlock_in(dir_, "lock --check -f envlock.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "envlock.lock is up to date with envlock.yaml\n");
  r = envlock_in(dir_, "lock -f envlock.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(dir_ / "envlock.lock"), lock);
  // A review sees a swapped index (diff's solve inputs); a lockfile without the key (an older
  // envlock) is not compared on it.
  std::string other = lock;
  other.replace(other.find("          - " + index + "\n"), 12 + index.size() + 1, "          - https://pypi.example.com/simple\n");
  spit(dir_ / "other.lock", other);
  r = envlock_in(dir_, "diff envlock.lock other.lock");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 change: 1 inputs-changed; size unknown\nold: envlock.lock (envlock.lock v1)\nnew: other.lock (envlock.lock v1)\n\n"
                   "default / linux-64: 1 change, size unknown (2 -> 2 packages)\n"
                   "    inputs-changed                pypi indexes\n"
                   "                                  indexes " + index + " -> https://pypi.example.com/simple\n");
  std::string older = lock;
  older.erase(older.find("        pypi_indexes:\n"), std::string("        pypi_indexes:\n          - \n").size() + index.size());
  spit(dir_ / "older.lock", older);
  r = envlock_in(dir_, "diff envlock.lock older.lock");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "no changes\nold: envlock.lock (envlock.lock v1)\nnew: older.lock (envlock.lock v1)\n\n"
                   "default / linux-64: no changes (2 packages)\n");

  // No PyPI requirement: no pin, no key.
  spit(dir_ / "envlock.yaml", "channels: [./chan]\nplatforms: [linux-64]\npypi-indexes: [\"" + index +
                                  "\"]\ndependencies: [python 3.11.*]\n");
  r = envlock_in(dir_, "lock -f envlock.yaml");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(slurp(dir_ / "envlock.lock").find("pypi_indexes"), std::string::npos) << slurp(dir_ / "envlock.lock");
}

// `lock --check` names each PyPI requirement the lockfile no longer meets, as it names conda specs.
TEST_F(PypiLockCli, CheckReportsEachPypiRequirement) {
  spit(dir_ / "envlock.yaml", kManifest);
  ASSERT_EQ(envlock_in(dir_, "lock -f envlock.yaml").exit_code, 0);
  const std::string lock = slurp(dir_ / "envlock.lock");
  // A requirement the locked pin does not meet, and one nothing pins.
  spit(dir_ / "envlock.yaml", std::string(kManifest).replace(std::string(kManifest).find("[demo-app]"), 10, "[demo-app, helper<2, extra-tool]"));
  auto r = envlock_in(dir_, "lock --check -f envlock.yaml");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(without_manifest_hashes(r.err),
            "error: envlock.lock no longer satisfies envlock.yaml (3 reasons):\n"
            "  - the manifest changed since the lock (lockfile has HASH, the manifest now hashes to HASH); every spec, channel, "
            "platform, virtual package and base the lockfile records is unchanged, so the change is in the channel priority, a "
            "selector or a pip entry\n"
            "  - [default/linux-64] helper<2 (envlock.yaml line 5) is not satisfied by locked helper 2.0 (default/linux-64)\n"
            "  - [default/linux-64] extra-tool (envlock.yaml line 5) is not satisfied: no PyPI package extra-tool is locked for default/linux-64\n"
            "hint: run `envlock lock -f envlock.yaml` to update the lockfile\n");
  // A pin's requirement left unmet (helper's pin dropped by hand), and a pin for a requirement
  // the manifest no longer has.
  std::string edited = lock.substr(0, lock.find("          - name: helper\n"));
  spit(dir_ / "envlock.lock", edited);
  spit(dir_ / "envlock.yaml", std::string(kManifest).replace(std::string(kManifest).find("[demo-app]"), 10, "[]"));
  r = envlock_in(dir_, "lock --check -f envlock.yaml");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(without_manifest_hashes(r.err),
            "error: envlock.lock no longer satisfies envlock.yaml (2 reasons):\n"
            "  - the manifest changed since the lock (lockfile has HASH, the manifest now hashes to HASH); every spec, channel, "
            "platform, virtual package and base the lockfile records is unchanged, so the change is in the channel priority, a "
            "selector or a pip entry\n"
            "  - default/linux-64: PyPI package demo-app 1.2 is locked for a requirement the manifest no longer has\n"
            "hint: run `envlock lock -f envlock.yaml` to update the lockfile\n");
  spit(dir_ / "envlock.yaml", kManifest);
  r = envlock_in(dir_, "lock --check -f envlock.yaml");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "error: envlock.lock no longer satisfies envlock.yaml (1 reason):\n"
            "  - default/linux-64: PyPI package demo-app 1.2 requires 'helper>=1; python_version >= '3.9'' but no helper is locked\n"
            "hint: run `envlock lock -f envlock.yaml` to update the lockfile\n");
}

// `lock --update helper` moves a PyPI pin to the newest wheel; `envlock diff` of the two lockfiles
// shows the upgrade with its size, and a pin whose index changed is channel-changed.
TEST_F(PypiLockCli, UpdateMovesAPinAndDiffShowsIt) {
  spit(dir_ / "envlock.yaml", kManifest);
  ASSERT_EQ(envlock_in(dir_, "lock -f envlock.yaml").exit_code, 0);
  fs::copy_file(dir_ / "envlock.lock", dir_ / "old.lock");
  make_wheel(dir_ / "wheels/helper-3.0-py3-none-any.whl", "helper", "3.0", "Requires-Python: >=3.9\n");
  auto r = envlock_in(dir_, "lock -f envlock.yaml");  // the pin is kept while it fits
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(dir_ / "envlock.lock"), slurp(dir_ / "old.lock"));
  r = envlock_in(dir_, "lock -f envlock.yaml --update helper");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(slurp(dir_ / "envlock.lock").find("            version: \"3.0\"\n            url: \"./wheels/helper-3.0-py3-none-any.whl\"\n"),
            std::string::npos);
  r = envlock_in(dir_, "diff old.lock envlock.lock");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
            "1 change: 1 upgraded; size +23 B\n"
            "old: old.lock (envlock.lock v1)\n"
            "new: envlock.lock (envlock.lock v1)\n"
            "\n"
            "default / linux-64: 1 change, size +23 B (4 -> 4 packages)\n"
            "    upgraded                      pypi:helper  2.0 -> 3.0  +23 B\n");
  // The same wheels served by another index: channel-changed, naming both.
  std::string moved = slurp(dir_ / "envlock.lock");
  const std::string local = "index: \"./wheels\"";
  for (std::size_t at = moved.find(local); at != std::string::npos; at = moved.find(local, at))
    moved.replace(at, local.size(), "index: https://pypi.example.org/simple");
  spit(dir_ / "other-index.lock", moved);
  r = envlock_in(dir_, "diff envlock.lock other-index.lock");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
            "2 changes: 2 channel-changed; size +0 B\n"
            "old: envlock.lock (envlock.lock v1)\n"
            "new: other-index.lock (envlock.lock v1)\n"
            "\n"
            "default / linux-64: 2 changes, size +0 B (4 -> 4 packages)\n"
            "    channel-changed               pypi:demo-app  1.2 -> 1.2\n"
            "                                  index ./wheels -> https://pypi.example.org/simple\n"
            "    channel-changed               pypi:helper    3.0 -> 3.0\n"
            "                                  index ./wheels -> https://pypi.example.org/simple\n");
}

}  // namespace
}  // namespace envlock
