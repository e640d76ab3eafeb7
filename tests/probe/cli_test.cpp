// `envlock probe` and `envlock reference record` end to end through the CLI, with the fake NVIDIA
// libraries selected by ENVLOCK_LIBCUDA / ENVLOCK_LIBNVML and a fake root.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "envlock/lockfile.hpp"
#include "support/run_command.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using testing::envlock_cmd;
using testing::run_command;

class ProbeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("envlock-probe-cli-" + std::to_string(getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "root/proc/driver/nvidia");
    std::ofstream(dir_ / "root/proc/driver/nvidia/version")
        << "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024\n";
    fs::create_directories(dir_ / "root/dev");
    for (const char* n : {"nvidiactl", "nvidia-uvm", "nvidia0"}) std::ofstream(dir_ / "root/dev" / n) << "";
    std::ofstream(dir_ / "gpu.conf") << "gpu.count=1\ngpu.0.name=NVIDIA H100 80GB HBM3\ngpu.0.cc=9.0\n"
                                        "gpu.0.memory=85520809984\ncuda.driver_version=12040\nnvml.driver=550.54.14\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::map<std::string, std::string> fake_env() const {
    return {{"ENVLOCK_LIBCUDA", FAKE_LIBCUDA},
            {"ENVLOCK_LIBNVML", FAKE_LIBNVML},
            {"ENVLOCK_FAKE_GPU_CONFIG", (dir_ / "gpu.conf").string()},
            {"CUDA_VISIBLE_DEVICES", "\x01unset"}};
  }
  std::map<std::string, std::string> no_driver_env() const {
    return {{"ENVLOCK_LIBCUDA", "/nonexistent/libcuda.so.1"}, {"ENVLOCK_LIBNVML", "/nonexistent/libnvidia-ml.so.1"}};
  }
  std::string probe(const std::string& args) const {
    return envlock_cmd() + " probe --root '" + (dir_ / "root").string() + "' " + args;
  }

  static LockedPackage pkg(const std::string& name, const std::string& version, const std::string& build,
                           std::vector<std::string> depends = {}) {
    LockedPackage p;
    p.name = name;
    p.version = *Version::parse(version);
    p.build = build;
    p.subdir = "linux-64";
    p.depends = std::move(depends);
    p.channel = "https://conda.anaconda.org/conda-forge";
    p.file_name = name + "-" + version + "-" + build + ".conda";
    p.url = p.channel + "/linux-64/" + p.file_name;
    p.sha256 = std::string(64, 'a');
    p.layer = "default";
    return p;
  }

  fs::path lockfile(const std::vector<LockedPackage>& packages, const std::string& requested) {
    Lockfile lf;
    lf.manifest_hash = "sha256:" + std::string(64, '0');
    LockedEnvironment env;
    env.name = "default";
    env.requested = {requested};
    LockedPlatform lp;
    lp.platform = "linux-64";
    lp.channels = {"https://conda.anaconda.org/conda-forge"};
    lp.packages = packages;
    env.platforms["linux-64"] = lp;
    ReferenceRun r;
    r.command = "echo '{\"loss\": 0.25}'";
    r.metric = "json:loss";
    r.tolerance = 0.01;
    env.reference = r;
    lf.environments["default"] = env;
    const fs::path path = dir_ / "envlock.lock";
    const auto st = lf.write(path);
    EXPECT_TRUE(st.ok()) << st.error().to_string();
    return path;
  }

  fs::path cuda_lockfile(const std::string& pytorch_build) {
    return lockfile({pkg("cuda-version", "12.4", "h3060b56_3"), pkg("cuda-cudart", "12.4.127", "h99ab3db_0"),
                     pkg("pytorch", "2.3.1", pytorch_build, {"__cuda"})},
                    "pytorch 2.3.*");
  }

  fs::path dir_;
};

