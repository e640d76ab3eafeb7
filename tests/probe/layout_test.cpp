// Every GPU layout the probe must find, each a fake host root holding the fake NVIDIA libraries
// where that layout keeps them (tests/probe/fake), run through the CLI and compared whole:
// loader path, distribution folder, WSL2, Jetson/L4T, container-injected folders, CUDA forward
// compatibility (working and failing), the fallback chain down to nvidia-smi, hanging and
// crashing libraries, and CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES hiding devices.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
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
  // The whole output a user reads — exit code, stdout, stderr — against tests/probe/golden/NAME.txt
  // (ENVLOCK_UPDATE_GOLDEN=1 rewrites the file from this run; review the diff before committing).
  void expect_golden(const std::string& name, const CommandResult& r) {
    const std::string got = "exit " + std::to_string(r.exit_code) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
    const fs::path file = fs::path(PROBE_GOLDEN_DIR) / (name + ".txt");
    if (std::getenv("ENVLOCK_UPDATE_GOLDEN") != nullptr) std::ofstream(file, std::ios::binary) << got;
    std::ifstream in(file, std::ios::binary);
    ASSERT_TRUE(in) << "missing " << file << " (ENVLOCK_UPDATE_GOLDEN=1 writes it)";
    const std::string expected((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(got, expected) << "the output differs from " << file << " (ENVLOCK_UPDATE_GOLDEN=1 rewrites it)";
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

// --- one test per layout ----------------------------------------------------------------------

TEST_F(Layout, LoaderPathFromLdSoConf) {
  write("/proc/driver/nvidia/version", kModule550);
  nodes({"nvidiactl", "nvidia-uvm", "nvidia0"});
  write("/etc/ld.so.conf.d/nvidia.conf", "/opt/nvidia/lib\n");
  libcuda("/opt/nvidia/lib");
  libnvml("/opt/nvidia/lib");
  expect_golden("loader_path", run(""));
}

TEST_F(Layout, DistributionFolder) {
  bare_metal();
  const auto r = run("");
  expect_golden("system", r);
  const auto j = json_of("");
  EXPECT_EQ(j.at("driver").at("cuda_version"), "12.4");
  EXPECT_EQ(j.at("driver").at("libcuda").at("layout"), "system");
  EXPECT_EQ(j.at("driver").at("driver_version_method"), "NVML nvmlSystemGetDriverVersion (/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1)");
}

TEST_F(Layout, Wsl2WithDxgAndNoProc) {
  nodes({"dxg"});
  libcuda("/usr/lib/wsl/lib");
  libnvml("/usr/lib/wsl/lib");
  const auto r = run("");
  expect_golden("wsl", r);
  EXPECT_EQ(r.exit_code, 0);
  const auto j = json_of("");
  EXPECT_EQ(j.at("driver").at("wsl"), true);
  EXPECT_EQ(j.at("driver").at("cuda_version"), "12.4");  // the __cuda WSL2 hosts used to lack
}

TEST_F(Layout, JetsonTegraWithoutNvml) {
  write("/etc/nv_tegra_release", "# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, DATE: Tue Aug  1 19:57:35 UTC 2023\n");
  nodes({"nvmap", "nvhost-ctrl-gpu"});
  libcuda("/usr/lib/aarch64-linux-gnu/tegra");
  program("gpu.count=1\ngpu.0.name=Orin\ngpu.0.cc=8.7\ngpu.0.memory=31999999999\ncuda.driver_version=11040\n");
  const auto r = run("");
  expect_golden("tegra", r);
  EXPECT_EQ(r.exit_code, 0);
}

TEST_F(Layout, ContainerInjectedFolder) {
  write("/.dockerenv", "");
  nodes({"nvidiactl", "nvidia-uvm", "nvidia0"});
  libcuda("/usr/local/nvidia/lib64");
  libnvml("/usr/local/nvidia/lib64");
  expect_golden("container", run("", {{"NVIDIA_VISIBLE_DEVICES", "all"}, {"NVIDIA_DRIVER_CAPABILITIES", "compute,utility"}}));
}

TEST_F(Layout, ContainerWithoutGpuAccessAndACudaLock) {
  write("/.dockerenv", "");
  const fs::path lock = cuda_lockfile();
  expect_golden("container_no_gpu", run("-l '" + lock.string() + "'", {{"NVIDIA_VISIBLE_DEVICES", "all"}}));
}

// --- forward compatibility ---------------------------------------------------------------------

class Compat : public Layout {
 protected:
  void SetUp() override {
    Layout::SetUp();
    bare_metal();
    libcuda("/usr/local/cuda-12.8/compat", FAKE_LIBCUDA_COMPAT);
  }
  CommandResult run_compat(const std::string& args = "") {
    return run(args, {{"LD_LIBRARY_PATH", "/usr/local/cuda-12.8/compat"}});
  }
};

TEST_F(Compat, NotSupportedOnDevice804ReportsBothVersionsAndKeepsTheDriversCuda) {
  program(std::string(kOneH100) + "compat.init=804\ncompat.driver_version=12080\n");
  expect_golden("compat_804", run_compat());
  const auto j = json_of("", {{"LD_LIBRARY_PATH", "/usr/local/cuda-12.8/compat"}});
  EXPECT_EQ(j.at("driver").at("compat"), "fails");
  EXPECT_EQ(j.at("driver").at("libcuda").at("library"), "/usr/local/cuda-12.8/compat/libcuda.so.1");
  EXPECT_EQ(j.at("driver").at("libcuda").at("driver_version"), 12080);
  EXPECT_EQ(j.at("driver").at("libcuda_own").at("driver_version"), 12040);
  EXPECT_EQ(j.at("driver").at("cuda_version"), "12.4");  // never the 12.8 that failed
}

TEST_F(Compat, SystemDriverMismatch803) {
  program(std::string(kOneH100) + "compat.init=803\n");
  expect_golden("compat_803", run_compat());
}

TEST_F(Compat, WorkingForwardCompatibilityIsSaidAndCounts) {
  program(std::string(kOneH100) + "compat.init=0\n");
  const auto r = run_compat();
  expect_golden("compat_works", r);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(json_of("", {{"LD_LIBRARY_PATH", "/usr/local/cuda-12.8/compat"}}).at("driver").at("cuda_version"), "12.8");
}

TEST_F(Compat, InstalledButNotOnTheLoaderPathIsOnlyNamed) {
  program(std::string(kOneH100) + "compat.init=804\n");
  const auto j = json_of("");
  EXPECT_EQ(j.at("driver").at("compat"), "none");
  EXPECT_EQ(j.at("driver").at("compat_libraries"), nlohmann::json::array({"/usr/local/cuda-12.8/compat/libcuda.so.1"}));
  EXPECT_EQ(j.at("driver").at("cuda_version"), "12.4");
}

// --- the fallback chain ------------------------------------------------------------------------

TEST_F(Layout, NoLibrariesFallBackToProcAndNvidiaSmi) {
  write("/proc/driver/nvidia/version", kModule550);
  nodes({"nvidiactl", "nvidia-uvm", "nvidia0"});
  write("/usr/bin/nvidia-smi",
        "#!/bin/sh\ncat <<'EOF'\n<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n<driver_version>550.54.14</driver_version>\n"
        "<cuda_version>12.4</cuda_version>\n<attached_gpus>1</attached_gpus>\n</nvidia_smi_log>\nEOF\n");
  fs::permissions(root_ / "usr/bin/nvidia-smi", fs::perms::owner_all);
  expect_golden("chain_nvidia_smi", run(""));
}

TEST_F(Layout, NvidiaSmiThatFailsIsNamedWithItsExitStatus) {
  write("/proc/driver/nvidia/version", kModule550);
  write("/usr/bin/nvidia-smi", "#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'\nexit 9\n");
  fs::permissions(root_ / "usr/bin/nvidia-smi", fs::perms::owner_all);
  const auto j = json_of("");
  const auto& methods = j.at("driver").at("methods");
  ASSERT_EQ(methods.size(), 4u) << j.dump(2);
  EXPECT_EQ(methods[3].at("detail"), "exit status 9 (NVIDIA_SMI_ERROR_DRIVER_NOT_LOADED: no driver)");
  EXPECT_FALSE(j.at("driver").contains("cuda_version"));
}

// query_nvidia_smi reads the XML through the reader snapshot capture uses (parse_nvidia_smi_xml):
// what it answers for output that is no XML, XML of another root, and "N/A" is what its own XPath
// reader answered.
TEST_F(Layout, NvidiaSmiOutputThatSaysNothingIsNamed) {
  auto answer = [&](const std::string& xml) {
    write("/usr/bin/nvidia-smi", "#!/bin/sh\ncat <<'EOF'\n" + xml + "EOF\n");
    fs::permissions(root_ / "usr/bin/nvidia-smi", fs::perms::owner_all);
    const NvidiaSmiAnswer a = query_nvidia_smi((root_ / "usr/bin/nvidia-smi").string(), 10000, root_);
    return std::vector<std::string>{a.command, a.driver_version, a.cuda_version, a.error};
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(answer("NVIDIA-SMI <has failed\n"), (V{"/usr/bin/nvidia-smi -q -x", "", "", "the output is not XML"}));
  EXPECT_EQ(answer("<?xml version=\"1.0\" ?>\n<log><driver_version>550.54.14</driver_version></log>\n"),
            (V{"/usr/bin/nvidia-smi -q -x", "", "", "no <driver_version> or <cuda_version> under <nvidia_smi_log>"}));
  EXPECT_EQ(answer("<nvidia_smi_log>\n<driver_version> N/A </driver_version>\n<cuda_version>\n 12.4 </cuda_version>\n"
                   "</nvidia_smi_log>\n"),
            (V{"/usr/bin/nvidia-smi -q -x", "", "12.4", ""}));
}

TEST_F(Layout, NvmlWithoutLibcudaGivesTheCudaVersion) {
  write("/proc/driver/nvidia/version", kModule550);
  nodes({"nvidiactl", "nvidia-uvm", "nvidia0"});
  libnvml("/usr/lib/x86_64-linux-gnu");
  expect_golden("chain_nvml_only", run(""));
}

TEST_F(Layout, HangingNvmlIsKilledAndTheChainGoesOn) {
  bare_metal();
  program(std::string(kOneH100) + "nvml.hang=nvmlInit_v2\n");
  expect_golden("chain_nvml_hangs", run("--driver-timeout 1"));
}

TEST_F(Layout, CrashingLibcudaGivesNoCudaVersionWhateverNvmlSays) {
  bare_metal();
  program(std::string(kOneH100) + "cuda.crash=cuInit\n");
  expect_golden("chain_libcuda_crashes", run(""));
}

// A libcuda that is there but crashes, hangs or lacks a symbol cannot initialise: no __cuda,
// whatever NVML says (docs/probe.md, rule 4), in probe, info and install alike.
TEST_F(Layout, HangingLibcudaGivesNoCudaVersionWhateverNvmlSays) {
  bare_metal();
  program(std::string(kOneH100) + "cuda.hang=cuInit\n");
  expect_golden("chain_libcuda_hangs", run("--driver-timeout 1"));
}

TEST_F(Layout, LibcudaCrashingInCuDriverGetVersionGivesNoCudaVersion) {
  bare_metal();
  program(std::string(kOneH100) + "cuda.crash=cuDriverGetVersion\n");
  const auto j = json_of("");
  EXPECT_FALSE(j.at("driver").contains("cuda_version")) << j.at("driver").dump(2);
  EXPECT_EQ(check(j, "driver.cuda-version").at("summary"),
            "no __cuda: a libcuda that cannot initialise gives no CUDA version, whatever NVML says (CUDA 12.4): "
            "/usr/lib/x86_64-linux-gnu/libcuda.so.1 crashed (SIGSEGV) in cuDriverGetVersion");
}

TEST_F(Layout, PartialLibcudaWithACudaLockNamesTheLibraryNotVisibility) {
  write("/proc/driver/nvidia/version", kModule550);
  nodes({"nvidiactl", "nvidia-uvm", "nvidia0"});
  libcuda("/usr/lib/x86_64-linux-gnu", FAKE_LIBCUDA_PARTIAL);
  libnvml("/usr/lib/x86_64-linux-gnu");
  const fs::path lock = cuda_lockfile();
  expect_golden("partial_libcuda_cuda_lock", run("-l '" + lock.string() + "'"));
}

TEST_F(Layout, InfoAndInstallGiveNoCudaForACrashingOrHangingLibcuda) {
  bare_metal();
  Lockfile lf;
  lf.manifest_hash = "sha256:" + std::string(64, '0');
  LockedEnvironment env;
  env.name = "default";
  LockedPlatform lp;
  lp.platform = "linux-64";
  lp.virtual_packages = {{"__cuda", "12.4", "0"}};
  env.platforms["linux-64"] = lp;
  lf.environments["default"] = env;
  ASSERT_TRUE(lf.write(dir_ / "cuda.lock").ok());
  for (const char* fault : {"cuda.crash=cuInit", "cuda.hang=cuInit", "cuda.crash=cuDriverGetVersion"}) {
    SCOPED_TRACE(fault);
    program(std::string(kOneH100) + fault + "\n");
    const std::map<std::string, std::string> fake = {{"ENVLOCK_LIBCUDA", FAKE_LIBCUDA}, {"ENVLOCK_LIBNVML", FAKE_LIBNVML},
                                                     {"ENVLOCK_FAKE_GPU_CONFIG", (dir_ / "gpu.conf").string()},
                                                     {"CONDA_OVERRIDE_CUDA", "\x01unset"}, {"CUDA_VISIBLE_DEVICES", "\x01unset"},
                                                     {"ENVLOCK_CACHE_DIR", (dir_ / "cache").string()}};
    const auto info = run_command(envlock_cmd() + " info --json", fake);
    ASSERT_EQ(info.exit_code, 0) << info.err;
    for (const auto& vp : nlohmann::json::parse(info.out).at("virtual_packages")) EXPECT_NE(vp.at("name"), "__cuda") << info.out;
    auto r = run_command(envlock_cmd() + " install -l '" + (dir_ / "cuda.lock").string() + "' -p '" + (dir_ / "env").string() + "'", fake);
    r.err = filtered(r.err);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "env/conda-meta")) << r.err;
  }
}

TEST_F(Compat, ACompatLibraryThatCrashesOrHangsGivesNoCudaWhateverNvmlRepeats) {
  for (const char* fault : {"compat.crash=cuInit", "compat.hang=cuDriverGetVersion"}) {
    SCOPED_TRACE(fault);
    program(std::string(kOneH100) + "nvml.cuda_version=12080\n" + fault + "\n");
    const auto j = json_of("--driver-timeout 1", {{"LD_LIBRARY_PATH", "/usr/local/cuda-12.8/compat"}});
    EXPECT_FALSE(j.at("driver").contains("cuda_version")) << j.at("driver").dump(2);
    EXPECT_EQ(j.at("exit_code"), 1);
  }
  program(std::string(kOneH100) + "nvml.cuda_version=12080\ncompat.crash=cuInit\n");
  expect_golden("compat_crashes", run_compat());
}

// --- visibility is not presence ----------------------------------------------------------------

TEST_F(Layout, EmptyCudaVisibleDevicesKeepsCudaAndSaysWhoHidTheGpu) {
  bare_metal();
  expect_golden("hidden_empty", run("", {{"CUDA_VISIBLE_DEVICES", ""}}));
  const fs::path lock = cuda_lockfile();
  expect_golden("hidden_empty_cuda_lock", run("-l '" + lock.string() + "'", {{"CUDA_VISIBLE_DEVICES", ""}}));
}

TEST_F(Layout, EveryCudaVisibleDevicesForm) {
  bare_metal();
  program(std::string(kOneH100) + "gpu.0.mig_uuid=MIG-4a5b6c7d-1111-2222-3333-444444444444\n");
  struct Case {
    std::string value;
    bool hidden;
  };
  for (const Case& c : std::vector<Case>{{"", true}, {"-1", true}, {"7", true}, {"GPU-ffffffff", true}, {"MIG-ffffffff", true},
                                         {"0", false}, {"GPU-8c7b", false}, {"MIG-4a5b6c7d-1111-2222-3333-444444444444", false}}) {
    SCOPED_TRACE("CUDA_VISIBLE_DEVICES=" + c.value);
    const auto j = json_of("", {{"CUDA_VISIBLE_DEVICES", c.value}});
    EXPECT_EQ(j.at("driver").at("cuda_version"), "12.4");  // __cuda follows the driver
    const auto& v = check(j, "devices.visibility");
    if (c.hidden) {
      ASSERT_FALSE(v.is_null()) << j.dump(2);
      EXPECT_EQ(v.at("verdict"), "warn");
      EXPECT_EQ(v.at("summary"), "driver present, no device visible to this process: CUDA_VISIBLE_DEVICES=\"" + c.value +
                                     "\" hides the 1 GPU(s) the driver has");
      EXPECT_EQ(j.at("visibility").at("hidden_by"), "CUDA_VISIBLE_DEVICES");
    } else {
      EXPECT_TRUE(v.is_null()) << v.dump();
      EXPECT_EQ(check(j, "devices.count").at("summary"), "1 visible to CUDA, 1 installed (NVML)");
    }
  }
}

TEST_F(Layout, NvidiaVisibleDevicesNoneInAContainer) {
  write("/.dockerenv", "");
  libcuda("/usr/lib/x86_64-linux-gnu");
  libnvml("/usr/lib/x86_64-linux-gnu");
  program("gpu.count=0\ncuda.driver_version=12040\nnvml.driver=550.54.14\n");
  expect_golden("hidden_nvidia_visible_devices_none", run("", {{"NVIDIA_VISIBLE_DEVICES", "none"}}));
}

TEST_F(Layout, InfoKeepsCudaWhenCudaVisibleDevicesHidesEveryGpu) {
  // As conda (conda/plugins/virtual_packages/cuda.py drops CUDA_VISIBLE_DEVICES before cuInit):
  // hiding devices does not remove __cuda.
  bare_metal();
  for (const char* value : {"", "-1"}) {
    const auto r = run_command(envlock_cmd() + " info --json",
                               {{"ENVLOCK_LIBCUDA", FAKE_LIBCUDA}, {"ENVLOCK_LIBNVML", FAKE_LIBNVML},
                                {"ENVLOCK_FAKE_GPU_CONFIG", (dir_ / "gpu.conf").string()}, {"CUDA_VISIBLE_DEVICES", value},
                                {"CONDA_OVERRIDE_CUDA", "\x01unset"}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string cuda;
    const auto info = nlohmann::json::parse(r.out);
    for (const auto& vp : info.at("virtual_packages")) {
      if (vp.at("name") == "__cuda") cuda = vp.at("version").get<std::string>();
    }
    EXPECT_EQ(cuda, "12.4") << "CUDA_VISIBLE_DEVICES=" << value << "\n" << r.out;
  }
}

TEST_F(Layout, InstallOfACudaLockWarnsInsteadOfRefusing) {
  // A lockfile solved for __cuda=12.4 with nothing to download: the host check is all that runs.
  Lockfile lf;
  lf.manifest_hash = "sha256:" + std::string(64, '0');
  LockedEnvironment env;
  env.name = "default";
  LockedPlatform lp;
  lp.platform = "linux-64";
  lp.virtual_packages = {{"__cuda", "12.4", "0"}};
  env.platforms["linux-64"] = lp;
  lf.environments["default"] = env;
  ASSERT_TRUE(lf.write(dir_ / "cuda.lock").ok());
  const std::map<std::string, std::string> fake = {{"ENVLOCK_LIBCUDA", FAKE_LIBCUDA}, {"ENVLOCK_LIBNVML", FAKE_LIBNVML},
                                                   {"ENVLOCK_FAKE_GPU_CONFIG", (dir_ / "gpu.conf").string()},
                                                   {"CONDA_OVERRIDE_CUDA", "\x01unset"}, {"CUDA_VISIBLE_DEVICES", ""},
                                                   {"ENVLOCK_CACHE_DIR", (dir_ / "cache").string()}};
  auto r = run_command(envlock_cmd() + " install -l '" + (dir_ / "cuda.lock").string() + "' -p '" + (dir_ / "env").string() + "'", fake);
  r.err = filtered(r.err);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: driver present, no device visible to this process: CUDA_VISIBLE_DEVICES=\"\" hides the 1 GPU(s) the "
                       "driver has; the environment needs CUDA (the lockfile was solved for __cuda=12.4=0): installing it anyway, "
                       "but a job run like this sees no GPU (see `envlock probe`)\n"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "env/conda-meta"));
}

// --- hostile hosts: what the files, the libraries and the environment hold -----------------------

TEST_F(Layout, AnUnboundedDigitRunInProcOrTegraReleaseIsNoVersionNotACrash) {
  bare_metal();
  write("/proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + std::string(50000, '9') + ".1.1\n");
  write("/etc/nv_tegra_release", "# R35 (release), REVISION: " + std::string(60000, '4') + "\n");
  expect_golden("long_digit_runs", run(""));
  EXPECT_EQ(parse_kernel_module_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:13:15 UTC 2023"),
            "535.104.05");
  EXPECT_EQ(parse_kernel_module_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build"), "550.54.14");
  EXPECT_EQ(parse_kernel_module_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + std::string(50000, '9') + ".1.1"), "");
  EXPECT_EQ(parse_kernel_module_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550"), "");
}

TEST_F(Layout, FifosWhereTheProbeReadsFactsDoNotHangIt) {
  bare_metal();
  fs::remove(root_ / "proc/driver/nvidia/version");
  for (const char* f : {"proc/driver/nvidia/version", "etc/nv_tegra_release", "proc/1/cgroup", "etc/ld.so.conf"}) {
    fs::create_directories((root_ / f).parent_path());
    ASSERT_EQ(mkfifo((root_ / f).c_str(), 0600), 0) << f;
  }
  const CommandResult r = run_command("timeout 60 " + envlock_cmd() + " probe --json --root '" + root_.string() + "'",
                                      {{"ENVLOCK_FAKE_GPU_CONFIG", (dir_ / "gpu.conf").string()}, {"ENVLOCK_LIBCUDA", "\x01unset"},
                                       {"ENVLOCK_LIBNVML", "\x01unset"}, {"ENVLOCK_NVIDIA_SMI", "\x01unset"},
                                       {"LD_LIBRARY_PATH", "\x01unset"}, {"CUDA_VISIBLE_DEVICES", "\x01unset"}});
  ASSERT_NE(r.exit_code, 124) << "the probe hung on a FIFO";
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("driver").at("kernel_module"), false);  // not a regular file: not read
  EXPECT_EQ(j.at("driver").at("tegra_release"), "");
  EXPECT_EQ(j.at("driver").at("cuda_version"), "12.4");
}

TEST_F(Layout, ControlBytesFromTheDriverAndTheEnvironmentAreEscapedInText) {
  bare_metal();
  program("gpu.count=1\ngpu.0.name=NVIDIA \x1b[2JH100\ngpu.0.uuid=GPU-8c7b\x07\ngpu.0.cc=9.0\ngpu.0.memory=85520809984\n"
          "nvml.driver=550.54.14\x1b]0;owned\x07\n");
  write("/proc/driver/nvidia/version", "NVRM version: \x1b[31mgarbage\r\n");
  const auto r = run("", {{"CUDA_VISIBLE_DEVICES", "0\nprobe: pass"}, {"NVIDIA_DRIVER_CAPABILITIES", "utility\x1b[2J"},
                          {"NVIDIA_VISIBLE_DEVICES", "all\x1b[K"}, {"container", "docker\x1b[H"}});
  expect_golden("control_bytes", r);
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.out.find('\x07'), std::string::npos);
  EXPECT_EQ(r.out.find("\nprobe: pass\""), std::string::npos);  // no forged report line
  // JSON keeps the values, escaped as JSON escapes them.
  const auto j = json_of("", {{"CUDA_VISIBLE_DEVICES", "0\nprobe: pass"}});
  EXPECT_EQ(j.at("visibility").at("CUDA_VISIBLE_DEVICES"), "0\nprobe: pass");
}

TEST_F(Layout, ARootThatIsNoFolderIsRefused) {
  write("/file", "");
  fs::create_symlink("loop", root_ / "loop");
  struct Case {
    std::string root, message;
  };
  for (const Case& c : std::vector<Case>{{"/nonexistent/typo", "error: --root /nonexistent/typo: does not exist\n"},
                                         {(root_ / "file").string(), "error: --root <tmp>/root/file: is not a folder\n"},
                                         {(root_ / "loop").string(),
                                          "error: --root <tmp>/root/loop: is a symbolic link that loops (Too many levels of symbolic "
                                          "links)\n"}}) {
    SCOPED_TRACE(c.root);
    CommandResult r = run_command(envlock_cmd() + " probe --root '" + c.root + "'", {{"NO_COLOR", "1"}});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(filtered(r.err), c.message + "hint: give the folder that stands for / (a chroot or a mounted image)\n");
  }
}

TEST_F(Layout, ADriverTimeoutBeyondADayIsAUsageError) {
  bare_metal();
  const auto r = run("--driver-timeout 2147484");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "error: --driver-timeout: the timeout must be from 1 to 86400 seconds (one day), not 2147484\n"
            "hint: the default, 10 s, is enough for a healthy driver\n");
  EXPECT_EQ(run("--driver-timeout 86400").exit_code, 0);  // a healthy driver answers at once
}

TEST_F(Layout, OutputThatCannotBeWrittenIsExit1WhateverTheVerdict) {
  // /dev/full is the only portable "write fails with ENOSPC" stdout; a container without it cannot test this.
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "/dev/full is missing";
  write("/.dockerenv", "");
  const fs::path lock = cuda_lockfile();
  ASSERT_EQ(run("-l '" + lock.string() + "'").exit_code, 3);  // no GPU here, and the lock needs one
  const auto r = run_command("( " + envlock_cmd() + " probe --root '" + root_.string() + "' -l '" + lock.string() + "' >/dev/full )",
                             {{"ENVLOCK_LIBCUDA", "\x01unset"}, {"ENVLOCK_LIBNVML", "\x01unset"}, {"ENVLOCK_NVIDIA_SMI", "\x01unset"},
                              {"LD_LIBRARY_PATH", "\x01unset"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("error: cannot write output: No space left on device"), std::string::npos) << r.err;
}

TEST_F(Layout, HelpListsJson) {
  const auto r = run_command(envlock_cmd() + " probe --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--json (before or after `probe`) prints the report as one JSON object on stdout."), std::string::npos) << r.out;
}

}  // namespace
}  // namespace envlock
