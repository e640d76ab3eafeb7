// `envlock lock` of pypi-dependencies (issue 20 point 2): after the conda solve, for the solution's
// python; the pins are pip entries `envlock install` reads (a wheel url and its sha256); a
// project a conda record provides is not pinned again; an sdist-only project is named.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
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

TEST(PypiLockCli, PinsWheelsForTheSolvedPythonAndLeavesCondaProvidedOnes) {
  const fs::path dir = fs::temp_directory_path() / ("envlock-pypi-lock-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto rec = [](const std::string& name, const std::string& version, std::vector<std::string> depends) {
    return nlohmann::json{{"name", name}, {"version", version}, {"build", "h0_cpython"}, {"build_number", 0},
                          {"depends", depends}, {"subdir", "linux-64"}};
  };
  nlohmann::json j = {{"info", {{"subdir", "linux-64"}}}, {"packages", nlohmann::json::object()},
                      {"packages.conda", {{"python-3.11.2-h0_cpython.conda", rec("python", "3.11.2", {})},
                                          {"six-1.16.0-h0_cpython.conda", rec("six", "1.16.0", {"python >=3.8"})}}}};
  spit(dir / "chan/linux-64/repodata.json", j.dump());
  spit(dir / "chan/noarch/repodata.json", R"({"info": {"subdir": "noarch"}, "packages": {}})");
  fs::create_directories(dir / "wheels");
  make_wheel(dir / "wheels/demo_app-1.2-py3-none-any.whl", "demo_app", "1.2",
             "Requires-Dist: six>=1.10\nRequires-Dist: helper>=1; python_version >= '3.9'\nRequires-Dist: legacy; python_version < '3'\n");
  make_wheel(dir / "wheels/helper-1.0-py3-none-any.whl", "helper", "1.0", "");
  make_wheel(dir / "wheels/helper-2.0-py3-none-any.whl", "helper", "2.0", "");
  spit(dir / "wheels/srconly-1.0.tar.gz", "x");
  spit(dir / "envlock.yaml", "channels: [./chan]\nplatforms: [linux-64]\nfind-links: [./wheels]\ndependencies: [python 3.11.*, six]\n"
                             "pypi-dependencies: [demo-app]\n");
  const std::map<std::string, std::string> env{{"XDG_CACHE_HOME", (dir / "cache").string()}};
  auto r = run_command(testing::envlock_cmd() + " lock -f " + q(dir / "envlock.yaml"), env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string lock = slurp(dir / "envlock.lock");
  const std::string sha = hash_file(dir / "wheels/helper-2.0-py3-none-any.whl", HashAlgorithm::Sha256).value();
  // The find-links folder's wheels are pinned by their file: URL (absolute for now, docs/pypi.md).
  auto url = [&](const std::string& f) { return "file://" + (dir / "wheels" / f).string(); };
  const std::string demo_sha = hash_file(dir / "wheels/demo_app-1.2-py3-none-any.whl", HashAlgorithm::Sha256).value();
  ASSERT_NE(lock.find("        pip:\n"), std::string::npos) << lock;
  EXPECT_EQ(lock.substr(lock.find("        pip:\n")),
            "        pip:\n"
            "          - name: demo-app\n            version: \"1.2\"\n            url: " + url("demo_app-1.2-py3-none-any.whl") +
            "\n            sha256: \"" + demo_sha + "\"\n"
            "          - name: helper\n            version: \"2.0\"\n            url: " + url("helper-2.0-py3-none-any.whl") +
            "\n            sha256: \"" + sha + "\"\n");  // six: the conda package's; legacy: its marker is false
  // Only an sdist: named, exit 1.
  spit(dir / "envlock.yaml", "channels: [./chan]\nplatforms: [linux-64]\nfind-links: [./wheels]\ndependencies: [python 3.11.*]\n"
                             "pypi-dependencies: [srconly]\n");
  r = run_command(testing::envlock_cmd() + " lock -f " + q(dir / "envlock.yaml"), env);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("srconly has only sdists (srconly-1.0.tar.gz): envlock installs wheels only"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace envlock