TEST_F(ProbeCli, JsonReportOnAHealthyFakeGpu) {
  auto r = run_command(probe("--json"), fake_env());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("exit_code"), 0);
  EXPECT_EQ(j.at("driver").at("kernel_module_version"), "550.54.14");
  EXPECT_EQ(j.at("driver").at("cuda_version"), "12.4");
  EXPECT_EQ(j.at("driver").at("nvml").at("driver_version"), "550.54.14");
  ASSERT_EQ(j.at("devices").size(), 1u);
  EXPECT_EQ(j.at("devices")[0].at("name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(j.at("devices")[0].at("compute_capability"), "9.0");
}

TEST_F(ProbeCli, TextReportSaysPass) {
  auto r = run_command(probe(""), fake_env());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("pass  driver.cuinit: cuInit(0) = CUDA_SUCCESS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("probe: pass"), std::string::npos);
}

TEST_F(ProbeCli, CudaLockfileOnAHealthyGpuPasses) {
  const fs::path lock = cuda_lockfile("cuda120_py312h26b3cf7_300");
  auto r = run_command(probe("--json -l '" + lock.string() + "'"), fake_env());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("packages").at("cuda_version"), "12.4");
  EXPECT_EQ(j.at("packages").at("needs_gpu"), true);
}

TEST_F(ProbeCli, CudaLockfileWithoutAGpuExits3) {
  const fs::path lock = cuda_lockfile("cuda120_py312h26b3cf7_300");
  fs::remove_all(dir_ / "root/proc");
  fs::remove_all(dir_ / "root/dev");
  auto r = run_command(probe("-l '" + lock.string() + "'"), no_driver_env());
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("no usable GPU"), std::string::npos) << r.out;
}

TEST_F(ProbeCli, CpuOnlyBuildInACudaLockfileExits1) {
  const fs::path lock = lockfile({pkg("cuda-version", "12.4", "h3060b56_3"), pkg("pytorch", "2.3.1", "cpu_generic_py312h_0")},
                                 "pytorch-gpu");
  auto r = run_command(probe("--json -l '" + lock.string() + "'"), fake_env());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  bool found = false;
  for (const auto& c : j.at("checks")) {
    if (c.at("id") == "packages.cpu-build") {
      found = true;
      EXPECT_EQ(c.at("verdict"), "fail");
    }
  }
  EXPECT_TRUE(found) << r.out;
}

TEST_F(ProbeCli, UsageErrorsExit2) {
  EXPECT_EQ(run_command(probe("-e train"), fake_env()).exit_code, 2);
  auto missing = run_command(probe("-l '" + (dir_ / "missing.lock").string() + "'"), fake_env());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("missing.lock"), std::string::npos) << missing.err;
}

