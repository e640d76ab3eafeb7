// Virtual package detection: each probe part and each CONDA_OVERRIDE_* variable.
#include <gtest/gtest.h>

#include <map>

#include "envlock/virtual_packages.hpp"

namespace envlock {
namespace {

// A host with fixed answers; `env` plays the process environment.
Host fake_host(std::map<std::string, std::string> env, std::optional<std::string> cuda = "12.4") {
  Host p;
  p.getenv = [env](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  p.kernel_release = [] { return std::string("6.1.0-18-amd64"); };
  p.glibc_version = [] { return std::string("2.36"); };
  p.microarchitecture = [] { return std::string("x86_64_v3"); };
  p.cuda_driver_version = [cuda] { return cuda; };
  return p;
}

std::map<std::string, VirtualPackage> by_name(const std::vector<VirtualPackage>& vps) {
  std::map<std::string, VirtualPackage> m;
  for (const auto& vp : vps) m[vp.name] = vp;
  return m;
}

TEST(VirtualPackages, DetectsEveryPackageFromTheProbe) {
  auto r = detect_virtual_packages(fake_host({}));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  auto m = by_name(*r);
  EXPECT_EQ(m["__unix"].to_string(), "__unix=0=0");
  EXPECT_EQ(m["__linux"].to_string(), "__linux=6.1.0=0");
  EXPECT_EQ(m["__glibc"].to_string(), "__glibc=2.36=0");
  EXPECT_EQ(m["__archspec"].to_string(), "__archspec=1=x86_64_v3");
  EXPECT_EQ(m["__cuda"].to_string(), "__cuda=12.4=0");
  // sorted by name
  ASSERT_EQ(r->size(), 5u);
  EXPECT_EQ((*r)[0].name, "__archspec");
  EXPECT_EQ((*r)[4].name, "__unix");
}

TEST(VirtualPackages, NoDriverMeansNoCudaPackageNotZero) {
  auto r = detect_virtual_packages(fake_host({}, std::nullopt));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(by_name(*r).count("__cuda"), 0u);
}

TEST(VirtualPackages, OverrideCudaReplacesAndSkipsTheDriver) {
  Host p = fake_host({{"CONDA_OVERRIDE_CUDA", "11.8"}});
  bool asked = false;
  p.cuda_driver_version = [&asked]() -> std::optional<std::string> { asked = true; return "12.4"; };
  auto r = detect_virtual_packages(p);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(by_name(*r)["__cuda"].version, "11.8");
  EXPECT_FALSE(asked);
}

TEST(VirtualPackages, OverrideCudaOnAHostWithoutDriverAddsIt) {
  auto r = detect_virtual_packages(fake_host({{"CONDA_OVERRIDE_CUDA", "12.2"}}, std::nullopt));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(by_name(*r)["__cuda"].version, "12.2");
}

TEST(VirtualPackages, EmptyOverrideRemovesThePackage) {
  for (const auto& [var, name] : std::map<std::string, std::string>{{"CONDA_OVERRIDE_CUDA", "__cuda"},
                                                                   {"CONDA_OVERRIDE_GLIBC", "__glibc"},
                                                                   {"CONDA_OVERRIDE_LINUX", "__linux"},
                                                                   {"CONDA_OVERRIDE_ARCHSPEC", "__archspec"}}) {
    auto r = detect_virtual_packages(fake_host({{var, ""}}));
    ASSERT_TRUE(r.ok()) << var;
    EXPECT_EQ(by_name(*r).count(name), 0u) << var;
    EXPECT_EQ(r->size(), 4u) << var;
  }
}

TEST(VirtualPackages, OverrideGlibcLinuxArchspec) {
  auto r = detect_virtual_packages(fake_host({{"CONDA_OVERRIDE_GLIBC", "2.17"},
                                              {"CONDA_OVERRIDE_LINUX", "4.18"},
                                              {"CONDA_OVERRIDE_ARCHSPEC", "x86_64_v2"}}));
  ASSERT_TRUE(r.ok());
  auto m = by_name(*r);
  EXPECT_EQ(m["__glibc"].version, "2.17");
  EXPECT_EQ(m["__linux"].version, "4.18");
  EXPECT_EQ(m["__archspec"].build, "x86_64_v2");
}

TEST(VirtualPackages, UnparsableOverrideIsAnErrorNamingTheVariable) {
  auto r = detect_virtual_packages(fake_host({{"CONDA_OVERRIDE_CUDA", "twelve point four"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, "CONDA_OVERRIDE_CUDA");
  EXPECT_NE(r.error().to_string().find("twelve point four"), std::string::npos);
  auto g = detect_virtual_packages(fake_host({{"CONDA_OVERRIDE_GLIBC", "2..17"}}));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().where, "CONDA_OVERRIDE_GLIBC");
  auto w = detect_virtual_packages(fake_host({{"CONDA_OVERRIDE_GLIBC", "banana"}}));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().where, "CONDA_OVERRIDE_GLIBC");
  EXPECT_EQ(w.error().message, "CONDA_OVERRIDE_GLIBC=banana is not a version");
  auto a = detect_virtual_packages(fake_host({{"CONDA_OVERRIDE_ARCHSPEC", "x86 64"}}));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().where, "CONDA_OVERRIDE_ARCHSPEC");
}

TEST(VirtualPackages, KernelReleaseKeepsTheNumericPart) {
  Host p = fake_host({});
  p.kernel_release = [] { return std::string("5.15.0.1-microsoft-standard-WSL2"); };
  auto r = detect_virtual_packages(p);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(by_name(*r)["__linux"].version, "5.15.0.1");
}

TEST(VirtualPackages, ParseSpellings) {
  auto a = VirtualPackage::parse("__cuda=12.4");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->to_string(), "__cuda=12.4=0");
  auto b = VirtualPackage::parse("__archspec=1=x86_64_v3");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->build, "x86_64_v3");
  EXPECT_FALSE(VirtualPackage::parse("cuda=12").ok());
  EXPECT_FALSE(VirtualPackage::parse("__cuda=1..2").ok());
}

TEST(VirtualPackages, MicroarchitectureIsAnX86Level) {
#if defined(__x86_64__)
  const std::string level = detect_microarchitecture();
  EXPECT_TRUE(level == "x86_64_v1" || level == "x86_64_v2" || level == "x86_64_v3" || level == "x86_64_v4")
      << level;
#else
  EXPECT_FALSE(detect_microarchitecture().empty());
#endif
}

TEST(VirtualPackages, MissingDriverLibraryGivesNoVersion) {
  EXPECT_EQ(detect_cuda_driver_version("/nonexistent/libcuda.so.1", 2000), std::nullopt);
}

}  // namespace
}  // namespace envlock
