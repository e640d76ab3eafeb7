// The host facts' parsers (envlock/host_facts.hpp, src/host): ELF version definitions,
// os-release, dpkg's status database, rpm's query output, /proc/driver/nvidia/version and
// nvidia-smi -q -x. Capturing them through the seam is tested in tests/snapshot.
#include <gnu/libc-version.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <regex>

#include "envlock/host.hpp"
#include "envlock/host_facts.hpp"
#include "support/corpus.hpp"
#include "support/files.hpp"

namespace envlock {
namespace {

using testing::corpus_dir;
using testing::slurp;
namespace fs = std::filesystem;

// ----- the one reader of host files -------------------------------------------------------
// read_host_file_as() (envlock/host.hpp): probe's read_host_file (driver and /proc files, the
// first max_bytes) and snapshot's read_regular_file (every file capture reads, a larger file
// refused, a link at the end of a resolved path refused) are this reader.
TEST(HostFile, OneReaderForProbesFilesAndCapturesFiles) {
  const fs::path dir = fs::temp_directory_path() / ("envlock-hostfile-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path file = dir / "version";
  std::ofstream(file) << "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14\n";
  HostFileOptions whole;
  auto r = read_host_file_as(file, whole);
  EXPECT_EQ(r.text, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14\n");
  EXPECT_EQ(r.refused, "");
  // probe's: the first max_bytes of a larger file.
  EXPECT_EQ(read_host_file(file, 4), "NVRM");
  // snapshot's: a larger file is refused, naming the cap.
  HostFileOptions capped;
  capped.max_bytes = 1u << 20;
  capped.refuse_larger = true;
  std::ofstream(dir / "big") << std::string((1u << 20) + 1, 'x');
  r = read_host_file_as(dir / "big", capped);
  EXPECT_EQ(r.text, std::nullopt);
  EXPECT_EQ(r.refused, "is larger than 1 MiB, so it is not read");
  EXPECT_EQ(read_host_file_as(file, capped).text, std::optional<std::string>(slurp(file)));
  // Absent: nothing, and no reason.
  r = read_host_file_as(dir / "none", whole);
  EXPECT_EQ(r.text, std::nullopt);
  EXPECT_EQ(r.refused, "");
  EXPECT_EQ(read_host_file_as(file / "below", whole).refused, "");  // ENOTDIR
  // A FIFO is refused without waiting for a writer; a folder too.
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  r = read_host_file_as(dir / "fifo", whole);
  EXPECT_EQ(r.text, std::nullopt);
  EXPECT_EQ(r.refused, "is a FIFO, not a regular file, so it is not read");
  EXPECT_EQ(read_host_file(dir / "fifo"), std::nullopt);
  EXPECT_EQ(read_host_file_as(dir, whole).refused, "is a folder, not a regular file, so it is not read");
  // A link at the end: followed for a host file, refused for a path resolved inside a tree.
  fs::create_symlink(file, dir / "link");
  EXPECT_EQ(read_host_file_as(dir / "link", whole).text, std::optional<std::string>(slurp(file)));
  HostFileOptions resolved;
  resolved.follow_last_link = false;
  r = read_host_file_as(dir / "link", resolved);
  EXPECT_EQ(r.text, std::nullopt);
  EXPECT_EQ(r.refused, "is a symbolic link where a file was resolved, so it is not read");
  fs::remove_all(dir);
}

// ----- ELF ----------------------------------------------------------------------------------

TEST(ElfVersions, LibcDefinesTheVersionThisProcessRunsWith) {
  const auto info = read_elf_version_definitions(fs::canonical("/lib/x86_64-linux-gnu/libc.so.6"));
  ASSERT_TRUE(info.ok()) << info.error().to_string();
  EXPECT_EQ(info->machine, "x86_64");
  EXPECT_EQ(max_symbol_version(info->versions, "GLIBC_"), gnu_get_libc_version());
  // The base entry (the soname) is not a version; GLIBC_PRIVATE is not numeric.
  EXPECT_EQ(std::count(info->versions.begin(), info->versions.end(), "libc.so.6"), 0);
  EXPECT_NE(std::find(info->versions.begin(), info->versions.end(), "GLIBC_2.2.5"), info->versions.end());
}

TEST(ElfVersions, LibstdcxxMaximumAgreesWithAStringScanOfTheFile) {
  const fs::path lib = fs::canonical("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
  const auto info = read_elf_version_definitions(lib);
  ASSERT_TRUE(info.ok()) << info.error().to_string();
  // Independent oracle: the largest GLIBCXX_/CXXABI_ string anywhere in the file's bytes.
  const std::string bytes = slurp(lib);
  auto scan = [&](const std::string& prefix) {
    std::string best;
    const std::regex re(prefix + R"(([0-9]+(\.[0-9]+)+))");
    for (std::sregex_iterator it(bytes.begin(), bytes.end(), re), end; it != end; ++it) {
      if (best.empty() || compare_dotted((*it)[1].str(), best) > 0) best = (*it)[1].str();
    }
    return best;
  };
  EXPECT_EQ(max_symbol_version(info->versions, "GLIBCXX_"), scan("GLIBCXX_"));
  EXPECT_EQ(max_symbol_version(info->versions, "CXXABI_"), scan("CXXABI_"));
  EXPECT_GE(compare_dotted(max_symbol_version(info->versions, "GLIBCXX_"), "3.4.30"), 0) << "GCC 12's libstdc++";
}

TEST(ElfVersions, TruncatedAndNonElfFilesAreParseErrorsNamingTheFile) {
  const fs::path dir = fs::temp_directory_path() / ("envlock-elf-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string bytes = slurp(fs::canonical("/lib/x86_64-linux-gnu/libc.so.6"));
  std::ofstream(dir / "truncated.so", std::ios::binary) << bytes.substr(0, 4096);
  std::ofstream(dir / "script.so") << "/* GNU ld script */\nGROUP ( /lib/x86_64-linux-gnu/libc.so.6 )\n";
  const auto t = read_elf_version_definitions(dir / "truncated.so");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind, ErrorKind::Parse);
  EXPECT_NE(t.error().where.find("truncated.so"), std::string::npos);
  EXPECT_NE(t.error().message.find("past the end"), std::string::npos) << t.error().to_string();
  const auto s = read_elf_version_definitions(dir / "script.so");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("not an ELF file"), std::string::npos);
  const auto m = read_elf_version_definitions(dir / "missing.so");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, ErrorKind::Io);
  fs::remove_all(dir);
}

TEST(ElfVersions, DottedComparisonIsNumeric) {
  EXPECT_LT(compare_dotted("3.4.9", "3.4.30"), 0);
  EXPECT_LT(compare_dotted("2.17", "2.36"), 0);
  EXPECT_EQ(compare_dotted("2.36", "2.36.0"), 0);
  EXPECT_GT(compare_dotted("1.3.13", "1.3.2"), 0);
  EXPECT_EQ(max_symbol_version({"GLIBC_2.2.5", "GLIBC_PRIVATE", "GLIBC_2.17", "GLIBC_2.9"}, "GLIBC_"), "2.17");
  EXPECT_EQ(max_symbol_version({"CXXABI_1.3"}, "GLIBCXX_"), "");
}

// ----- os-release -----------------------------------------------------------------------------

TEST(OsRelease, QuotedEscapedAndCommentedValues) {
  const auto os = parse_os_release(
      "# comment\nNAME=\"Ubuntu\"\nVERSION_ID='22.04'\nID=ubuntu\nPRETTY_NAME=\"Ubuntu \\\"Jammy\\\" 22.04.4 LTS\"\n"
      "VERSION_CODENAME=jammy\n\n",
      "os-release");
  ASSERT_TRUE(os.ok()) << os.error().to_string();
  EXPECT_EQ(os->id, "ubuntu");
  EXPECT_EQ(os->version_id, "22.04");
  EXPECT_EQ(os->version_codename, "jammy");
  EXPECT_EQ(os->pretty_name, "Ubuntu \"Jammy\" 22.04.4 LTS");
}

TEST(OsRelease, ALineWithoutEqualsNamesFileAndLine) {
  const auto os = parse_os_release("ID=debian\nthis is not valid\n", "/etc/os-release");
  ASSERT_FALSE(os.ok());
  EXPECT_EQ(os.error().where, "/etc/os-release:2");
  EXPECT_EQ(os.error().kind, ErrorKind::Parse);
}

// ----- dpkg / rpm ----------------------------------------------------------------------------

TEST(Dpkg, RealUbuntuStatusFileEveryStanzaKept) {
  SKIP_WITHOUT_CORPUS();
  const fs::path f = corpus_dir() / "hostinfo/aquasecurity__trivy/pkg__fanal__analyzer__pkg__dpkg__testdata__dpkg";
  const auto pkgs = parse_dpkg_status(slurp(f), f.string());
  ASSERT_TRUE(pkgs.ok()) << pkgs.error().to_string();
  EXPECT_EQ(pkgs->size(), 91u);
  EXPECT_TRUE(std::is_sorted(pkgs->begin(), pkgs->end(), [](auto& a, auto& b) { return a.name < b.name; }));
  const auto fdisk = std::find_if(pkgs->begin(), pkgs->end(), [](auto& p) { return p.name == "fdisk"; });
  ASSERT_NE(fdisk, pkgs->end());
  EXPECT_EQ(fdisk->version, "2.31.1-0.4ubuntu3.1");
  EXPECT_EQ(fdisk->architecture, "amd64");
  EXPECT_EQ(fdisk->status, "install ok installed");
  EXPECT_EQ(std::count_if(pkgs->begin(), pkgs->end(), [](auto& p) { return p.status == "deinstall ok config-files"; }), 1);
}

TEST(Dpkg, EpochVersionsOfThirdPartyPackages) {
  SKIP_WITHOUT_CORPUS();
  const fs::path f = corpus_dir() / "hostinfo/aquasecurity__trivy/pkg__fanal__analyzer__pkg__dpkg__testdata__dpkg-third-party";
  const auto pkgs = parse_dpkg_status(slurp(f), f.string());
  ASSERT_TRUE(pkgs.ok()) << pkgs.error().to_string();
  ASSERT_EQ(pkgs->size(), 2u);
  EXPECT_EQ((*pkgs)[0].name, "apt");
  EXPECT_EQ((*pkgs)[1].name, "docker-ce");
  EXPECT_EQ((*pkgs)[1].version, "5:20.10.7~3-0~debian-buster");
}

TEST(Dpkg, OddStanzasAreErrorsNamingTheLine) {
  const auto no_package = parse_dpkg_status("Package: a\nVersion: 1\n\nStatus: install ok installed\nVersion: 2\n", "status");
  ASSERT_FALSE(no_package.ok());
  EXPECT_EQ(no_package.error().where, "status:4");
  EXPECT_EQ(no_package.error().message, "a stanza (lines 4-5): it has no Package field");
  const auto leading = parse_dpkg_status(" continuation first\nPackage: a\n", "status");
  ASSERT_FALSE(leading.ok());
  EXPECT_EQ(leading.error().where, "status:1");
  const auto no_colon = parse_dpkg_status("Package: a\nVersion 1\n", "status");
  ASSERT_FALSE(no_colon.ok());
  EXPECT_EQ(no_colon.error().where, "status:2");
  // CRLF line ends, comments and several blank lines between stanzas are fine.
  const auto crlf = parse_dpkg_status("Package: b\r\nVersion: 2\r\n\r\n\r\n# c\r\nPackage: a\r\nVersion: 1\r\n", "status");
  ASSERT_TRUE(crlf.ok()) << crlf.error().to_string();
  ASSERT_EQ(crlf->size(), 2u);
  EXPECT_EQ((*crlf)[0].name, "a");
  EXPECT_EQ((*crlf)[1].version, "2");
}

TEST(Dpkg, AFaultyStanzaInTheRealFileIsSkippedAndNamedTheRestKept) {
  SKIP_WITHOUT_CORPUS();
  const fs::path f = corpus_dir() / "hostinfo/aquasecurity__trivy/pkg__fanal__analyzer__pkg__dpkg__testdata__dpkg";
  // The real file's lines 1-27 are fdisk's stanza and a blank line. Injected after it: a stanza
  // with a field line without ':' (line 29) and one without Package (lines 32-33).
  const std::string real = slurp(f);
  const std::size_t cut = [&] {
    std::size_t at = 0;
    for (int i = 0; i < 27; ++i) at = real.find('\n', at) + 1;
    return at;
  }();
  const std::string text = real.substr(0, cut) +
                           "Package: broken-tool\nVersion 1.0-1\nArchitecture: amd64\n\n"
                           "Status: install ok installed\nVersion: 2.0\n\n" +
                           real.substr(cut);
  std::vector<CaptureProblem> warnings;
  const auto pkgs = parse_dpkg_status(text, "status", &warnings);
  ASSERT_TRUE(pkgs.ok()) << pkgs.error().to_string();
  EXPECT_EQ(pkgs->size(), 91u);  // every real stanza
  EXPECT_EQ(std::count_if(pkgs->begin(), pkgs->end(), [](auto& p) { return p.name == "broken-tool"; }), 0);
  const auto fdisk = std::find_if(pkgs->begin(), pkgs->end(), [](auto& p) { return p.name == "fdisk"; });
  ASSERT_NE(fdisk, pkgs->end());
  EXPECT_EQ(fdisk->version, "2.31.1-0.4ubuntu3.1");
  const auto pam = std::find_if(pkgs->begin(), pkgs->end(), [](auto& p) { return p.name == "libpam-runtime"; });
  ASSERT_NE(pam, pkgs->end());  // the stanza right after the injected ones
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0].where, "status:29");
  EXPECT_NE(warnings[0].message.find("broken-tool"), std::string::npos) << warnings[0].message;
  EXPECT_NE(warnings[0].message.find("lines 28-30"), std::string::npos) << warnings[0].message;
  EXPECT_NE(warnings[0].message.find("Field: value"), std::string::npos) << warnings[0].message;
  EXPECT_EQ(warnings[1].where, "status:32");
  // The stanza is named once, not twice ("a stanza (lines …) was skipped: a stanza (lines …) has …").
  EXPECT_EQ(warnings[1].message.find("a stanza (lines"), warnings[1].message.rfind("a stanza (lines")) << warnings[1].message;
  EXPECT_NE(warnings[1].message.find(") was skipped: it has no Package field"), std::string::npos) << warnings[1].message;
  // Without a warnings list the parser stays strict: the first faulty stanza is the error.
  const auto strict = parse_dpkg_status(text, "status");
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.error().where, "status:29");
}

