// Every GPU layout the probe must find, each a fake host root holding the fake NVIDIA libraries
// where that layout keeps them (tests/probe/fake), run through the CLI and compared whole:
// loader path, distribution folder, WSL2, Jetson/L4T, container-injected folders, CUDA forward
// compatibility (working and failing), the fallback chain down to nvidia-smi, hanging and
// crashing libraries, and CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES hiding devices.
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "envlock/lockfile.hpp"
#include "envlock/probe.hpp"
#include "support/run_command.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::envlock_cmd;
using testing::run_command;

constexpr const char* kModule550 =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Feb 22 01:25:25 UTC 2024\n";
constexpr const char* kOneH100 =
    "gpu.count=1\ngpu.0.name=NVIDIA H100 80GB HBM3\ngpu.0.uuid=GPU-8c7b0e3a-1111-2222-3333-444444444444\ngpu.0.cc=9.0\n"
    "gpu.0.memory=85520809984\ncuda.driver_version=12040\nnvml.driver=550.54.14\n";

class Layout : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("envlock-layout-" + std::to_string(getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    root_ = dir_ / "root";
    fs::create_directories(root_);
    program(kOneH100);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& host_path, const std::string& text) {
    const fs::path p = root_ / fs::path(host_path).relative_path();
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  // A fake library copied where a layout keeps it, under its soname.
  void lib(const std::string& folder, const char* fake, const char* soname) {
    const fs::path to = root_ / fs::path(folder).relative_path();
    fs::create_directories(to);
    fs::copy_file(fake, to / soname, fs::copy_options::overwrite_existing);
  }
  void libcuda(const std::string& folder, const char* fake = FAKE_LIBCUDA) { lib(folder, fake, "libcuda.so.1"); }
  void libnvml(const std::string& folder) { lib(folder, FAKE_LIBNVML, "libnvidia-ml.so.1"); }
  void nodes(std::initializer_list<const char*> names) {
    for (const char* n : names) write(std::string("/dev/") + n, "");
  }
  void program(const std::string& config) { std::ofstream(dir_ / "gpu.conf") << config; }
  // A bare-metal driver 550.54.14 in a distribution folder.
  void bare_metal() {
    write("/proc/driver/nvidia/version", kModule550);
    nodes({"nvidiactl", "nvidia-uvm", "nvidia0"});
    libcuda("/usr/lib/x86_64-linux-gnu");
    libnvml("/usr/lib/x86_64-linux-gnu");
  }

  CommandResult run(const std::string& args, std::map<std::string, std::string> env = {}) {
    std::map<std::string, std::string> e = {{"ENVLOCK_FAKE_GPU_CONFIG", (dir_ / "gpu.conf").string()},
                                            {"ENVLOCK_LIBCUDA", "\x01unset"}, {"ENVLOCK_LIBNVML", "\x01unset"},
                                            {"ENVLOCK_NVIDIA_SMI", "\x01unset"}, {"CUDA_VISIBLE_DEVICES", "\x01unset"},
                                            {"NVIDIA_VISIBLE_DEVICES", "\x01unset"}, {"NVIDIA_DRIVER_CAPABILITIES", "\x01unset"},
                                            {"LD_LIBRARY_PATH", "\x01unset"}, {"container", "\x01unset"},
                                            {"KUBERNETES_SERVICE_HOST", "\x01unset"}, {"NO_COLOR", "1"}};
    for (auto& [k, v] : env) e[k] = v;
    CommandResult r = run_command(envlock_cmd() + " probe --root '" + root_.string() + "' " + args, e);
    r.out = filtered(r.out);
    r.err = filtered(r.err);
    return r;
  }
  // The temporary folder named as <tmp>, so outputs compare whole.
  std::string filtered(std::string text) const {
    const std::string d = dir_.string();
    for (std::size_t at = text.find(d); at != std::string::npos; at = text.find(d, at)) text.replace(at, d.size(), "<tmp>");
    return text;
  }
  nlohmann::json json_of(const std::string& args, std::map<std::string, std::string> env = {}) {
    const CommandResult r = run("--json " + args, std::move(env));
    return nlohmann::json::parse(r.out);
  }

  fs::path cuda_lockfile() {
    Lockfile lf;
    lf.manifest_hash = "sha256:" + std::string(64, '0');
    LockedEnvironment env;
    env.name = "default";
    env.requested = {"pytorch 2.3.*"};
    LockedPlatform lp;
    lp.platform = "linux-64";
    lp.channels = {"https://conda.anaconda.org/conda-forge"};
    for (const auto& [name, version, build, dep] :
         std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
             {"cuda-version", "12.4", "h3060b56_3", ""}, {"pytorch", "2.3.1", "cuda120_py312h26b3cf7_300", "__cuda"}}) {
      LockedPackage p;
      p.name = name;
      p.version = *Version::parse(version);
      p.build = build;
      p.subdir = "linux-64";
      if (!dep.empty()) p.depends = {dep};
      p.channel = "https://conda.anaconda.org/conda-forge";
      p.file_name = name + "-" + version + "-" + build + ".conda";
      p.url = p.channel + "/linux-64/" + p.file_name;
      p.sha256 = std::string(64, 'a');
      p.layer = "default";
      lp.packages.push_back(p);
    }
    env.platforms["linux-64"] = lp;
    lf.environments["default"] = env;
    const fs::path path = dir_ / "envlock.lock";
    EXPECT_TRUE(lf.write(path).ok());
    return path;
  }

  fs::path dir_;
  fs::path root_;
};

const nlohmann::json& check(const nlohmann::json& report, const std::string& id) {
  static const nlohmann::json none;
  for (const auto& c : report.at("checks")) {
    if (c.at("id") == id) return c;
  }
  return none;
}

// --- the search order --------------------------------------------------------------------------

TEST_F(Layout, CandidatesFollowTheLoaderThenEveryLayout) {
  write("/etc/ld.so.conf.d/nvidia.conf", "# the driver package\n/opt/nvidia/lib\n");
  for (const char* folder : {"/opt/nvidia/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib/wsl/lib", "/usr/lib/aarch64-linux-gnu/tegra",
                             "/usr/local/nvidia/lib64", "/usr/local/cuda-12.8/compat", "/usr/local/cuda-12.6/compat"}) {
    libcuda(folder);
  }
  const auto c = driver_library_candidates(root_, "libcuda.so.1", std::string("/usr/local/cuda-12.8/compat:/nonexistent"));
  std::vector<std::string> got;
  for (const auto& x : c) got.push_back(x.path.substr(root_.string().size()) + " " + to_string(x.layout));
  EXPECT_EQ(got, (std::vector<std::string>{"/usr/local/cuda-12.8/compat/libcuda.so.1 compat", "/opt/nvidia/lib/libcuda.so.1 loader-path",
                                           "/usr/lib/x86_64-linux-gnu/libcuda.so.1 system", "/usr/lib/wsl/lib/libcuda.so.1 wsl",
                                           "/usr/lib/aarch64-linux-gnu/tegra/libcuda.so.1 tegra",
                                           "/usr/local/nvidia/lib64/libcuda.so.1 container",
                                           "/usr/local/cuda-12.6/compat/libcuda.so.1 compat"}));
  // On the real root the loader's own search comes first, by soname.
  const auto real = driver_library_candidates("/", "libcuda.so.1", std::nullopt);
  ASSERT_FALSE(real.empty());
  EXPECT_EQ(real.front().path, "libcuda.so.1");
  EXPECT_EQ(real.front().layout, DriverLayout::LoaderPath);
}

// GOLDEN TESTS BELOW

}  // namespace
}  // namespace envlock
