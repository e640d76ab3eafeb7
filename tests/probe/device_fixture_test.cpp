// Real-hardware fixtures: fixtures/probe/<NAME>/{probe.json,info.json,env.json}, stored by
// scripts/probe-device on a machine with an NVIDIA GPU (docs/probe.md). Each is checked against
// the probe's own contract — what a real driver said must read as the fake drivers' reports do:
// every check has an id, a verdict, a summary and a source; every failing one a fix; each fact
// names its method; `__cuda` in `info` is the probe's CUDA version; a CUDA that initialised has
// devices. Skipped, saying so, where no fixture has been stored yet.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

namespace envlock {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> fixture_dirs() {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(PROBE_FIXTURES_DIR, ec), end; !ec && it != end; it.increment(ec)) {
    if (fs::exists(it->path() / "probe.json") && fs::exists(it->path() / "info.json")) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

TEST(DeviceFixture, RealHardwareReportsKeepTheProbeContract) {
  const auto dirs = fixture_dirs();
  if (dirs.empty()) {
    GTEST_SKIP() << "no real-hardware fixture in " << PROBE_FIXTURES_DIR
                 << ": run scripts/probe-device on a machine with an NVIDIA GPU and commit fixtures/probe/<NAME>/ "
                    "(docs/probe.md, \"Real-hardware fixtures\")";
  }
  for (const auto& dir : dirs) {
    SCOPED_TRACE(dir.string());
    const auto probe = read_json(dir / "probe.json");
    const auto info = read_json(dir / "info.json");
    const auto env = fs::exists(dir / "env.json") ? read_json(dir / "env.json") : nlohmann::json::object();
    const std::set<std::string> verdicts = {"pass", "info", "warn", "fail"};
    bool any_fail = false;
    for (const auto& c : probe.at("checks")) {
      EXPECT_FALSE(c.at("id").get<std::string>().empty());
      EXPECT_TRUE(verdicts.count(c.at("verdict").get<std::string>())) << c.dump();
      EXPECT_FALSE(c.at("summary").get<std::string>().empty()) << c.dump();
      EXPECT_FALSE(c.at("source").get<std::string>().empty()) << c.dump();
      if (c.at("verdict") == "fail" || c.at("verdict") == "warn") {
        EXPECT_TRUE(c.contains("hint") && !c.at("hint").get<std::string>().empty()) << "a verdict without a fix: " << c.dump();
      }
      any_fail = any_fail || c.at("verdict") == "fail";
    }
    EXPECT_EQ(probe.at("exit_code") != 0, any_fail);
    if (env.contains("probe_exit_code")) {
      EXPECT_EQ(probe.at("exit_code"), env.at("probe_exit_code"));
    }

    const auto& driver = probe.at("driver");
    ASSERT_TRUE(driver.contains("methods"));
    for (const auto& m : driver.at("methods")) {
      EXPECT_FALSE(m.at("method").get<std::string>().empty());
      EXPECT_FALSE(m.at("detail").get<std::string>().empty()) << "a method that says neither what it gave nor why it failed: " << m.dump();
    }
    if (!driver.at("driver_version").get<std::string>().empty()) {
      EXPECT_FALSE(driver.at("driver_version_method").get<std::string>().empty());
    }
    // __cuda in info is the probe's CUDA version (unless CONDA_OVERRIDE_CUDA set it).
    std::string vp_cuda;
    for (const auto& vp : info.at("virtual_packages")) {
      if (vp.at("name") == "__cuda") vp_cuda = vp.at("version").get<std::string>();
    }
    if (!env.contains("CONDA_OVERRIDE_CUDA") || env.at("CONDA_OVERRIDE_CUDA").is_null()) {
      EXPECT_EQ(vp_cuda, driver.value("cuda_version", std::string()));
    }
    if (driver.contains("cuda_version")) {
      EXPECT_FALSE(driver.at("cuda_version_method").get<std::string>().empty());
    }
    // A CUDA that initialised sees devices; NVML never fewer than CUDA.
    if (driver.at("libcuda").value("cuinit", -1) == 0) {
      EXPECT_FALSE(probe.at("cuda_devices").empty());
      if (driver.at("nvml").value("outcome", "") == "ok" && driver.at("nvml").value("init", -1) == 0) {
        EXPECT_GE(probe.at("devices").size(), probe.at("cuda_devices").size());
      }
    }
    // Discreet: no device identifiers left by the script.
    const std::string text = probe.dump() + info.dump();
    EXPECT_EQ(text.find("GPU-") == std::string::npos || text.find("GPU-00000000-0000-0000-0000-000000000000") != std::string::npos, true);
  }
}

}  // namespace
}  // namespace envlock
