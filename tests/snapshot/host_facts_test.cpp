// Capturing host facts through the seam (a whole fake host, a faulty dpkg stanza, the live host)
// and the NVIDIA facts in a snapshot file; the parsers themselves are tested in tests/host.
#include <gnu/libc-version.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "envlock/snapshot.hpp"
#include "envlock/virtual_packages.hpp"
#include "snapshot/fake_host.hpp"

namespace envlock {
namespace {

using testing::FakeHost;
using testing::corpus_dir;
using testing::slurp;
namespace fs = std::filesystem;

// ----- the seam and a whole fake host ------------------------------------------------------------

TEST(HostFactsCapture, AFaultyDpkgStanzaIsAProblemAndTheOtherPackagesAreCaptured) {
  SKIP_WITHOUT_CORPUS();
  FakeHost host;
  host.base_system();
  const std::string real =
      slurp(corpus_dir() / "hostinfo/aquasecurity__trivy/pkg__fanal__analyzer__pkg__dpkg__testdata__dpkg-third-party");
  host.write("/var/lib/dpkg/status", "Package: odd\n continued\nbroken line\n\n" + real);
  std::vector<CaptureProblem> problems;
  const HostFacts h = capture_host_facts(Host::tree(host.root()), {}, problems);
  EXPECT_EQ(h.system_package_manager, "dpkg");
  ASSERT_EQ(h.system_packages.size(), 2u);
  EXPECT_EQ(h.system_packages[0].name, "apt");
  EXPECT_EQ(h.system_packages[1].name, "docker-ce");
  const auto odd = std::find_if(problems.begin(), problems.end(), [](auto& p) { return p.where == "/var/lib/dpkg/status:3"; });
  ASSERT_NE(odd, problems.end());
  EXPECT_NE(odd->message.find("the stanza of odd (lines 1-3) was skipped"), std::string::npos) << odd->message;
}

// Issue 7 asks for the compute capability: recorded from <compute_cap> where the output has it
// (next to architecture), and absent where it does not (no -q -x output in the corpus has it).
TEST(Nvidia, ComputeCapabilityIsRecordedWherePresent) {
  SKIP_WITHOUT_CORPUS();
  const fs::path dual = corpus_dir() / "gpu/influxdata__telegraf/plugins__inputs__nvidia_smi__testdata__dual_a5000-v13.xml";
  std::string text = slurp(dual);
  auto nv = parse_nvidia_smi_xml(text, "dual.xml", false);
  ASSERT_TRUE(nv.ok()) << nv.error().to_string();
  ASSERT_EQ(nv->gpus.size(), 2u);
  EXPECT_EQ(nv->gpus[0].compute_capability, "");
  // The same output with <compute_cap> beside the first GPU's architecture.
  const auto at = text.find("<product_architecture>");
  ASSERT_NE(at, std::string::npos);
  text.insert(at, "<compute_cap>8.6</compute_cap>\n\t\t");
  nv = parse_nvidia_smi_xml(text, "dual.xml", false);
  ASSERT_TRUE(nv.ok()) << nv.error().to_string();
  EXPECT_EQ(nv->gpus[0].compute_capability, "8.6");
  EXPECT_EQ(nv->gpus[0].architecture, "Ampere");
  EXPECT_EQ(nv->gpus[1].compute_capability, "");
  // It survives the snapshot file.
  Snapshot s;
  s.host.platform = "linux-64";
  s.host.nvidia = *nv;
  const std::string yaml = s.to_yaml();
  EXPECT_NE(yaml.find("compute-capability: "), std::string::npos) << yaml;
  const auto back = Snapshot::parse(yaml, "s.yaml");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->host.nvidia->gpus[0].compute_capability, "8.6");
}

TEST(Host, LinksResolveInsideTheTree) {
  FakeHost host;
  host.base_system();
  const Host seam = Host::tree(host.root());
  const auto cxx = seam.resolve("/lib/x86_64-linux-gnu/libstdc++.so.6");
  ASSERT_TRUE(cxx.has_value());
  EXPECT_EQ(cxx->string().rfind(host.root().string(), 0), 0u) << *cxx;
  EXPECT_TRUE(fs::is_regular_file(*cxx));
  // A link that escapes with .. stays inside the root, as it would on the host.
  fs::create_symlink("../../../../../../etc/os-release", host.local("/usr/lib/escape"));
  const auto esc = seam.resolve("/usr/lib/escape");
  ASSERT_TRUE(esc.has_value());
  EXPECT_EQ(*esc, host.root() / "etc/os-release");
  EXPECT_FALSE(seam.resolve("/no/such/file").has_value());
}

TEST(HostFactsCapture, EveryFactFromAFakeDebianHostWithAGpu) {
  SKIP_WITHOUT_CORPUS();
  FakeHost host;
  CaptureOptions opt;
  opt.command_outputs["nvidia-smi"] = host.complete_gpu_host(FakeHost::Gpu::A100Driver535);
  std::vector<CaptureProblem> problems;
  const HostFacts h = capture_host_facts(Host::tree(host.root()), opt, problems);
  EXPECT_TRUE(problems.empty()) << problems.front().where << ": " << problems.front().message;
  EXPECT_EQ(h.platform, "linux-64");
  EXPECT_EQ(h.os.id, "debian");
  EXPECT_EQ(h.os.version_id, "12");
  EXPECT_EQ(h.kernel, "6.1.0-18-amd64");
  EXPECT_EQ(h.glibc, gnu_get_libc_version());
  EXPECT_GE(compare_dotted(h.libstdcxx_glibcxx, "3.4.30"), 0);
  EXPECT_FALSE(h.libstdcxx_cxxabi.empty());
  EXPECT_EQ(h.cpu_arch, "x86_64");
  EXPECT_EQ(h.cpu_level, "x86_64_v3");
  EXPECT_EQ(h.page_size, 4096u);
  ASSERT_TRUE(h.nvidia.has_value());
  EXPECT_EQ(h.nvidia->driver_version, "535.54.03");
  EXPECT_EQ(h.nvidia->cuda_version, "12.2");
  ASSERT_EQ(h.nvidia->gpus.size(), 1u);
  EXPECT_TRUE(h.nvidia->gpus[0].uuid.empty());
  EXPECT_EQ(h.system_package_manager, "dpkg");
  EXPECT_EQ(h.system_packages.size(), 91u);
}

TEST(HostFactsCapture, AnEmptyTreeIsAPartialCaptureNamingEachMissingFact) {
  FakeHost host;
  std::vector<CaptureProblem> problems;
  const HostFacts h = capture_host_facts(Host::tree(host.root()), {}, problems);
  std::set<std::string> where;
  for (const auto& p : problems) where.insert(p.where);
  EXPECT_TRUE(where.count("/etc/os-release"));
  EXPECT_TRUE(where.count("/proc/sys/kernel/osrelease"));
  EXPECT_TRUE(where.count("libc.so.6"));
  EXPECT_FALSE(h.nvidia.has_value()) << "no driver is a fact, not a problem";
  EXPECT_TRUE(h.system_package_manager.empty());
}

TEST(HostFactsCapture, LiveHostAgreesWithTheVirtualPackageProbes) {
  std::vector<CaptureProblem> problems;
  CaptureOptions opt;
  Host seam = Host::system();
  seam.run = nullptr;  // no nvidia-smi / rpm in a unit test
  const HostFacts h = capture_host_facts(seam, opt, problems);
  EXPECT_EQ(h.glibc, gnu_get_libc_version());
  EXPECT_EQ(h.cpu_level, detect_microarchitecture());
  EXPECT_EQ(h.page_size, static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)));
  EXPECT_FALSE(h.kernel.empty());
  // /proc/cpuinfo flags give the same level as CPUID on this machine.
  FakeHost tree;
  tree.base_system();
  tree.write("/proc/cpuinfo", slurp("/proc/cpuinfo"));  // /proc files report size 0: read, not copy
  std::vector<CaptureProblem> p2;
  EXPECT_EQ(capture_host_facts(Host::tree(tree.root()), opt, p2).cpu_level, detect_microarchitecture());
}

}  // namespace
}  // namespace envlock