TEST(Rpm, QueryOutputWithEpochs) {
  const auto pkgs = parse_rpm_query("glibc\t0:2.34-100.el9\tx86_64\nperl-libs\t4:5.32.1-480.el9\tx86_64\ngpg-pubkey\t0:fd431d51-4ae0493b\t(none)\n", "rpm");
  ASSERT_TRUE(pkgs.ok()) << pkgs.error().to_string();
  ASSERT_EQ(pkgs->size(), 3u);
  EXPECT_EQ((*pkgs)[0].name, "glibc");
  EXPECT_EQ((*pkgs)[0].version, "2.34-100.el9");
  EXPECT_EQ((*pkgs)[1].architecture, "");
  EXPECT_EQ((*pkgs)[2].version, "4:5.32.1-480.el9");
  const auto bad = parse_rpm_query("glibc-2.34-100.el9.x86_64\n", "rpm");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().where, "rpm:1");
}

// With a problem list, a malformed line costs that one package: the good lines are kept (as the
// dpkg reader keeps the good stanzas) and each bad line is named by file:line.
TEST(Rpm, MalformedLinesAreSkippedAndNamedOneByOne) {
  std::vector<CaptureProblem> problems;
  const auto pkgs = parse_rpm_query("glibc\t0:2.34-100.el9\tx86_64\nglibc-2.34-100.el9.x86_64\nbash\t0:5.1.8-6.el9\tx86_64\n\tno-name\tx\n",
                                    "/tmp/rpm-qa.txt", &problems);
  ASSERT_TRUE(pkgs.ok()) << pkgs.error().to_string();
  ASSERT_EQ(pkgs->size(), 2u);
  EXPECT_EQ((*pkgs)[0].name, "bash");
  EXPECT_EQ((*pkgs)[1].name, "glibc");
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].where, "/tmp/rpm-qa.txt:2");
  EXPECT_NE(problems[0].message.find("the line was skipped: expected NAME<tab>EPOCH:VERSION-RELEASE<tab>ARCH, got "
                                     "`glibc-2.34-100.el9.x86_64`"),
            std::string::npos)
      << problems[0].message;
  EXPECT_NE(problems[0].message.find("rpm -qa --queryformat"), std::string::npos) << problems[0].message;
  EXPECT_EQ(problems[1].where, "/tmp/rpm-qa.txt:4");

  // A file that is no rpm output at all: ten lines named, the rest counted from the first of them.
  problems.clear();
  std::string text;
  for (int i = 0; i < 14; ++i) text += "line " + std::to_string(i) + "\n";
  const auto none = parse_rpm_query(text, "/etc/hostname", &problems);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  ASSERT_EQ(problems.size(), 11u);
  EXPECT_EQ(problems[9].where, "/etc/hostname:10");
  EXPECT_EQ(problems[10].where, "/etc/hostname:11");
  EXPECT_NE(problems[10].message.find("4 more line(s) from here on were skipped"), std::string::npos) << problems[10].message;
  EXPECT_NE(problems[10].message.find("is it the right file?"), std::string::npos) << problems[10].message;
}