TEST_F(ProbeCli, ReferenceRecordStoresTheMetric) {
  const fs::path lock = cuda_lockfile("cuda120_py312h26b3cf7_300");
  fs::create_directories(dir_ / "env/conda-meta");
  auto r = run_command(envlock_cmd() + " reference record --json -l '" + lock.string() + "' -p '" + (dir_ / "env").string() + "'",
                       fake_env());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("value"), 0.25);
  auto lf = Lockfile::read(lock);
  ASSERT_TRUE(lf.ok());
  const auto& ref = *lf->environments.at("default").reference;
  EXPECT_DOUBLE_EQ(ref.recorded_value.value_or(-1), 0.25);
  EXPECT_EQ(ref.recorded_host.at("gpu.0.name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(ref.recorded_host.at("cuda_driver_version"), "12.4");
}

TEST_F(ProbeCli, ReferenceRecordOfAHangingCommandTimesOut) {
  Lockfile lf;
  lf.manifest_hash = "sha256:" + std::string(64, '0');
  LockedEnvironment env;
  env.name = "default";
  ReferenceRun ref;
  ref.command = "sleep 60";
  ref.metric = "json:loss";
  env.reference = ref;
  lf.environments["default"] = env;
  ASSERT_TRUE(lf.write(dir_ / "hang.lock").ok());
  fs::create_directories(dir_ / "env/conda-meta");
  auto r = run_command(envlock_cmd() + " reference record --timeout 1 -l '" + (dir_ / "hang.lock").string() + "' -p '" +
                       (dir_ / "env").string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("did not finish within 1 s"), std::string::npos) << r.err;
}

// A lockfile whose reference block is written by hand (tests/probe: as an attacker edits one).
fs::path hand_lockfile(const fs::path& dir, const std::string& reference_block) {
  const fs::path path = dir / "hand.lock";
  Lockfile lf;
  lf.manifest_hash = "sha256:" + std::string(64, '0');
  LockedEnvironment env;
  env.name = "train";
  LockedPlatform lp;
  lp.platform = "linux-64";
  env.platforms["linux-64"] = lp;
  ReferenceRun r;
  r.command = "PLACEHOLDER";
  r.metric = "json:loss";
  env.reference = r;
  lf.environments["train"] = env;
  EXPECT_TRUE(lf.write(path).ok());
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const std::size_t a = text.find("    reference:\n"), b = text.find("    platforms:\n");
  EXPECT_TRUE(a != std::string::npos && b != std::string::npos) << text;
  text = text.substr(0, a) + "    reference:\n" + reference_block + text.substr(b);
  std::ofstream(path) << text;
  return path;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TEST_F(ProbeCli, ANonFiniteOrNegativeToleranceIsRefusedBeforeAnythingRuns) {
  fs::create_directories(dir_ / "env/conda-meta");
  for (const std::string tolerance : {".nan", ".inf", "-0.5"}) {
    SCOPED_TRACE(tolerance);
    const fs::path lock = hand_lockfile(dir_, "      command: touch ran\n      metric: json:loss\n      tolerance: " + tolerance + "\n");
    const std::string before = slurp(lock);
    auto r = run_command("cd '" + dir_.string() + "' && " + envlock_cmd() + " reference record -l hand.lock -p env", fake_env());
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("hand.lock:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("reference tolerance must be a finite number >= 0, found " + tolerance), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "ran")) << "the command ran";
    EXPECT_EQ(slurp(lock), before);
  }
}

TEST_F(ProbeCli, ReferenceRecordNamesTheEnvironmentAndWritesValidUtf8HostFacts) {
  std::ofstream(dir_ / "gpu.conf") << "gpu.count=1\ngpu.0.name=NVIDIA \x9b\xff\x1b[2J H100\ngpu.0.cc=9.0\ngpu.0.memory=85520809984\n"
                                      "cuda.driver_version=12040\nnvml.driver=550.54.14\n";
  fs::create_directories(dir_ / "env/conda-meta");
  const fs::path lock = hand_lockfile(dir_, "      command: \"echo '{\\\"loss\\\": 0.25}'\"\n      metric: json:loss\n      tolerance: 0.01\n");
  auto r = run_command("cd '" + dir_.string() + "' && " + envlock_cmd() + " reference record -l hand.lock -p env", fake_env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "recorded json:loss = 0.25 for environment train in hand.lock\n");
  EXPECT_EQ(r.err, "");
  const std::string text = slurp(lock);
  EXPECT_NE(text.find("gpu.0.name: \"NVIDIA \\\\x9b\\\\xff\\\\x1b[2J H100\""), std::string::npos) << text;
  EXPECT_EQ(text.find('\x9b'), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  auto lf = Lockfile::read(lock);
  ASSERT_TRUE(lf.ok()) << lf.error().to_string();
  EXPECT_EQ(lf->environments.at("train").reference->recorded_host.at("gpu.0.name"), "NVIDIA \\x9b\\xff\\x1b[2J H100");
}

TEST_F(ProbeCli, ReferenceRecordEscapesTheCommandAndItsOutputOnTheTerminal) {
  fs::create_directories(dir_ / "env/conda-meta");
  const fs::path lock = hand_lockfile(dir_, "      command: \"printf 'a\\\\033[2Jb\\\\n'; exit 2 # \\e]0;t\\a\"\n      metric: \"json:l\\e[Hoss\"\n"
                                            "      tolerance: 0.01\n");
  auto r = run_command("cd '" + dir_.string() + "' && " + envlock_cmd() + " reference record -l hand.lock -p env", fake_env());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "error: reference run: the command exited with status 2\n"
            "  command: printf 'a\\033[2Jb\\n'; exit 2 # \\x1b]0;t\\x07\n"
            "  output (last lines):\n"
            "a\\x1b[2Jb\n"
            "hint: see the output below\n");
}

TEST_F(ProbeCli, ReferenceRecordWithoutAReferenceExits1BeforeBuildingAnything) {
  Lockfile lf;
  lf.manifest_hash = "sha256:" + std::string(64, '0');
  lf.environments["train"].name = "train";
  lf.environments["train"].platforms["linux-64"].platform = "linux-64";
  ASSERT_TRUE(lf.write(dir_ / "plain.lock").ok());
  fs::create_directories(dir_ / "tmp");
  auto env = fake_env();
  env["TMPDIR"] = (dir_ / "tmp").string();
  auto r = run_command(envlock_cmd() + " reference record -l '" + (dir_ / "plain.lock").string() + "'", env);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + (dir_ / "plain.lock").string() +
                       ": environment 'train' has no reference command\n"
                       "hint: add `reference: {command: ..., metric: json:<key>, tolerance: ...}` to the manifest and run envlock lock\n");
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp"));
}

// The throwaway environment of `reference record` is installed in envlock's own process
// (install_locked_environment(), issue 19 step 2), its summary on stderr so that --json keeps
// stdout. Run through the dynamic loader, /proc/self/exe is the loader: the installer that ran
// /proc/self/exe as `envlock install` ran `ld.so install ...`, which failed.
TEST_F(ProbeCli, ReferenceRecordInstallsItsThrowawayEnvironmentInItsOwnProcess) {
  const fs::path loader = "/lib64/ld-linux-x86-64.so.2";
  if (!fs::exists(loader)) GTEST_SKIP() << "no " << loader;
  fs::create_directories(dir_ / "tmp");
  const fs::path lock = hand_lockfile(dir_, "      command: echo '{\"loss\":0.5}'\n      metric: json:loss\n");
  auto env = fake_env();
  env["TMPDIR"] = (dir_ / "tmp").string();
  env["ENVLOCK_CACHE_DIR"] = (dir_ / "cache").string();
  auto r = run_command("'" + loader.string() + "' " + envlock_cmd() + " reference record --json -l '" + lock.string() + "'", env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("value"), 0.5);
  // The throwaway folder's name is mkdtemp's: its six random characters are filtered.
  const std::string tmp = (dir_ / "tmp" / "envlock-reference-").string();
  std::string err = r.err;
  if (const auto at = err.find(tmp); at != std::string::npos) err.replace(at + tmp.size(), 6, "XXXXXX");
  EXPECT_EQ(err, "packages: 0 (0 downloaded, 0 from the package cache)\n"
                 "environment 'train' (linux-64) is ready in " + tmp + "XXXXXX/env\n"
                 "  0 installed, 0 unchanged, 0 removed; files: 0 linked, 0 copied, 0 relocated\n");
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp")) << "the throwaway environment was not removed";
}

// SIGTERM (or Ctrl-C's SIGINT) while the reference command runs in a throwaway environment: the
// command's process group is killed, the environment removed, exit 128 + the signal.
TEST_F(ProbeCli, InterruptedReferenceRecordStopsTheCommandAndRemovesTheThrowawayEnvironment) {
  fs::create_directories(dir_ / "tmp");
  const fs::path lock = hand_lockfile(dir_, "      command: echo $$ > '" + (dir_ / "pid").string() + "'; sleep 60\n      metric: json:loss\n");
  auto env = fake_env();
  env["TMPDIR"] = (dir_ / "tmp").string();
  env["ENVLOCK_CACHE_DIR"] = (dir_ / "cache").string();
  // (SIGINT is ignored in a background job of a non-interactive shell, and envlock keeps it so, as
  // nohup expects; the same handler serves both.)
  for (const char* sig : {"TERM"}) {
    SCOPED_TRACE(sig);
    fs::remove(dir_ / "pid");
    const std::string script = "( " + envlock_cmd() + " reference record -l '" + lock.string() + "' & p=$!; " +
                               "for i in $(seq 300); do [ -s '" + (dir_ / "pid").string() + "' ] && break; sleep 0.1; done; " +
                               "kill -" + sig + " $p; wait $p; echo rc=$? )";
    auto r = run_command(script, env);
    EXPECT_EQ(r.out, std::string("rc=") + (std::string(sig) == "TERM" ? "143" : "130") + "\n") << r.err;
    EXPECT_NE(r.err.find("interrupted: the reference command was stopped, the throwaway environment removed; nothing was recorded"),
              std::string::npos)
        << r.err;
    const std::string pid = slurp(dir_ / "pid");
    ASSERT_FALSE(pid.empty());
    EXPECT_NE(kill(std::stoi(pid), 0), 0) << "the reference command still runs";
    EXPECT_TRUE(fs::is_empty(dir_ / "tmp")) << "the throwaway environment was left in TMPDIR";
  }
}

TEST_F(ProbeCli, InterruptedVerifyCleanStopsTheCommandAndRemovesTheThrowawayEnvironmentEvenWithKeep) {
  fs::create_directories(dir_ / "tmp");
  const fs::path lock = hand_lockfile(dir_, "      command: echo $$ > '" + (dir_ / "pid").string() +
                                                "'; sleep 60\n      metric: json:loss\n      tolerance: 0.01\n      recorded_value: 0.5\n");
  auto env = fake_env();
  env["TMPDIR"] = (dir_ / "tmp").string();
  env["ENVLOCK_CACHE_DIR"] = (dir_ / "cache").string();
  const std::string script = "( " + envlock_cmd() + " verify --clean --keep -l '" + lock.string() + "' & p=$!; " +
                             "for i in $(seq 300); do [ -s '" + (dir_ / "pid").string() + "' ] && break; sleep 0.1; done; " +
                             "kill -TERM $p; wait $p; echo rc=$? )";
  auto r = run_command(script, env);
  EXPECT_EQ(r.out, "rc=143\n") << r.err;
  EXPECT_NE(r.err.find("error: SIGTERM: interrupted: verification stopped; the throwaway environment was removed\n"), std::string::npos)
      << r.err;
  const std::string pid = slurp(dir_ / "pid");
  ASSERT_FALSE(pid.empty());
  EXPECT_NE(kill(std::stoi(pid), 0), 0) << "the reference command still runs";
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp")) << "the throwaway environment was left in TMPDIR";
}

TEST_F(ProbeCli, VerifyUsageErrorsExit2) {
  EXPECT_EQ(run_command(envlock_cmd() + " verify --reference").exit_code, 2);
  EXPECT_EQ(run_command(envlock_cmd() + " verify --keep --reference -p '" + dir_.string() + "'").exit_code, 2);
  EXPECT_EQ(run_command(envlock_cmd() + " verify --clean -p '" + dir_.string() + "'").exit_code, 2);
  EXPECT_EQ(run_command(envlock_cmd() + " verify").exit_code, 2);
}

// The README's example environment (manifests/example over the fixture channel) with a reference
// command that runs the environment's python and imports its package: record, then verify on a
// clean throwaway environment, pass; change the recorded value, fail.
TEST_F(ProbeCli, VerifyCleanOnTheReadmeExampleEnvironment) {
  const fs::path script = fs::path(ENVLOCK_SOURCE_DIR) / "scripts/make-fixture-channel";
  // A source tree without the fixture script (a partial checkout) has nothing to build the example from.
  if (!fs::exists(script)) GTEST_SKIP() << "no " << script;
  const fs::path channel = dir_ / "channel";
  auto made = run_command("'" + script.string() + "' '" + channel.string() + "'");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const fs::path project = dir_ / "project";
  fs::create_directories(project);
  std::ofstream(project / "envlock.yaml")
      << "name: example\nchannels: [" << channel.string() << "]\nplatforms: [linux-64]\n"
      << "dependencies:\n  - envlock-demo >=1.0\n  - envlock-greet\n"
      << "reference: {command: python smoke.py --steps 1, metric: \"json:loss\", tolerance: 0.01}\n";
  // Runs in the lockfile's folder with the environment's python: the import works only there.
  std::ofstream(project / "smoke.py") << "import json, sys, envlock_demo\n"
                                         "print('smoke run', sys.argv[1:])\n"
                                         "print(json.dumps({'loss': 0.25}))\n";
  fs::create_directories(dir_ / "tmp");
  auto env = no_driver_env();
  env["ENVLOCK_PKGS_DIR"] = (dir_ / "pkgs").string();
  env["TMPDIR"] = (dir_ / "tmp").string();
  env["NO_COLOR"] = "1";
  const std::string lock = "'" + (project / "envlock.lock").string() + "'";

  auto created = run_command(envlock_cmd() + " create -f '" + (project / "envlock.yaml").string() + "'", env);
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;

  auto recorded = run_command(envlock_cmd() + " reference record --timeout 120 -l " + lock, env);
  ASSERT_EQ(recorded.exit_code, 0) << recorded.out << recorded.err;
  EXPECT_NE(recorded.out.find("recorded json:loss = 0.25"), std::string::npos) << recorded.out;
  auto lf = Lockfile::read(project / "envlock.lock");
  ASSERT_TRUE(lf.ok()) << lf.error().to_string();
  EXPECT_DOUBLE_EQ(lf->environments.at("default").reference->recorded_value.value_or(-1), 0.25);

  auto clean = run_command(envlock_cmd() + " verify --clean --json --timeout 120 -l " + lock, env);
  ASSERT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  const auto j = nlohmann::json::parse(clean.out);
  EXPECT_EQ(j.at("reference").at("status"), "pass");
  EXPECT_EQ(j.at("reference").at("value"), 0.25);
  EXPECT_EQ(j.at("probe").at("packages").at("needs_gpu"), false);
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp")) << "the throwaway environment was not removed";

  auto existing = run_command(envlock_cmd() + " verify --reference -l " + lock + " -p '" +
                              (project / ".envlock/envs/default").string() + "'", env);
  EXPECT_EQ(existing.exit_code, 0) << existing.out << existing.err;
  EXPECT_NE(existing.out.find("verify: pass"), std::string::npos) << existing.out;

  lf->environments.at("default").reference->recorded_value = 0.5;
  ASSERT_TRUE(lf->write(project / "envlock.lock").ok());
  auto changed = run_command(envlock_cmd() + " verify --clean --timeout 120 -l " + lock, env);
  EXPECT_EQ(changed.exit_code, 1) << changed.out << changed.err;
  EXPECT_NE(changed.out.find("json:loss = 0.25, recorded 0.5 (difference 0.25 > tolerance 0.01)"), std::string::npos)
      << changed.out;
  EXPECT_NE(changed.out.find("hosts (recording host | this host)"), std::string::npos) << changed.out;
}

}  // namespace
}  // namespace envlock
