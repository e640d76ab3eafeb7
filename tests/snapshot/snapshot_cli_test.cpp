// `envlock snapshot capture|check|diff|lock` end to end, on fake host trees.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "envlock/snapshot.hpp"
#include "envlock/snapshot_deploy.hpp"
#include "snapshot/fake_host.hpp"
#include "support/run_command.hpp"

namespace envlock {
namespace {

using testing::FakeHost;
using testing::envlock_cmd;
using testing::run_command;
namespace fs = std::filesystem;

struct CliHost {
  FakeHost host;
  std::string smi;
  CliHost() {
    smi = host.complete_gpu_host(FakeHost::Gpu::Gt1030Driver470).string();
    host.corpus_prefix("/opt/conda/envs/train");
  }
  std::string capture_cmd(const fs::path& out) const {
    return envlock_cmd() + " snapshot capture --root '" + host.root().string() + "' -p /opt/conda/envs/train --nvidia-smi-xml '" +
           smi + "' -o '" + out.string() + "'";
  }
};

TEST(SnapshotCli, CaptureWritesAFileAndSummarises) {
  SKIP_WITHOUT_CORPUS();
  CliHost h;
  const fs::path out = h.host.root() / "snap.yaml";
  const auto r = run_command(h.capture_cmd(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("captured train (/opt/conda/envs/train): 16 conda packages, 1 pip distributions"), std::string::npos) << r.err;
  const auto s = Snapshot::read(out);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_TRUE(s->complete());
  ASSERT_TRUE(s->host.nvidia.has_value());
  EXPECT_EQ(s->host.nvidia->driver_version, "470.74");
  EXPECT_EQ(s->host.nvidia->cuda_version, "11.4");
  EXPECT_TRUE(s->host.nvidia->gpus[0].uuid.empty());
  const auto with_ids = run_command(h.capture_cmd(out) + " --include-ids --timestamp");
  ASSERT_EQ(with_ids.exit_code, 0) << with_ids.err;
  const auto s2 = Snapshot::read(out);
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ(s2->host.nvidia->gpus[0].uuid, "GPU-857c6374-f681-cf3a-f99f-9063a87b8ac0");
  EXPECT_EQ(s2->timestamp.size(), 20u) << s2->timestamp;
}

// -o and --bundle name files: a FIFO (as a device would be) is refused and left as it was; a
// link is written through and stays a link.
TEST(SnapshotCli, OutputThatIsNotAFileIsRefusedALinkIsFollowed) {
  SKIP_WITHOUT_CORPUS();
  CliHost h;
  const fs::path fifo = h.host.root() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const auto r = run_command(h.capture_cmd(fifo));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(fifo.string() + ": is a FIFO, not a file envlock can write"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_fifo(fifo));
  fs::create_symlink("fifo", h.host.root() / "fifo.tar.zst");
  const auto b2 = run_command(h.capture_cmd(h.host.root() / "snap.yaml") + " --bundle '" + fifo.string() + ".tar.zst'");
  EXPECT_EQ(b2.exit_code, 1) << b2.err;
  EXPECT_NE(b2.err.find("is a FIFO, not a file envlock can write"), std::string::npos) << b2.err;
  EXPECT_TRUE(fs::is_fifo(fifo));
  fs::create_directories(h.host.root() / "kept");
  fs::create_symlink("kept/snap.yaml", h.host.root() / "link.yaml");
  const auto l = run_command(h.capture_cmd(h.host.root() / "link.yaml"));
  EXPECT_EQ(l.exit_code, 0) << l.err;
  EXPECT_TRUE(fs::is_symlink(h.host.root() / "link.yaml"));
  EXPECT_TRUE(Snapshot::read(h.host.root() / "kept/snap.yaml").ok());
}

// A tree without libc.so.6 and a prefix of pip installs alone: no platform can be known. The
// environment is left out as a problem; the partial snapshot still reads, diffs and locks.
TEST(SnapshotCli, AnEnvironmentWithoutAPlatformIsLeftOutAndTheSnapshotStaysReadable) {
  FakeHost host;
  host.write("/opt/env/conda-meta/history", "==> 2024-01-01 00:00:00 <==\n");
  host.write("/opt/env/lib/python3.12/site-packages/tool-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: tool\nVersion: 1.0\n");
  host.write("/opt/env/lib/python3.12/site-packages/tool-1.0.dist-info/INSTALLER", "pip\n");
  host.write("/opt/env/lib/python3.12/site-packages/tool-1.0.dist-info/RECORD", "tool-1.0.dist-info/RECORD,,\n");
  const fs::path out = host.root() / "snap.yaml";
  const auto r = run_command(envlock_cmd() + " snapshot capture --root '" + host.root().string() + "' -p /opt/env -o '" + out.string() + "'");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("/opt/env: its platform is unknown"), std::string::npos) << r.err;
  const auto s = Snapshot::read(out);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_TRUE(s->environments.empty());
  EXPECT_FALSE(s->complete());
  const auto lock = run_command(envlock_cmd() + " snapshot lock '" + out.string() + "' -o '" + (host.root() / "x.lock").string() + "'");
  EXPECT_EQ(lock.exit_code, 0) << lock.err;
}

// A saved nvidia-smi output that does not parse is named by its path, the file the user passed.
TEST(SnapshotCli, ABrokenSavedNvidiaSmiOutputIsNamedByItsPath) {
  SKIP_WITHOUT_CORPUS();
  CliHost h;
  const fs::path broken = h.host.root() / "smi.xml";
  std::ofstream(broken) << "<nvidia_smi_log><driver_version>470";
  const fs::path out = h.host.root() / "snap.yaml";
  const auto r = run_command(envlock_cmd() + " snapshot capture --root '" + h.host.root().string() +
                             "' -p /opt/conda/envs/train --nvidia-smi-xml '" + broken.string() + "' -o '" + out.string() + "'");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("  " + broken.string() + ":1: not valid nvidia-smi XML"), std::string::npos) << r.err;
}

TEST(SnapshotCli, PartialCaptureExitsThreeAndSaysSo) {
  SKIP_WITHOUT_CORPUS();
  CliHost h;
  h.host.write("/var/lib/dpkg/status", "Package: ok\nVersion: 1\n\nVersion: 2\n");
  const fs::path out = h.host.root() / "snap.yaml";
  const auto r = run_command(h.capture_cmd(out) + " --json");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("PARTIAL"), std::string::npos);
  EXPECT_NE(r.err.find("/var/lib/dpkg/status:4"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j.at("complete").get<bool>());
  EXPECT_EQ(j.at("problems").size(), 1u);
  EXPECT_EQ(j.at("environments").at(0).at("packages"), 16);
}

TEST(SnapshotCli, DiffAndLock) {
  SKIP_WITHOUT_CORPUS();
  CliHost h;
  const fs::path a = h.host.root() / "a.yaml", b = h.host.root() / "b.yaml";
  ASSERT_EQ(run_command(h.capture_cmd(a)).exit_code, 0);
  h.host.write("/proc/sys/kernel/osrelease", "6.1.0-21-amd64\n");
  ASSERT_EQ(run_command(h.capture_cmd(b)).exit_code, 0);
  const auto d = run_command(envlock_cmd() + " snapshot diff '" + a.string() + "' '" + b.string() + "'");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("host:\n  ~ kernel: 6.1.0-18-amd64 -> 6.1.0-21-amd64\n"), std::string::npos) << d.out;
  const auto same = run_command(envlock_cmd() + " snapshot diff '" + a.string() + "' '" + a.string() + "'");
  EXPECT_EQ(same.out, "no differences\n");
  // `envlock diff` on two snapshots: the package diff, then the host facts (issue 7, item 5).
  const auto e = run_command(envlock_cmd() + " diff '" + a.string() + "' '" + b.string() + "'");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("\nhost facts of the two snapshots (1 change):\nhost:\n  ~ kernel: 6.1.0-18-amd64 -> 6.1.0-21-amd64\n"),
            std::string::npos)
      << e.out;
  const auto ej = run_command(envlock_cmd() + " diff '" + a.string() + "' '" + b.string() + "' --format json");
  ASSERT_EQ(ej.exit_code, 0) << ej.err;
  const auto hj = nlohmann::json::parse(ej.out).at("host_changes");
  ASSERT_EQ(hj.size(), 1u);
  EXPECT_EQ(hj[0].at("name"), "kernel");
  EXPECT_EQ(hj[0].at("after"), "6.1.0-21-amd64");
  const auto ea = run_command(envlock_cmd() + " diff '" + a.string() + "' '" + a.string() + "'");
  EXPECT_EQ(ea.out.find("host facts"), std::string::npos) << ea.out;

  const fs::path lock = h.host.root() / "envlock.lock";
  const auto l = run_command(envlock_cmd() + " snapshot lock '" + a.string() + "' -o '" + lock.string() + "'");
  ASSERT_EQ(l.exit_code, 0) << l.err;
  const auto lf = Lockfile::read(lock);
  ASSERT_TRUE(lf.ok()) << lf.error().to_string();
  EXPECT_EQ(lf->environments.at("train").platforms.at("osx-arm64").packages.size(), 16u);
  // Without -o it writes ./envlock.lock, and never over one that is there.
  const auto again = run_command("cd '" + h.host.root().string() + "' && " + envlock_cmd() + " snapshot lock '" + a.string() + "'");
  EXPECT_EQ(again.exit_code, 2) << again.err;
  EXPECT_NE(again.err.find("envlock.lock: exists already; `snapshot lock` replaces a lockfile only when -o names it"), std::string::npos)
      << again.err;
  EXPECT_TRUE(Lockfile::read(lock).ok());
}