// ----- NVIDIA ----------------------------------------------------------------------------------

TEST(Nvidia, ProcVersionLines) {
  auto v = parse_nvidia_proc_version(
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\nGCC version:  gcc 12\n", "p");
  ASSERT_TRUE(v.ok()) << v.error().to_string();
  EXPECT_EQ(*v, "535.104.05");
  v = parse_nvidia_proc_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build  (dvs-builder@U16-I3-B03-4-3)\n", "p");
  ASSERT_TRUE(v.ok()) << v.error().to_string();
  EXPECT_EQ(*v, "550.54.14");
  v = parse_nvidia_proc_version("garbage\n", "/proc/driver/nvidia/version");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().where, "/proc/driver/nvidia/version");
}

TEST(Nvidia, ProcVersionWithAnUnboundedDigitRunIsAnErrorNotAStackOverflow) {
  // std::regex recursed once per digit and overflowed the stack (issue 22).
  auto v = parse_nvidia_proc_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + std::string(50000, '9') + ".1.1\n", "p");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().message, "no driver version in the `NVRM version:` line");
}

TEST(Nvidia, EveryRealNvidiaSmiLogParses) {
  SKIP_WITHOUT_CORPUS();
  int files = 0;
  for (const auto& dir : fs::directory_iterator(corpus_dir() / "gpu")) {
    for (const auto& f : fs::directory_iterator(dir.path())) {
      if (f.path().extension() != ".xml") continue;
      ++files;
      const auto nv = parse_nvidia_smi_xml(slurp(f.path()), f.path().filename().string(), false);
      ASSERT_TRUE(nv.ok()) << nv.error().to_string();
      EXPECT_FALSE(nv->gpus.empty()) << f.path();
      for (const auto& g : nv->gpus) {
        EXPECT_FALSE(g.name.empty()) << f.path();
        EXPECT_TRUE(g.uuid.empty()) << "UUIDs only with include_ids";
      }
    }
  }
  EXPECT_GE(files, 20);
}

