// The probe through fake NVIDIA libraries (tests/probe/fake) and fake host roots: every driver,
// device, container and package fact, and the exit codes.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "envlock/platform.hpp"
#include "envlock/probe.hpp"
#include "envlock/virtual_packages.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;

constexpr const char* kOpenModuleLine =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build  (builder@host)  Thu Feb 22 01:25:25 UTC 2024\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";

// A fake host: a root folder, the fake libraries' answers, and the process environment the
// fake libraries read (CUDA_VISIBLE_DEVICES is read by libcuda itself, as on a real host).
class FakeHost : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("envlock-probe-" + std::to_string(getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "root");
    config_ = dir_ / "gpu.conf";
    setenv("ENVLOCK_FAKE_GPU_CONFIG", config_.c_str(), 1);
    for (const char* v : {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "container",
                          "KUBERNETES_SERVICE_HOST"}) {
      unsetenv(v);
    }
  }
  void TearDown() override {
    unsetenv("ENVLOCK_FAKE_GPU_CONFIG");
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("NVIDIA_VISIBLE_DEVICES");
    unsetenv("NVIDIA_DRIVER_CAPABILITIES");
    fs::remove_all(dir_);
  }

  void write(const fs::path& rel, const std::string& text) {
    const fs::path p = dir_ / "root" / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  void program(const std::string& config) { std::ofstream(config_) << config; }

  // A working driver 550.54.14 (CUDA 12.4) with `gpus` H100s and their device nodes.
  void healthy(int gpus) {
    write("proc/driver/nvidia/version", kOpenModuleLine);
    write("dev/nvidiactl", "");
    write("dev/nvidia-uvm", "");
    fs::create_directories(dir_ / "root/dev/nvidia-caps");
    std::string conf = "gpu.count=" + std::to_string(gpus) + "\ncuda.driver_version=12040\nnvml.driver=550.54.14\n";
    for (int i = 0; i < gpus; ++i) {
      write("dev/nvidia" + std::to_string(i), "");
      conf += "gpu." + std::to_string(i) + ".name=NVIDIA H100 80GB HBM3\n";
      conf += "gpu." + std::to_string(i) + ".uuid=GPU-0000000" + std::to_string(i) + "-1111-2222-3333-444444444444\n";
      conf += "gpu." + std::to_string(i) + ".cc=9.0\n";
      conf += "gpu." + std::to_string(i) + ".memory=85520809984\n";
    }
    program(conf);
  }

  Host host(const std::string& libcuda = FAKE_LIBCUDA, const std::string& libnvml = FAKE_LIBNVML) {
    Host h = Host::system();
    h.root = dir_ / "root";
    h.libcuda = libcuda;
    h.libnvml = libnvml;
    h.timeout_ms = 5000;
    return h;
  }

  ProbeReport probe(std::optional<PackageCudaFacts> packages = std::nullopt, Host h = {}) {
    if (h.libcuda.empty()) h = host();
    return evaluate_probe(gather_host_facts(h), std::move(packages), "test.lock environment default (linux-64)");
  }

  fs::path dir_;
  fs::path config_;
};