// Two captures of one host whose environments did not change but whose host did: an Ubuntu point
// release (only os-release's PRETTY_NAME moves: VERSION_ID stays "22.04"), a new kernel, a new
// driver, a newer glibc (written into the second snapshot: the test can only copy this machine's
// libc). `snapshot diff` and `envlock diff` list every one; `--fail-on any` (packages) passes and
// `--fail-on host-changed` fails on them, counting them.
TEST(SnapshotCli, HostOnlyChangesAreListedAndGatedByHostChanged) {
  SKIP_WITHOUT_CORPUS();
  CliHost h;
  h.host.write("/etc/os-release",
               "PRETTY_NAME=\"Ubuntu 22.04.3 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"22.04\"\nVERSION=\"22.04.3 LTS (Jammy Jellyfish)\"\n"
               "VERSION_CODENAME=jammy\nID=ubuntu\nID_LIKE=debian\nUBUNTU_CODENAME=jammy\n");
  const fs::path a = h.host.root() / "a.yaml", b = h.host.root() / "b.yaml";
  ASSERT_EQ(run_command(h.capture_cmd(a)).exit_code, 0);
  h.host.write("/etc/os-release",
               "PRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"22.04\"\nVERSION=\"22.04.4 LTS (Jammy Jellyfish)\"\n"
               "VERSION_CODENAME=jammy\nID=ubuntu\nID_LIKE=debian\nUBUNTU_CODENAME=jammy\n");
  h.host.write("/proc/sys/kernel/osrelease", "6.5.0-26-generic\n");
  h.host.write("/proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.239.06  Wed Feb 28 22:33:48 UTC 2024\n");
  ASSERT_EQ(run_command(h.capture_cmd(b)).exit_code, 3);  // nvidia-smi's saved output still says 470.74: kept both, a problem
  {
    auto snap = Snapshot::read(b);
    ASSERT_TRUE(snap.ok()) << snap.error().to_string();
    const auto glibc = Snapshot::read(a)->host.glibc;
    EXPECT_NE(glibc, "");
    snap->host.glibc = "99.1";
    ASSERT_TRUE(snap->write(b).ok());
  }
  const std::string glibc = Snapshot::read(a)->host.glibc;
  const std::string host_block = "host:\n"
                                 "  ~ glibc: " + glibc + " -> 99.1\n"
                                 "  ~ kernel: 6.1.0-18-amd64 -> 6.5.0-26-generic\n"
                                 "  ~ nvidia driver: 470.74 -> 470.239.06\n"
                                 "  + nvidia driver (nvidia-smi) 470.74\n"
                                 "  ~ os pretty name: Ubuntu 22.04.3 LTS -> Ubuntu 22.04.4 LTS\n";
  const std::string capture_block =
      "capture:\n"
      "  ~ complete: yes -> no (partial capture)\n"
      "  + problem /proc/driver/nvidia/version the kernel module's driver version 470.239.06 disagrees with " + h.smi +
      "'s 470.74 (both recorded: a driver upgraded without reloading the module?)\n";
  const auto d = run_command(envlock_cmd() + " snapshot diff '" + a.string() + "' '" + b.string() + "'");
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(d.out, capture_block + host_block);
  EXPECT_EQ(d.err, "");
  const std::string diff = envlock_cmd() + " diff '" + a.string() + "' '" + b.string() + "'";
  const std::string packages = "no changes\n"
                               "old: " + a.string() + " (envlock.lock v1)\n"
                               "new: " + b.string() + " (envlock.lock v1)\n"
                               "\n"
                               "train / osx-arm64: no changes (17 packages)\n"
                               "\n"
                               "host facts of the two snapshots (7 changes):\n";
  auto r = run_command(diff + " --fail-on any");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, packages + capture_block + host_block);
  EXPECT_EQ(r.err, "");
  r = run_command(diff + " --fail-on any,host-changed");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, packages + capture_block + host_block);
  EXPECT_EQ(r.err, "envlock diff: failing on 7 host facts of the two snapshots (host-changed) (--fail-on any,host-changed)\n");
  const auto j = run_command(diff + " --format json --fail-on host-changed");
  EXPECT_EQ(j.exit_code, 1);
  const auto hj = nlohmann::json::parse(j.out).at("host_changes");
  ASSERT_EQ(hj.size(), 7u);
  EXPECT_EQ(hj[6], (nlohmann::json{{"kind", "changed"}, {"section", "host"}, {"name", "os pretty name"},
                                   {"before", "Ubuntu 22.04.3 LTS"}, {"after", "Ubuntu 22.04.4 LTS"}}));
  // The same snapshot on both sides: nothing to gate.
  r = run_command(envlock_cmd() + " diff '" + b.string() + "' '" + b.string() + "' --fail-on host-changed");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(SnapshotCli, CheckNamesEachFailedRequirement) {
  SKIP_WITHOUT_CORPUS();
  CliHost h;
  const fs::path out = h.host.root() / "snap.yaml";
  ASSERT_EQ(run_command(h.capture_cmd(out)).exit_code, 0);
  // The corpus prefix is osx-arm64 and its packages need __osx >=11.0: this Linux host cannot run it.
  const auto r = run_command(envlock_cmd() + " snapshot check '" + out.string() + "'");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("train: this host cannot run it"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("environment train needs platform osx-arm64; the target has linux-64"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("libzlib 1.3.1 needs __osx >=11.0"), std::string::npos) << r.out;
}

TEST(SnapshotCli, UsageErrors) {
  const auto missing = run_command(envlock_cmd() + " snapshot diff /nonexistent/a.yaml /nonexistent/b.yaml");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/a.yaml"), std::string::npos) << missing.err;
  const auto relative = run_command(envlock_cmd() + " snapshot capture --root /tmp -p relative/env");
  EXPECT_EQ(relative.exit_code, 2) << relative.err;
  const auto no_sub = run_command(envlock_cmd() + " snapshot");
  EXPECT_EQ(no_sub.exit_code, 2);
  // --json prints the summary on standard output, where the snapshot would go without -o.
  const auto json_only = run_command(envlock_cmd() + " snapshot capture --root /tmp --json");
  EXPECT_EQ(json_only.exit_code, 2) << json_only.err;
  EXPECT_NE(json_only.err.find("the snapshot itself needs -o FILE"), std::string::npos) << json_only.err;
}

// A prefix that does not exist or is not a conda prefix is refused and nothing is written; a
// capture that finds no environment at all says so instead of writing an empty snapshot.
TEST(SnapshotCli, MissingOrNonCondaPrefixWritesNothing) {
  const fs::path dir = fs::temp_directory_path() / ("envlock-snap-noprefix-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "host/opt/plain");
  const fs::path out = dir / "x.yaml";
  const std::string base = envlock_cmd() + " snapshot capture --root '" + (dir / "host").string() + "'";
  const auto missing = run_command(base + " -p /nonexistent -o '" + out.string() + "'");
  EXPECT_EQ(missing.exit_code, 1) << missing.err;
  EXPECT_NE(missing.err.find("/nonexistent: no such prefix"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(out));
  const auto plain = run_command(base + " -p /opt/plain -o '" + out.string() + "'");
  EXPECT_EQ(plain.exit_code, 1) << plain.err;
  EXPECT_NE(plain.err.find("is not a conda prefix"), std::string::npos) << plain.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(dir);
}

// A host without conda is a snapshot too (issue 17): capture --root records the system packages
// (the real dpkg status file), OS, kernel, ABI, CPU, the driver and GPUs (a real nvidia-smi
// output) and the pip packages of the system Pythons, says on standard error that it found no
// conda environment, and exits 0.
TEST(SnapshotCli, AHostWithoutCondaIsASnapshot) {
  SKIP_WITHOUT_CORPUS();
  FakeHost host;
  const std::string smi = host.complete_gpu_host(FakeHost::Gpu::Gt1030Driver470).string();
  // Debian's python3-six (no INSTALLER), and requests installed by pip into /usr/local.
  host.write("/usr/lib/python3/dist-packages/six-1.16.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: six\nVersion: 1.16.0\n");
  host.write("/usr/local/lib/python3.11/dist-packages/requests-2.31.0.dist-info/METADATA",
             "Metadata-Version: 2.1\nName: requests\nVersion: 2.31.0\nRequires-Dist: idna<4,>=2.5\n");
  host.write("/usr/local/lib/python3.11/dist-packages/requests-2.31.0.dist-info/INSTALLER", "pip\n");
  const fs::path out = host.root() / "host.yaml";
  const auto r = run_command(envlock_cmd() + " snapshot capture --root '" + host.root().string() + "' --nvidia-smi-xml '" + smi +
                             "' -o '" + out.string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "no conda environments found (none listed in ~/.conda/environments.txt and no envs/ folder with a conda-meta/ "
            "inside): the snapshot holds the host facts only; name environments with -p PREFIX\n");
  const auto s = Snapshot::read(out);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_TRUE(s->complete());
  EXPECT_TRUE(s->environments.empty());
  EXPECT_EQ(s->host.system_package_manager, "dpkg");
  EXPECT_FALSE(s->host.system_packages.empty());
  EXPECT_EQ(s->host.os.id, "debian");
  EXPECT_EQ(s->host.kernel, "6.1.0-18-amd64");
  EXPECT_FALSE(s->host.glibc.empty());
  EXPECT_EQ(s->host.cpu_level, "x86_64_v3");
  ASSERT_TRUE(s->host.nvidia.has_value());
  EXPECT_EQ(s->host.nvidia->driver_version, "470.74");
  EXPECT_EQ(s->host.nvidia->gpus.size(), 1u);
  EXPECT_EQ(s->host.system_python,
            (std::vector<SystemPythonSite>{{"/usr/lib/python3/dist-packages", {{"six", "1.16.0", "", "index"}}},
                                           {"/usr/local/lib/python3.11/dist-packages", {{"requests", "2.31.0", "pip", "index"}}}}));
  // The same file, read back and written again, is byte-identical.
  EXPECT_EQ(s->to_yaml(), testing::slurp(out));
  // check and lock say there is no environment, as before.
  const auto chk = run_command(envlock_cmd() + " snapshot check '" + out.string() + "'");
  EXPECT_EQ(chk.exit_code, 2) << chk.err;
  EXPECT_NE(chk.err.find("the snapshot holds no conda environment (host facts only)"), std::string::npos) << chk.err;
}

// Two sources of one fact that disagree are both kept, with a problem naming them (the snapshot is
// then partial, exit 3): the loaded kernel module (/proc/driver/nvidia/version) against
// nvidia-smi's driver version, and the libcuda.so.<version> libcuda.so.1 leads to.
TEST(SnapshotCli, DisagreeingDriverFactsAreKeptBothAndNamed) {
  SKIP_WITHOUT_CORPUS();
  FakeHost host;
  host.base_system();
  const std::string smi = host.nvidia("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023",
                                      "influxdata__telegraf/plugins__inputs__nvidia_smi__testdata__a100-sxm4-v12.xml")
                              .string();
  host.write("/usr/lib/x86_64-linux-gnu/libcuda.so.535.54.03", "not really a library\n");
  fs::create_symlink("libcuda.so.535.54.03", host.local("/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
  const fs::path out = host.root() / "host.yaml";
  const auto r = run_command(envlock_cmd() + " snapshot capture --root '" + host.root().string() + "' --nvidia-smi-xml '" + smi +
                             "' -o '" + out.string() + "'");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.err,
            "no conda environments found (none listed in ~/.conda/environments.txt and no envs/ folder with a conda-meta/ "
            "inside): the snapshot holds the host facts only; name environments with -p PREFIX\n"
            "warning: the snapshot is PARTIAL: 2 fact(s) could not be captured:\n"
            // libcuda.so.1 is named where the loader's order finds it first (/lib before /usr/lib;
            // the fake host's /lib is merged-usr's link to usr/lib).
            "  /lib/x86_64-linux-gnu/libcuda.so.1: libcuda 535.54.03 disagrees with the driver version 535.104.05 "
            "(/proc/driver/nvidia/version; both recorded)\n"
            "  /proc/driver/nvidia/version: the kernel module's driver version 535.104.05 disagrees with " + smi +
                "'s 535.54.03 (both recorded: a driver upgraded without reloading the module?)\n");
  const auto s = Snapshot::read(out);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  ASSERT_TRUE(s->host.nvidia.has_value());
  EXPECT_EQ(s->host.nvidia->driver_version, "535.104.05");
  EXPECT_EQ(s->host.nvidia->smi_driver_version, "535.54.03");
  EXPECT_EQ(s->host.nvidia->libcuda_version, "535.54.03");
  const std::string text = testing::slurp(out);
  EXPECT_NE(text.find("      driver: \"535.104.05\"\n      cuda: \"12.2\"\n      driver-nvidia-smi: \"535.54.03\"\n      libcuda: \"535.54.03\"\n"),
            std::string::npos)
      << text;
}

// `--root DIR`: every absolute path met while capturing (-p, environments.txt lines, links in the
// prefix, conda-meta paths reached through them) is a host path, looked up under DIR — never on
// this machine. Links here are absolute, the case a naive `DIR + path` lookup gets wrong.
TEST(SnapshotCli, RootResolvesAbsolutePathsInsideTheTree) {
  FakeHost host;
  host.base_system();
  const fs::path outside = host.root().parent_path() / (host.root().filename().string() + "-outside");
  fs::create_directories(outside / "machine-env/conda-meta");
  std::ofstream(outside / "libhost.so", std::ios::binary) << "libhost\n";
  auto sha = [](const std::string& bytes) {
    Hasher h(HashAlgorithm::Sha256);
    h.update(bytes);
    return h.hex_digest();
  };
  auto entry = [&](const std::string& path, const std::string& bytes) {
    return nlohmann::json{{"_path", path}, {"path_type", "hardlink"}, {"sha256", sha(bytes)}, {"size_in_bytes", bytes.size()}};
  };
  // The environment lives at /data/envs/train; /opt/conda is an absolute link to /data.
  const nlohmann::json record{
      {"name", "tool"}, {"version", "1.0"}, {"build", "0"}, {"build_number", 0}, {"subdir", "linux-64"},
      {"depends", nlohmann::json::array()}, {"fn", "tool-1.0-0.conda"},
      {"url", "https://conda.anaconda.org/conda-forge/linux-64/tool-1.0-0.conda"},
      {"channel", "https://conda.anaconda.org/conda-forge/linux-64"},
      {"files", {"bin/tool", "lib/libx.so", "share/doc/readme", "lib/libhost.so"}},
      {"paths_data",
       {{"paths_version", 1},
        {"paths", {entry("bin/tool", "tool\n"), entry("lib/libx.so", "libx\n"), entry("share/doc/readme", "readme\n"),
                   entry("lib/libhost.so", "libhost\n")}}}}};
  host.write("/data/envs/train/conda-meta/tool-1.0-0.json", record.dump(1));
  host.write("/data/envs/train/bin/tool", "tool\n");
  host.write("/data/store/libx.so", "libx\n");
  host.write("/data/share-real/doc/readme", "readme\n");
  fs::create_directories(host.local("/data/envs/train/lib"));
  fs::create_symlink("/data/store/libx.so", host.local("/data/envs/train/lib/libx.so"));
  fs::create_directory_symlink("/data/share-real", host.local("/data/envs/train/share"));
  // Exists on this machine, not under the root: missing, not read from here.
  fs::create_symlink(outside / "libhost.so", host.local("/data/envs/train/lib/libhost.so"));
  fs::create_directories(host.local("/opt"));
  fs::create_directory_symlink("/data", host.local("/opt/conda"));
  fs::create_directory_symlink(outside / "machine-env", host.local("/opt/elsewhere"));
  host.write("/root/.conda/environments.txt", "/opt/conda/envs/train\n");

  const std::string base = envlock_cmd() + " snapshot capture --root '" + host.root().string() + "'";
  const fs::path out = host.root().parent_path() / (host.root().filename().string() + "-snap.yaml");
  for (const std::string prefix_arg : {" -p /opt/conda/envs/train", ""}) {  // named, then from environments.txt
    fs::remove(out);
    const auto r = run_command(base + prefix_arg + " -o '" + out.string() + "'");
    ASSERT_TRUE(fs::exists(out)) << prefix_arg << ": " << r.err;
    const auto s = Snapshot::read(out);
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    ASSERT_EQ(s->environments.size(), 1u) << prefix_arg << ": " << r.err;
    const auto& env = s->environments[0];
    EXPECT_EQ(env.prefix, "/opt/conda/envs/train");
    EXPECT_EQ(env.name, "train");
    ASSERT_EQ(env.packages.size(), 1u);
    EXPECT_EQ(env.packages[0].record.name, "tool");
    // libx.so and share/doc/readme are found through the tree's links, with the recorded bytes.
    EXPECT_TRUE(env.drift.modified.empty()) << env.drift.modified.size() << " modified, first " << env.drift.modified[0].path;
    const std::map<std::string, std::vector<std::string>> missing{{"tool", {"lib/libhost.so"}}};
    EXPECT_EQ(env.drift.missing, missing);
  }
  // A prefix that exists on this machine but not under the root is no prefix.
  fs::remove(out);
  const auto elsewhere = run_command(base + " -p /opt/elsewhere -o '" + out.string() + "'");
  EXPECT_EQ(elsewhere.exit_code, 1) << elsewhere.err;
  EXPECT_NE(elsewhere.err.find("/opt/elsewhere: no such prefix under --root " + host.root().string()), std::string::npos)
      << elsewhere.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(outside);
  fs::remove(out);
}

}  // namespace
// Issue 17, point 9: an editable pip source under the home folder is written `~/…` (the snapshot
// block and the envlock.lock part alike) and named in a warning, since it lies outside the
// project; one elsewhere outside the project is kept as it is, with a warning too. HOME is a
// temporary folder.
TEST(SnapshotCli, PipSourcesOutsideTheProjectAreNamedAndNoHomePathIsWritten) {
  SKIP_WITHOUT_CORPUS();
  CliHost h;
  const fs::path home = h.host.root() / "user-home";
  fs::create_directories(home);
  const std::string site = "/opt/conda/envs/train/lib/python3.13t/site-packages/";
  const auto editable = [&](const std::string& name, const std::string& url) {
    const std::string info = site + name + "-0.3.dev0.dist-info/";
    h.host.write(info + "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: 0.3.dev0\n");
    h.host.write(info + "INSTALLER", "pip\n");
    h.host.write(info + "RECORD", name + "-0.3.dev0.dist-info/METADATA,,\n");
    h.host.write(info + "direct_url.json", R"({"url": ")" + url + R"(", "dir_info": {"editable": true}})");
  };
  editable("mylib", "file://" + (home / "src/mylib").string());
  editable("tool", "file:///srv/src/tool");
  fs::create_directories(h.host.root() / "proj");
  const fs::path out = h.host.root() / "proj/snap.yaml";
  const auto r = run_command("HOME='" + home.string() + "' " + h.capture_cmd(out));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string project = (h.host.root() / "proj").string();
  EXPECT_EQ(r.err.substr(0, r.err.find("captured")),
            "warning: pip package mylib 0.3.dev0 (environment train) is an editable install of ~/src/mylib, outside the project (" +
                project + "): the snapshot records it as ~/src/mylib, which deploy looks for in the home folder of whoever deploys; "
                "to make the snapshot portable, keep the source in the project folder\n"
                "warning: pip package tool 0.3.dev0 (environment train) is an editable install of /srv/src/tool, outside the project (" +
                project + "): the snapshot records it as /srv/src/tool, which deploy looks for at that path on the target; to make "
                "the snapshot portable, keep the source in the project folder\n");
  const std::string text = testing::slurp(out);
  EXPECT_EQ(text.find(home.string()), std::string::npos) << text;
  EXPECT_NE(text.find("requirement: mylib @ ~/src/mylib\n"), std::string::npos) << text;
  EXPECT_NE(text.find("url: \"~/src/mylib\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("url: file:///srv/src/tool\n"), std::string::npos) << text;
  // Read back by the same user: the same source, and `snapshot diff` of the file with itself is empty.
  const auto d = run_command("HOME='" + home.string() + "' " + envlock_cmd() + " snapshot diff '" + out.string() + "' '" + out.string() + "'");
  EXPECT_EQ(d.exit_code, 0) << d.err;
}

}  // namespace envlock

namespace envlock {
namespace {

using testing::envlock_cmd;
using testing::run_command;
namespace fs = std::filesystem;

// A mistyped snapshot command is named, with the commands there are, as at the top level.
TEST(SnapshotCli, AnUnknownSnapshotCommandIsNamedWithTheCommands) {
  const auto bogus = run_command(envlock_cmd() + " snapshot bogus");
  EXPECT_EQ(bogus.exit_code, 2) << bogus.err;
  EXPECT_NE(bogus.err.find("error: envlock snapshot: unknown command 'bogus'"), std::string::npos) << bogus.err;
  EXPECT_NE(bogus.err.find("snapshot commands: capture, check, deploy, diff, lock"), std::string::npos) << bogus.err;
  EXPECT_NE(bogus.err.find("hint: run `envlock snapshot --help`"), std::string::npos) << bogus.err;
  const auto none = run_command(envlock_cmd() + " snapshot");
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("error: snapshot: a command is required after `envlock snapshot`"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("snapshot commands: capture, check, deploy, diff, lock"), std::string::npos) << none.err;
  // A real subcommand still runs (and reports its own errors).
  EXPECT_EQ(run_command(envlock_cmd() + " snapshot capture --help").exit_code, 0);
}

// capture --root that does not exist is about a named path: exit 1, as -p that does not exist
// (docs/cli.md), not a usage error.
TEST(SnapshotCli, CaptureRootThatDoesNotExistExitsOneAsPrefixDoes) {
  const std::string missing = "/nonexistent-envlock-" + std::to_string(::getpid());
  const std::string out = (fs::temp_directory_path() / ("envlock-never-" + std::to_string(::getpid()) + ".yaml")).string();
  const auto root = run_command(envlock_cmd() + " snapshot capture --root " + missing + " -p /opt/conda -o " + out);
  EXPECT_EQ(root.exit_code, 1) << root.err;
  EXPECT_NE(root.err.find("error: " + missing + ": --root does not exist"), std::string::npos) << root.err;
  const auto prefix = run_command(envlock_cmd() + " snapshot capture -p " + missing + " -o " + out);
  EXPECT_EQ(prefix.exit_code, root.exit_code) << prefix.err;
  EXPECT_FALSE(fs::exists(out));
}

// A saved output the user named with --nvidia-smi-xml/--rpm-qa that cannot be read is an error
// (exit 1, nothing written), not a partial capture that silently lacks the GPUs.
TEST(SnapshotCli, AMissingSavedCommandOutputIsAnError) {
  const fs::path dir = fs::temp_directory_path() / ("envlock-snap-smi-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "host");
  const fs::path out = dir / "s.yaml";
  for (const std::string option : {"--nvidia-smi-xml", "--rpm-qa"}) {
    const auto r = run_command(envlock_cmd() + " snapshot capture --root '" + (dir / "host").string() + "' -p /opt/conda " + option +
                               " /nonexistent-envlock.xml -o '" + out.string() + "'");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("/nonexistent-envlock.xml: " + option + ": no such file"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
  }
  fs::remove_all(dir);
}

// --rpm-qa FILE on a host with dpkg: the named file is read (never silently ignored); a malformed
// line costs that one package and is named FILE:LINE; the other packages are recorded.
TEST(SnapshotCli, RpmQaFileIsReadLineByLineAndNamedInProblems) {
  const fs::path dir = fs::temp_directory_path() / ("envlock-snap-rpm-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "host/var/lib/dpkg");
  fs::create_directories(dir / "host/opt/conda/conda-meta");
  std::ofstream(dir / "host/var/lib/dpkg/status") << "Package: apt\nVersion: 2.6.1\nArchitecture: amd64\nStatus: install ok installed\n";
  const fs::path rpm = dir / "rpm-qa.txt";
  std::ofstream(rpm) << "glibc\t0:2.34-100.el9\tx86_64\nglibc-2.34-100.el9.x86_64\nbash\t0:5.1.8-6.el9\tx86_64\n";
  const fs::path out = dir / "s.yaml";
  const auto r = run_command(envlock_cmd() + " snapshot capture --root '" + (dir / "host").string() + "' -p /opt/conda --rpm-qa '" +
                             rpm.string() + "' -o '" + out.string() + "' --json");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;  // partial: the bad line is a problem
  EXPECT_NE(r.err.find("warning: --rpm-qa " + rpm.string() + ": the system packages are recorded from this file; the host's "
                       "/var/lib/dpkg/status is not read"),
            std::string::npos)
      << r.err;
  const auto j = nlohmann::json::parse(r.out);
  bool named = false;
  for (const auto& p : j["problems"]) {
    EXPECT_EQ(p["where"].get<std::string>().find("rpm -qa"), std::string::npos) << p;
    if (p["where"] == rpm.string() + ":2") named = true;
  }
  EXPECT_TRUE(named) << r.out;
  auto snap = Snapshot::read(out);
  ASSERT_TRUE(snap.ok()) << snap.error().to_string();
  EXPECT_EQ(snap->host.system_package_manager, "rpm");
  ASSERT_EQ(snap->host.system_packages.size(), 2u);
  EXPECT_EQ(snap->host.system_packages[0].name, "bash");
  EXPECT_EQ(snap->host.system_packages[1].name, "glibc");

  // A file that is no rpm output at all is not ignored either: every line is named.
  const auto h = run_command(envlock_cmd() + " snapshot capture --root '" + (dir / "host").string() + "' -p /opt/conda --rpm-qa '" +
                             (dir / "host/var/lib/dpkg/status").string() + "' -o '" + out.string() + "' --json");
  EXPECT_EQ(h.exit_code, 3) << h.err;
  EXPECT_NE(h.out.find((dir / "host/var/lib/dpkg/status").string() + ":1"), std::string::npos) << h.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace envlock

namespace envlock {
namespace {

// Finding M7: under `--root DIR`, a `<name>.egg-link`'s tree (an absolute path of the captured
// host) is read inside DIR. Before, its PKG-INFO was read on the live host, outside the root:
// the version came from whatever this machine holds at that path.
TEST(SnapshotCli, AnEggLinkTreeIsReadUnderTheRoot) {
  SKIP_WITHOUT_CORPUS();
  CliHost h;
  const fs::path live = fs::temp_directory_path() / ("envlock-egg-live-" + std::to_string(::getpid()));
  fs::remove_all(live);
  fs::create_directories(live / "oldlib.egg-info");
  std::ofstream(live / "oldlib.egg-info/PKG-INFO") << "Metadata-Version: 1.1\nName: oldlib\nVersion: 6.6.6\n";
  h.host.write("/opt/conda/envs/train/lib/python3.13t/site-packages/oldlib.egg-link", live.string() + "\n.\n");
  const fs::path out = h.host.root() / "snap.yaml";
  // Not under the root: the version is unknown, whatever the live host holds there.
  auto r = run_command(h.capture_cmd(out));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("editable install of oldlib at file://" + live.string() + ": its version is unknown"), std::string::npos) << r.err;
  EXPECT_EQ(testing::slurp(out).find("6.6.6"), std::string::npos);
  // Under the root, it is read there.
  h.host.write(live.string() + "/oldlib.egg-info/PKG-INFO", "Metadata-Version: 1.1\nName: oldlib\nVersion: 1.0\n");
  r = run_command(h.capture_cmd(out));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string text = testing::slurp(out);
  EXPECT_EQ(text.find("6.6.6"), std::string::npos) << text;
  EXPECT_NE(text.find("- name: oldlib\n          version: \"1.0\"\n"), std::string::npos) << text;
  fs::remove_all(live);
}

}  // namespace
}  // namespace envlock

namespace envlock {
namespace {

// Finding M6: `snapshot diff` printed the reader's home folder (a snapshot holds `~/…`, read back
// against $HOME): a path under it is printed `~/…` in text and JSON, as `envlock diff` prints a
// channel under it; a folder that only starts like it is not.
TEST(SnapshotCli, SnapshotDiffPrintsNoHomePaths) {
  SKIP_WITHOUT_CORPUS();
  CliHost h;
  const fs::path home = h.host.root() / "user-home";
  fs::create_directories(home);
  const std::string info = "/opt/conda/envs/train/lib/python3.13t/site-packages/mylib-0.3.dev0.dist-info/";
  h.host.write(info + "METADATA", "Metadata-Version: 2.1\nName: mylib\nVersion: 0.3.dev0\n");
  h.host.write(info + "INSTALLER", "pip\n");
  h.host.write(info + "RECORD", "mylib-0.3.dev0.dist-info/METADATA,,\n");
  auto capture = [&](const std::string& url, const fs::path& out) {
    h.host.write(info + "direct_url.json", R"({"url": ")" + url + R"(", "dir_info": {"editable": true}})");
    const auto r = run_command("HOME='" + home.string() + "' " + h.capture_cmd(out));
    EXPECT_EQ(r.exit_code, 0) << r.err;
  };
  const fs::path a = h.host.root() / "a.yaml", b = h.host.root() / "b.yaml";
  capture("file://" + (home / "src/mylib").string(), a);
  capture("file://" + home.string() + "-other/mylib", b);
  const std::string diff = "HOME='" + home.string() + "' " + envlock_cmd() + " snapshot diff '" + a.string() + "' '" + b.string() + "'";
  auto r = run_command(diff);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "pip:train:\n  ~ mylib: mylib @ ~/src/mylib [pip] -> mylib @ file://" + home.string() + "-other/mylib [pip]\n");
  EXPECT_EQ(r.err, "");
  r = run_command(diff + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[\n  {\n    \"after\": \"mylib @ file://" + home.string() + "-other/mylib [pip]\",\n"
                   "    \"before\": \"mylib @ ~/src/mylib [pip]\",\n    \"kind\": \"changed\",\n    \"name\": \"mylib\",\n"
                   "    \"section\": \"pip:train\"\n  }\n]\n");
}

}  // namespace
}  // namespace envlock

namespace envlock {
namespace {

// conda-meta/*.json of a prefix given to `snapshot capture` is read as install, verify and list
// read it (issue 23, read_conda_meta_record_text's rules): at most 64 MiB, never through a link
// into /proc, /sys or /dev, never from a FIFO (opened O_NONBLOCK, read only when fstat calls it a
// regular file). A 65 MiB record (valid JSON) was read whole and captured, and a record linked to
// /proc/self/environ was read (then refused as not JSON); each is a problem naming the file now,
// the package left out, the snapshot partial (exit 3), and the other packages are captured.
TEST(SnapshotCli, ACondaMetaRecordOverTheCapALinkIntoProcAndAFifoAreNotRead) {
  SKIP_WITHOUT_CORPUS();
  CliHost h;
  const fs::path out = h.host.root() / "snap.yaml";
  const auto clean = run_command(h.capture_cmd(out));
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  const std::string meta = "/opt/conda/envs/train/conda-meta/";
  h.host.write(meta + "big-1.0-0.json", R"({"name": "big", "version": "1.0", "build": "0", "build_number": 0, )"
                                        R"("subdir": "noarch", "files": [], "license": ")" +
                                            std::string((65u << 20), 'x') + "\"}");
  fs::create_symlink("/proc/self/environ", h.host.local(meta + "environ-1.0-0.json"));
  ASSERT_EQ(::mkfifo(h.host.local(meta + "fifo-1.0-0.json").c_str(), 0644), 0);
  const auto r = run_command(h.capture_cmd(out));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, clean.err +
                       "warning: the snapshot is PARTIAL: 3 fact(s) could not be captured:\n"
                       "  " + meta + "big-1.0-0.json: is larger than 64 MiB, the most envlock reads of a conda-meta "
                       "record; it is not read, and the package it describes is left out\n"
                       "  " + meta + "environ-1.0-0.json: is in /proc, not a file of a project; it is not read, and the "
                       "package it describes is left out\n"
                       "  " + meta + "fifo-1.0-0.json: is not a regular file (a FIFO, device, socket or broken link); not "
                       "read, the package it describes is left out\n");
  const auto s = Snapshot::read(out);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  ASSERT_EQ(s->environments.size(), 1u);
  EXPECT_EQ(s->environments[0].packages.size(), 16u);
}

}  // namespace
}  // namespace envlock