TEST(Nvidia, A100AndDualGpuFacts) {
  SKIP_WITHOUT_CORPUS();
  const fs::path a100 = corpus_dir() / "gpu/influxdata__telegraf/plugins__inputs__nvidia_smi__testdata__a100-sxm4-v12.xml";
  auto nv = parse_nvidia_smi_xml(slurp(a100), "a100.xml", true);
  ASSERT_TRUE(nv.ok()) << nv.error().to_string();
  EXPECT_EQ(nv->driver_version, "535.54.03");
  EXPECT_EQ(nv->cuda_version, "12.2");
  ASSERT_EQ(nv->gpus.size(), 1u);
  EXPECT_EQ(nv->gpus[0].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(nv->gpus[0].uuid, "GPU-513536b6-7d19-9063-b049-1e69664bb298");
  EXPECT_EQ(nv->gpus[0].memory_mib, 81920u);
  const fs::path dual = corpus_dir() / "gpu/influxdata__telegraf/plugins__inputs__nvidia_smi__testdata__dual_a5000-v13.xml";
  nv = parse_nvidia_smi_xml(slurp(dual), "dual.xml", false);
  ASSERT_TRUE(nv.ok()) << nv.error().to_string();
  ASSERT_EQ(nv->gpus.size(), 2u);
  EXPECT_EQ(nv->gpus[1].name, "NVIDIA RTX A5000");
  EXPECT_EQ(nv->gpus[0].architecture, "Ampere");
  EXPECT_EQ(nv->cuda_version, "13.1");
}

TEST(Nvidia, MalformedXmlAndWrongRootAreClearErrors) {
  SKIP_WITHOUT_CORPUS();
  const std::string text = slurp(corpus_dir() / "gpu/influxdata__telegraf/plugins__inputs__nvidia_smi__testdata__tesla-t4.xml");
  const auto cut = parse_nvidia_smi_xml(text.substr(0, text.size() / 2), "t4.xml", false);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().kind, ErrorKind::Parse);
  EXPECT_TRUE(std::regex_search(cut.error().where, std::regex(R"(^t4\.xml:[0-9]+$)"))) << cut.error().where;
  const auto rocm = parse_nvidia_smi_xml("<?xml version=\"1.0\"?><rocm_smi/>", "x.xml", false);
  ASSERT_FALSE(rocm.ok());
  EXPECT_NE(rocm.error().message.find("<rocm_smi>"), std::string::npos) << rocm.error().message;
}

}  // namespace
}  // namespace envlock