const ProbeCheck* find(const ProbeReport& r, const std::string& id) {
  for (const auto& c : r.checks) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

std::string dump(const ProbeReport& r) { return r.to_text(false); }

RepoDataRecord record(const std::string& name, const std::string& version, const std::string& build,
                      std::vector<std::string> depends = {}, std::vector<std::string> constrains = {}) {
  RepoDataRecord r;
  r.name = name;
  auto v = Version::parse(version);
  EXPECT_TRUE(v.ok()) << version;
  if (v) r.version = *v;
  r.build = build;
  r.subdir = "linux-64";
  r.depends = std::move(depends);
  r.constrains = std::move(constrains);
  return r;
}

// A CUDA 12.4 pytorch environment as conda-forge locks it.
std::vector<RepoDataRecord> cuda_pytorch(const std::string& cuda = "12.4", const std::string& cuda_spec = "__cuda") {
  return {record("cuda-version", cuda, "h3060b56_3", {}, {"__cuda >=" + cuda.substr(0, cuda.find('.')), "cudatoolkit " + cuda + "|" + cuda + ".*"}),
          record("cuda-cudart", cuda + ".127", "h99ab3db_0", {"cuda-version >=" + cuda + ",<" + cuda + ".0a0"}),
          record("pytorch", "2.3.1", "cuda120_py312h26b3cf7_300", {cuda_spec, "python >=3.12,<3.13.0a0"}),
          record("python", "3.12.4", "h194c7f8_0_cpython")};
}

// --- driver facts --------------------------------------------------------------------------

TEST_F(FakeHost, HealthyTwoGpusPassWithEveryFact) {
  healthy(2);
  const ProbeReport r = probe();
  EXPECT_EQ(r.exit_code(), 0) << dump(r);
  EXPECT_TRUE(r.host.kernel_module);
  EXPECT_EQ(r.host.kernel_module_version, "550.54.14");
  EXPECT_EQ(r.host.cuda.outcome, VendorOutcome::Ok);
  EXPECT_EQ(r.host.cuda.init_result, 0);
  EXPECT_EQ(r.host.cuda.init_error_name, "CUDA_SUCCESS");
  EXPECT_EQ(r.host.cuda.driver_version, 12040);
  EXPECT_EQ(r.host.nvml.driver_version, "550.54.14");
  ASSERT_EQ(r.host.cuda.devices.size(), 2u);
  EXPECT_EQ(r.host.cuda.devices[1].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.host.cuda.devices[1].cc_major, 9);
  EXPECT_EQ(r.host.cuda.devices[1].cc_minor, 0);
  EXPECT_EQ(r.host.cuda.devices[1].total_memory_bytes, 85520809984u);
  ASSERT_EQ(r.host.nvml.devices.size(), 2u);
  EXPECT_EQ(r.host.nvml.devices[0].uuid, "GPU-00000000-1111-2222-3333-444444444444");
  EXPECT_FALSE(r.host.nvml.devices[0].mig_current.has_value());
  ASSERT_EQ(r.host.device_nodes.size(), 4u);  // nvidia-caps/ is a folder, not a node
  EXPECT_EQ(r.host.device_nodes[0].path, "/dev/nvidia-uvm");

  for (const char* id : {"driver.kernel-module", "driver.device-nodes", "driver.libcuda", "driver.cuinit",
                         "driver.cuda-version", "driver.nvml", "devices.count", "device.0", "device.1"}) {
    const ProbeCheck* c = find(r, id);
    ASSERT_NE(c, nullptr) << id << "\n" << dump(r);
    EXPECT_EQ(c->verdict, Verdict::Pass) << id << ": " << c->summary;
  }
  EXPECT_EQ(find(r, "driver.cuda-version")->summary, "the driver supports CUDA 12.4: __cuda=12.4");
  EXPECT_EQ(find(r, "driver.cuda-version")->source, "libcuda cuDriverGetVersion (" FAKE_LIBCUDA ")");
  EXPECT_EQ(find(r, "devices.count")->summary, "2 visible to CUDA, 2 installed (NVML)");
  EXPECT_EQ(find(r, "device.1")->summary, "NVIDIA H100 80GB HBM3, compute capability 9.0, 79.6 GiB, visible");

  const nlohmann::json j = r.to_json();
  EXPECT_EQ(j.at("exit_code"), 0);
  EXPECT_EQ(j.at("verdict"), "pass");
  EXPECT_EQ(j.at("driver").at("cuda_version"), "12.4");
  EXPECT_EQ(j.at("driver").at("libcuda").at("cuinit_name"), "CUDA_SUCCESS");
  EXPECT_EQ(j.at("devices").size(), 2u);
  EXPECT_EQ(j.at("devices")[0].at("compute_capability"), "9.0");
  EXPECT_EQ(j.at("devices")[0].at("visible"), true);
  // NVIDIA's build host in the module line never reaches the report.
  EXPECT_EQ(j.dump().find("builder@host"), std::string::npos);
  EXPECT_EQ(r.to_json().dump(), j.dump());  // deterministic
}

TEST_F(FakeHost, ClassicKernelModuleLineIsParsed) {
  healthy(1);
  write("proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n");
  program("gpu.count=1\ncuda.driver_version=12020\nnvml.driver=535.104.05\n");
  const ProbeReport r = probe();
  EXPECT_EQ(r.host.kernel_module_version, "535.104.05");
  EXPECT_EQ(find(r, "driver.version-match"), nullptr) << dump(r);
  EXPECT_EQ(r.exit_code(), 0) << dump(r);
}

TEST_F(FakeHost, NoDriverAtAllIsInformationOnACpuHost) {
  const ProbeReport r = probe(std::nullopt, host("/nonexistent/libcuda.so.1", "/nonexistent/libnvidia-ml.so.1"));
  EXPECT_EQ(r.exit_code(), 0) << dump(r);
  EXPECT_EQ(r.host.cuda.outcome, VendorOutcome::LibraryMissing);
  EXPECT_NE(r.host.cuda.error.find("/nonexistent/libcuda.so.1"), std::string::npos) << r.host.cuda.error;
  EXPECT_EQ(find(r, "driver.kernel-module")->verdict, Verdict::Info);
  EXPECT_EQ(find(r, "driver.libcuda")->verdict, Verdict::Info);
}

TEST_F(FakeHost, NoDriverWhereTheLockfileNeedsAGpuIsExit3) {
  const auto packages = analyze_packages(cuda_pytorch(), {"pytorch 2.3.*"}, {});
  ASSERT_TRUE(packages.needs_gpu());
  const ProbeReport r = probe(packages, host("/nonexistent/libcuda.so.1", "/nonexistent/libnvidia-ml.so.1"));
  EXPECT_EQ(r.exit_code(), 3) << dump(r);
  EXPECT_EQ(find(r, "driver.libcuda")->verdict, Verdict::Fail);
  EXPECT_EQ(find(r, "packages.cuda-driver")->verdict, Verdict::Fail);
  EXPECT_NE(dump(r).find("no usable GPU"), std::string::npos);
}

TEST_F(FakeHost, CuInitNoDeviceNamesTheError) {
  healthy(0);
  const ProbeReport r = probe();
  ASSERT_NE(find(r, "driver.cuinit"), nullptr) << dump(r);
  EXPECT_EQ(r.host.cuda.init_result, 100);
  EXPECT_EQ(r.host.cuda.init_error_name, "CUDA_ERROR_NO_DEVICE");
  EXPECT_NE(find(r, "driver.cuinit")->summary.find("CUDA_ERROR_NO_DEVICE"), std::string::npos);
  EXPECT_EQ(find(r, "driver.cuinit")->verdict, Verdict::Warn);  // nothing asked for a GPU
  EXPECT_EQ(r.exit_code(), 0) << dump(r);
  EXPECT_EQ(probe(analyze_packages(cuda_pytorch(), {}, {})).exit_code(), 3);
}

TEST_F(FakeHost, CuInitSystemDriverMismatchIsAFailure) {
  healthy(1);
  program("gpu.count=1\ncuda.init=803\nnvml.driver=550.54.14\n");
  const ProbeReport r = probe();
  EXPECT_EQ(r.host.cuda.init_error_name, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH");
  const ProbeCheck* c = find(r, "driver.cuinit");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->verdict, Verdict::Fail);
  EXPECT_NE(c->summary.find("CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)"), std::string::npos) << c->summary;
  EXPECT_FALSE(c->hint.empty());
  EXPECT_EQ(r.exit_code(), 1);
  EXPECT_EQ(probe(analyze_packages(cuda_pytorch(), {}, {})).exit_code(), 3);
}

TEST_F(FakeHost, UnknownCuInitErrorWithoutANameFromTheLibrary) {
  healthy(1);
  program("gpu.count=1\ncuda.init=304\n");  // the fake's cuGetErrorName does not know 304
  const ProbeReport r = probe();
  EXPECT_EQ(r.host.cuda.init_error_name, "CUDA_ERROR_OPERATING_SYSTEM");
  EXPECT_EQ(find(r, "driver.cuinit")->verdict, Verdict::Fail);
}

TEST_F(FakeHost, CrashInsideTheDriverLibraryIsAVerdictNotACrash) {
  healthy(1);
  program("gpu.count=1\ncuda.crash=cuInit\nnvml.crash=nvmlDeviceGetName\n");
  const ProbeReport r = probe();
  EXPECT_EQ(r.host.cuda.outcome, VendorOutcome::Crashed);
  EXPECT_EQ(r.host.cuda.step, "cuInit");
  EXPECT_EQ(r.host.cuda.error, "SIGSEGV");
  EXPECT_EQ(find(r, "driver.libcuda")->verdict, Verdict::Fail);
  EXPECT_NE(find(r, "driver.libcuda")->summary.find("crashed (SIGSEGV) in cuInit"), std::string::npos);
  EXPECT_EQ(r.host.nvml.outcome, VendorOutcome::Crashed);
  EXPECT_EQ(r.host.nvml.step, "nvmlDeviceGetName");
  EXPECT_EQ(r.host.nvml.driver_version, "550.54.14");  // facts before the crash are kept
  EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(FakeHost, HangingDriverIsKilledAfterTheTimeout) {
  healthy(1);
  program("gpu.count=1\ncuda.hang=cuInit\n");
  Host h = host();
  h.timeout_ms = 300;
  const ProbeReport r = probe(std::nullopt, h);
  EXPECT_EQ(r.host.cuda.outcome, VendorOutcome::TimedOut);
  EXPECT_EQ(r.host.cuda.step, "cuInit");
  EXPECT_NE(find(r, "driver.libcuda")->summary.find("did not answer in cuInit"), std::string::npos);
  EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(FakeHost, HelperProcessOfTheLibraryDoesNotHoldTheQueryOpen) {
  healthy(1);
  program("gpu.count=1\ncuda.helper=1\n");
  Host h = host();
  h.timeout_ms = 5000;
  const ProbeReport r = probe(std::nullopt, h);
  EXPECT_EQ(r.host.cuda.outcome, VendorOutcome::Ok) << dump(r);
  EXPECT_EQ(r.host.cuda.devices.size(), 1u);
}

TEST_F(FakeHost, HalfInstalledLibraryNamesTheMissingSymbol) {
  healthy(1);
  const ProbeReport r = probe(std::nullopt, host(FAKE_LIBCUDA_PARTIAL));
  EXPECT_EQ(r.host.cuda.outcome, VendorOutcome::SymbolMissing);
  EXPECT_EQ(r.host.cuda.error, "cuDriverGetVersion");
  EXPECT_EQ(find(r, "driver.libcuda")->verdict, Verdict::Fail);
  EXPECT_NE(find(r, "driver.libcuda")->summary.find("lacks cuDriverGetVersion"), std::string::npos);
  EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(FakeHost, KernelModuleAndLibraryVersionsDiffer) {
  healthy(1);
  program("gpu.count=1\nnvml.driver=555.42.02\n");
  const ProbeReport r = probe();
  const ProbeCheck* c = find(r, "driver.version-match");
  ASSERT_NE(c, nullptr) << dump(r);
  EXPECT_EQ(c->verdict, Verdict::Fail);
  EXPECT_EQ(c->summary, "kernel module 550.54.14 but user-space driver 555.42.02");
}

TEST_F(FakeHost, NvmlInitFailureIsReportedWithItsErrorString) {
  healthy(1);
  program("gpu.count=1\nnvml.init=18\n");
  const ProbeReport r = probe();
  EXPECT_EQ(find(r, "driver.nvml")->verdict, Verdict::Fail);
  EXPECT_NE(find(r, "driver.nvml")->summary.find("Driver/library version mismatch"), std::string::npos);
}

TEST_F(FakeHost, DeviceNodesMissingAndUnreadable) {
  healthy(1);
  fs::remove(dir_ / "root/dev/nvidia-uvm");
  ProbeReport r = probe();
  EXPECT_EQ(find(r, "driver.device-nodes")->verdict, Verdict::Warn);
  EXPECT_NE(find(r, "driver.device-nodes")->summary.find("/dev/nvidia-uvm missing"), std::string::npos);

  // root bypasses file permissions, so an unreadable device node cannot be made; the part above still ran.
  if (geteuid() == 0) GTEST_SKIP() << "running as root: access(2) grants everything, cannot test an unreadable node";
  chmod((dir_ / "root/dev/nvidia0").c_str(), 0);
  r = probe();
  EXPECT_EQ(find(r, "driver.device-nodes")->verdict, Verdict::Fail);
  EXPECT_EQ(find(r, "driver.device-nodes")->summary, "not readable and writable by this user: /dev/nvidia0");
}

// --- devices and visibility ----------------------------------------------------------------

TEST_F(FakeHost, CudaVisibleDevicesHidesTheOthers) {
  healthy(2);
  setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  const ProbeReport r = probe();
  ASSERT_EQ(r.host.cuda.devices.size(), 1u);
  EXPECT_EQ(find(r, "devices.count")->summary, "1 visible to CUDA, 2 installed (NVML)");
  EXPECT_NE(find(r, "device.0")->summary.find("hidden by CUDA_VISIBLE_DEVICES"), std::string::npos);
  EXPECT_EQ(find(r, "device.0")->verdict, Verdict::Info);
  EXPECT_NE(find(r, "device.1")->summary.find(", visible"), std::string::npos);
  const auto j = r.to_json();
  EXPECT_EQ(j.at("devices")[0].at("visible"), false);
  EXPECT_EQ(j.at("devices")[1].at("visible"), true);
  EXPECT_EQ(j.at("visibility").at("CUDA_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(r.exit_code(), 0);
}

TEST_F(FakeHost, EmptyCudaVisibleDevicesHidesAllAndSaysSo) {
  healthy(2);
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  const ProbeReport r = probe(analyze_packages(cuda_pytorch(), {}, {}));
  const ProbeCheck* c = find(r, "devices.visibility");
  ASSERT_NE(c, nullptr) << dump(r);
  EXPECT_EQ(c->verdict, Verdict::Fail);
  EXPECT_EQ(c->summary, "driver present, no device visible to this process: CUDA_VISIBLE_DEVICES=\"\" hides the 2 GPU(s) the driver has");
  EXPECT_EQ(c->source, "cuInit = CUDA_ERROR_NO_DEVICE with CUDA_VISIBLE_DEVICES set; cuInit without it sees 2");
  EXPECT_NE(c->hint.find("unset CUDA_VISIBLE_DEVICES"), std::string::npos);
  EXPECT_EQ(find(r, "devices.cuda-visible-devices")->summary, "CUDA_VISIBLE_DEVICES=\"\": an empty value hides every GPU from CUDA");
  EXPECT_EQ(find(r, "driver.cuinit")->verdict, Verdict::Info);
  EXPECT_NE(find(r, "device.0")->summary.find("hidden (CUDA_VISIBLE_DEVICES is empty)"), std::string::npos);
  // Visibility is not presence: __cuda follows the driver.
  EXPECT_EQ(r.host.cuda_version, "12.4");
  EXPECT_EQ(find(r, "driver.cuda-version")->verdict, Verdict::Pass);
  EXPECT_EQ(r.exit_code(), 3) << dump(r);
}

TEST_F(FakeHost, MigModeIsReported) {
  healthy(2);
  program(
      "gpu.count=2\ngpu.0.name=NVIDIA A100-SXM4-40GB\ngpu.0.cc=8.0\ngpu.0.mig=1\ngpu.0.memory=42949672960\n"
      "gpu.1.name=NVIDIA A100-SXM4-40GB\ngpu.1.cc=8.0\ngpu.1.mig=0\ngpu.1.memory=42949672960\n"
      "cuda.driver_version=12040\nnvml.driver=550.54.14\n");
  const ProbeReport r = probe();
  ASSERT_TRUE(r.host.nvml.devices[0].mig_current.has_value());
  EXPECT_TRUE(*r.host.nvml.devices[0].mig_current);
  EXPECT_NE(find(r, "device.0")->summary.find("MIG enabled"), std::string::npos);
  EXPECT_NE(find(r, "device.1")->summary.find("MIG disabled"), std::string::npos);
  const auto j = r.to_json();
  EXPECT_EQ(j.at("devices")[0].at("mig").at("current"), true);
  EXPECT_EQ(j.at("devices")[1].at("mig").at("current"), false);
}

TEST(Visibility, CudaVisibleDevicesRules) {
  const std::string uuid = "GPU-8c7b4a2e-0000-1111-2222-333333333333";
  EXPECT_TRUE(visible_under(std::nullopt, 3, uuid, 4));
  EXPECT_FALSE(visible_under(std::string(""), 0, uuid, 4));
  EXPECT_TRUE(visible_under(std::string("2,0"), 0, uuid, 4));
  EXPECT_FALSE(visible_under(std::string("2,0"), 1, uuid, 4));
  EXPECT_TRUE(visible_under(std::string("GPU-8c7b"), 1, uuid, 4));
  EXPECT_FALSE(visible_under(std::string("GPU-ffff"), 1, uuid, 4));
  // The driver stops at the first invalid entry: "7" (no such device) hides the "0" after it.
  EXPECT_FALSE(visible_under(std::string("7,0"), 0, uuid, 4));
  EXPECT_TRUE(visible_under(std::string("MIG-GPU-8c7b4a2e-0000-1111-2222-333333333333/1/0"), 2, uuid, 4));
}

// --- container hints -----------------------------------------------------------------------

TEST_F(FakeHost, ContainerWithoutTheNvidiaRuntime) {
  write(".dockerenv", "");
  write("proc/1/cgroup", "0::/system.slice/docker-0123abcd.scope\n");
  setenv("NVIDIA_VISIBLE_DEVICES", "all", 1);
  setenv("NVIDIA_DRIVER_CAPABILITIES", "utility", 1);
  const ProbeReport r = probe(std::nullopt, host("/nonexistent/libcuda.so.1", "/nonexistent/libnvidia-ml.so.1"));
  ASSERT_EQ(r.host.container_hints.size(), 2u);
  EXPECT_EQ(r.host.container_hints[0], "/.dockerenv exists (Docker)");
  EXPECT_EQ(r.host.container_hints[1], "the cgroup of PID 1 mentions docker");
  EXPECT_EQ(find(r, "container.runtime")->verdict, Verdict::Warn);
  EXPECT_EQ(find(r, "container.driver-capabilities")->verdict, Verdict::Warn);
  EXPECT_NE(find(r, "container.runtime")->hint.find("--gpus"), std::string::npos);
  EXPECT_EQ(find(r, "driver.device-nodes")->verdict, Verdict::Info);  // nothing needs a GPU here
  EXPECT_EQ(r.to_json().at("container").at("environment").at("NVIDIA_VISIBLE_DEVICES"), "all");
}

// --- packages ------------------------------------------------------------------------------

TEST(Packages, CudaVersionAndRequirementsFromTheRecords) {
  const auto f = analyze_packages(cuda_pytorch(), {"pytorch 2.3.*"}, {});
  EXPECT_EQ(f.cuda_version, "12.4");
  EXPECT_EQ(f.cuda_version_source, "cuda-version 12.4");
  EXPECT_TRUE(f.needs_gpu());
  EXPECT_TRUE(f.cpu_only_builds.empty());
  ASSERT_EQ(f.cuda_specs.size(), 2u);
  EXPECT_EQ(f.cuda_specs[0], "cuda-version 12.4: __cuda >=12 (constrains)");
  EXPECT_EQ(f.cuda_specs[1], "pytorch 2.3.1: __cuda");
}

TEST(Packages, LegacyCudatoolkitIsAWitness) {
  const auto f = analyze_packages({record("cudatoolkit", "11.8.0", "h6a678d5_0"), record("numpy", "1.26.4", "py311h_0")}, {}, {});
  EXPECT_EQ(f.cuda_version, "11.8.0");
  EXPECT_TRUE(f.needs_gpu());
}

TEST(Packages, CpuEnvironmentNeedsNoGpu) {
  const auto f = analyze_packages({record("pytorch", "2.3.1", "cpu_generic_py312h_0"), record("python", "3.12.4", "h_0")},
                                  {"pytorch 2.3.*"}, {});
  EXPECT_FALSE(f.needs_gpu());
  ASSERT_EQ(f.cpu_only_builds.size(), 1u);
}

TEST(MinimumDriver, NvidiaReleaseNotesTable) {
  EXPECT_EQ(minimum_driver_for_cuda(13, 0), "580.65.06");
  EXPECT_EQ(minimum_driver_for_cuda(12, 4), "525.60.13");
  EXPECT_EQ(minimum_driver_for_cuda(11, 8), "450.80.02");
  EXPECT_EQ(minimum_driver_for_cuda(10, 2), "440.33");
  EXPECT_EQ(minimum_driver_for_cuda(10, 1), "418.39");
  EXPECT_EQ(minimum_driver_for_cuda(10, 0), "410.48");
  EXPECT_EQ(minimum_driver_for_cuda(9, 2), "396.26");
  EXPECT_EQ(minimum_driver_for_cuda(99, 0), "");
  EXPECT_EQ(minimum_compute_capability_for_cuda(12), 50);
  EXPECT_EQ(minimum_compute_capability_for_cuda(13), 75);
}

TEST_F(FakeHost, CpuOnlyPytorchInACudaLockfileFails) {
  healthy(1);
  auto records = cuda_pytorch();
  records[2] = record("pytorch", "2.3.1", "cpu_generic_py312h_0", {"python >=3.12,<3.13.0a0"});
  VirtualPackage cuda{"__cuda", "12.4", "0"};
  const ProbeReport r = probe(analyze_packages(records, {"pytorch 2.3.*"}, {cuda}));
  const ProbeCheck* c = find(r, "packages.cpu-build");
  ASSERT_NE(c, nullptr) << dump(r);
  EXPECT_EQ(c->verdict, Verdict::Fail);
  EXPECT_NE(c->summary.find("pytorch 2.3.1 build cpu_generic_py312h_0 is a CPU-only build"), std::string::npos) << c->summary;
  EXPECT_EQ(r.exit_code(), 1);
  // A GPU-less host does not turn this into "no GPU": the lockfile itself is wrong.
  EXPECT_EQ(probe(analyze_packages(records, {}, {cuda}), host("/nonexistent/a", "/nonexistent/b")).exit_code(), 1);
}

TEST_F(FakeHost, CpuonlyPackageInACudaManifestFails) {
  healthy(1);
  const std::vector<RepoDataRecord> records = {record("cpuonly", "2.0", "0"), record("pytorch-mutex", "1.0", "cpu"),
                                               record("pytorch", "2.3.1", "py3.12_cpu_0")};
  const ProbeReport r = probe(analyze_packages(records, {"pytorch-cuda 12.1.*"}, {}));
  const ProbeCheck* c = find(r, "packages.cpu-build");
  ASSERT_NE(c, nullptr) << dump(r);
  EXPECT_EQ(c->verdict, Verdict::Fail);
  EXPECT_NE(c->summary.find("cpuonly 2.0 is present"), std::string::npos);
  EXPECT_NE(c->summary.find("pytorch-mutex 1.0 build cpu"), std::string::npos);
  EXPECT_NE(c->summary.find("pytorch 2.3.1 build py3.12_cpu_0"), std::string::npos);
  EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(FakeHost, CpuBuildsInACpuEnvironmentAreFine) {
  healthy(1);
  const ProbeReport r = probe(analyze_packages({record("pytorch", "2.3.1", "cpu_generic_py312h_0")}, {"pytorch"}, {}));
  EXPECT_EQ(find(r, "packages.cpu-build")->verdict, Verdict::Info);
  EXPECT_EQ(r.exit_code(), 0) << dump(r);
}

TEST_F(FakeHost, OldDriverForCuda12Fails) {
  healthy(1);
  write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  520.61.05  Thu Sep 29 05:30:25 UTC 2022\n");
  program("gpu.count=1\ngpu.0.cc=8.6\ncuda.driver_version=11080\nnvml.driver=520.61.05\n");
  const ProbeReport r = probe(analyze_packages(cuda_pytorch(), {}, {}));
  const ProbeCheck* c = find(r, "packages.cuda-driver");
  ASSERT_NE(c, nullptr) << dump(r);
  EXPECT_EQ(c->verdict, Verdict::Fail);
  EXPECT_EQ(c->summary,
            "built for CUDA 12.4 but the driver supports only CUDA 11.8 (NVIDIA: CUDA 12.x needs driver >= 525.60.13)");
  EXPECT_NE(c->hint.find(">= 525.60.13"), std::string::npos);
  EXPECT_EQ(find(r, "packages.driver-minimum")->verdict, Verdict::Fail);
  EXPECT_EQ(find(r, "packages.cuda-specs")->verdict, Verdict::Fail);
  EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(FakeHost, SameMajorOlderMinorRunsUnderMinorVersionCompatibility) {
  healthy(1);
  program("gpu.count=1\ngpu.0.cc=8.0\ncuda.driver_version=12020\nnvml.driver=550.54.14\n");
  const ProbeReport r = probe(analyze_packages(cuda_pytorch("12.4"), {}, {}));
  EXPECT_EQ(find(r, "packages.cuda-driver")->verdict, Verdict::Warn) << dump(r);
  EXPECT_NE(find(r, "packages.cuda-driver")->summary.find("minor version compatibility"), std::string::npos);
  EXPECT_EQ(r.exit_code(), 0);
}

TEST_F(FakeHost, UnmetCudaSpecOfARecordFails) {
  healthy(1);
  const ProbeReport r = probe(analyze_packages(cuda_pytorch("12.4", "__cuda >=12.6"), {}, {}));
  const ProbeCheck* c = find(r, "packages.cuda-specs");
  ASSERT_NE(c, nullptr) << dump(r);
  EXPECT_EQ(c->verdict, Verdict::Fail);
  EXPECT_EQ(c->summary, "the driver's CUDA 12.4 does not meet: pytorch 2.3.1: __cuda >=12.6");
  EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(FakeHost, GpuTooOldForTheCudaMajor) {
  healthy(1);
  program("gpu.count=1\ngpu.0.name=Tesla K80\ngpu.0.cc=3.7\ncuda.driver_version=12040\nnvml.driver=550.54.14\n");
  const ProbeReport r = probe(analyze_packages(cuda_pytorch("12.4"), {}, {}));
  const ProbeCheck* c = find(r, "packages.compute-capability");
  ASSERT_NE(c, nullptr) << dump(r);
  EXPECT_EQ(c->verdict, Verdict::Fail);
  EXPECT_EQ(c->summary, "Tesla K80 (sm_37) below sm_50, the oldest GPU CUDA 12 builds for");
  EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(FakeHost, HealthyCudaEnvironmentPasses) {
  healthy(2);
  const ProbeReport r = probe(analyze_packages(cuda_pytorch(), {"pytorch 2.3.*"}, {}));
  EXPECT_EQ(r.exit_code(), 0) << dump(r);
  for (const char* id : {"packages.cuda-driver", "packages.cuda-specs", "packages.compute-capability"}) {
    ASSERT_NE(find(r, id), nullptr) << id;
    EXPECT_EQ(find(r, id)->verdict, Verdict::Pass) << id << ": " << find(r, id)->summary;
  }
  const auto facts = recorded_host_facts(r.host);
  EXPECT_EQ(facts.at("driver_version"), "550.54.14");
  EXPECT_EQ(facts.at("cuda_driver_version"), "12.4");
  EXPECT_EQ(facts.at("gpu_count"), "2");
  EXPECT_EQ(facts.at("gpu.0.name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(facts.at("gpu.0.compute_capability"), "9.0");
  EXPECT_EQ(facts.at("platform"), Platform::host().to_string());
  EXPECT_EQ(facts.at("cpu"), detect_microarchitecture());
}

TEST_F(FakeHost, DetectCudaDriverVersionUsesTheSameChild) {
  healthy(1);
  EXPECT_EQ(detect_cuda_driver_version(FAKE_LIBCUDA, 5000), "12.4");
  // No device visible is not no driver (conda drops CUDA_VISIBLE_DEVICES to the same end).
  program("gpu.count=1\ncuda.init=100\n");
  EXPECT_EQ(detect_cuda_driver_version(FAKE_LIBCUDA, 5000), "12.4");
  program("gpu.count=1\ncuda.init=999\n");
  EXPECT_EQ(detect_cuda_driver_version(FAKE_LIBCUDA, 5000), std::nullopt);
  program("gpu.count=1\ncuda.crash=cuInit\n");
  EXPECT_EQ(detect_cuda_driver_version(FAKE_LIBCUDA, 5000), std::nullopt);
}

// Real nvidia-smi answers (corpus/gpu) programmed into the fake: the probe reports what
// nvidia-smi reported on that machine.
TEST_F(FakeHost, RealNvidiaSmiA100MigMachine) {
  const fs::path xml = fs::path(ENVLOCK_SHARED_DIR) /
                       "corpus/gpu/netdata__netdata/src__go__plugin__go.d__collector__nvidia_smi__testdata__a100-sxm4-mig.xml";
  if (!fs::exists(xml)) GTEST_SKIP() << "corpus file absent: " << xml;
  std::stringstream ss;
  ss << std::ifstream(xml).rdbuf();
  const std::string text = ss.str();
  auto tag = [&](const std::string& name) {
    std::smatch m;
    std::regex re("<" + name + ">([^<]*)</" + name + ">");
    return std::regex_search(text, m, re) ? m[1].str() : std::string();
  };
  const std::string driver = tag("driver_version"), cuda = tag("cuda_version"), product = tag("product_name");
  const std::string mig = tag("current_mig");
  ASSERT_FALSE(driver.empty());
  int major = 0, minor = 0;
  ASSERT_EQ(std::sscanf(cuda.c_str(), "%d.%d", &major, &minor), 2);
  healthy(1);
  write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + driver + "  Mon Jan 1 00:00:00 UTC 2022\n");
  program("gpu.count=1\ngpu.0.name=" + product + "\ngpu.0.cc=8.0\ngpu.0.mig=" + (mig == "Enabled" ? "1" : "0") +
          "\ncuda.driver_version=" + std::to_string(major * 1000 + minor * 10) + "\nnvml.driver=" + driver + "\n");
  const ProbeReport r = probe(analyze_packages(cuda_pytorch("12.4"), {}, {}));
  EXPECT_EQ(r.host.nvml.driver_version, "510.47.03");
  EXPECT_EQ(find(r, "driver.cuda-version")->summary, "the driver supports CUDA 11.6: __cuda=11.6");
  EXPECT_NE(find(r, "device.0")->summary.find("NVIDIA A100-SXM4-40GB"), std::string::npos);
  EXPECT_NE(find(r, "device.0")->summary.find("MIG enabled"), std::string::npos);
  // A 510 driver cannot run a CUDA 12 environment.
  EXPECT_EQ(find(r, "packages.cuda-driver")->verdict, Verdict::Fail);
  EXPECT_EQ(r.exit_code(), 1);
}

}  // namespace
}  // namespace envlock
