// The resolver's answers against pip's (issue 20 point 2): one local index served on 127.0.0.1
// (PEP 503 HTML pages written here) holds Debian's real wheels (/usr/share/python-wheels) and
// generated ones for markers, extras, platform tags, pre-releases, a backtrack and an sdist-only
// project; each requirement set is resolved by resolve_pypi() and by Debian's pip 23
// (`/usr/bin/python3 -m pip install --dry-run --ignore-installed --report`, with the target's
// --python-version/--platform/--implementation/--abi and --only-binary=:all:), and the sets of
// (name, version) must be equal. pip evaluates markers for the interpreter it runs under, so the
// target is that interpreter's python (3.11 on linux-64 here): docs/pypi.md says where they differ.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "envlock/hash.hpp"
#include "envlock/pypi_index.hpp"
#include "envlock/pypi_name.hpp"
#include "envlock/pypi_resolve.hpp"
#include "support/files.hpp"
#include "support/http_server.hpp"
#include "support/run_command.hpp"
#include "wheel/zip_writer.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using Pins = std::set<std::pair<std::string, std::string>>;
using testing::run_command;

void wheel(const fs::path& files, const std::string& dist, const std::string& version, const std::string& tag,
           const std::vector<std::string>& requires_dist, const std::vector<std::string>& extras = {}) {
  std::string meta = "Metadata-Version: 2.1\nName: " + dist + "\nVersion: " + version + "\n";
  for (const auto& e : extras) meta += "Provides-Extra: " + e + "\n";
  for (const auto& r : requires_dist) meta += "Requires-Dist: " + r + "\n";
  const std::string di = dist + "-" + version + ".dist-info";
  testing::write_zip(files / (dist + "-" + version + "-" + tag + ".whl"),
                     {{dist + "/__init__.py", ""}, {di + "/METADATA", meta},
                      {di + "/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: " + tag + "\n"},
                      {di + "/RECORD", ""}});
}

class PipAgreement : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists("/usr/bin/python3") || run_command("/usr/bin/python3 -m pip --version").exit_code != 0)
      GTEST_SKIP() << "Debian's python3-pip is not installed (scripts/setup installs it)";
    root_ = fs::temp_directory_path() / ("envlock-pypi-agree-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    const fs::path files = root_ / "files";
    fs::create_directories(files);
    wheel(files, "alpha", "1.0", "py3-none-any", {});
    wheel(files, "alpha", "2.0", "py3-none-any",
          {"beta>=1.1", "gamma; python_version < '3.8'", "delta[fast]; sys_platform == 'linux'"});
    for (const char* v : {"1.0", "1.1", "1.2rc1"}) wheel(files, "beta", v, "py3-none-any", {});
    wheel(files, "gamma", "1.0", "py3-none-any", {});
    wheel(files, "delta", "1.0", "py2.py3-none-any", {"epsilon>=2; extra == 'fast'", "beta<2"}, {"fast"});
    wheel(files, "epsilon", "1.0", "py3-none-any", {});
    wheel(files, "epsilon", "2.0", "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64", {});
    wheel(files, "epsilon", "3.0", "cp312-cp312-manylinux_2_17_x86_64", {});
    wheel(files, "epsilon", "4.0", "cp311-cp311-macosx_11_0_arm64", {});
    wheel(files, "zeta", "1.0", "py3-none-any", {});
    wheel(files, "zeta", "2.0", "py3-none-any", {"eta<2"});
    wheel(files, "eta", "1.0", "py3-none-any", {});
    wheel(files, "eta", "2.0", "py3-none-any", {});
    testing::spit(files / "sdonly-1.0.tar.gz", "not really an sdist");
    for (const auto& e : fs::directory_iterator("/usr/share/python-wheels"))
      if (e.path().extension() == ".whl") fs::copy_file(e.path(), files / e.path().filename());
    // PEP 503 pages: /simple/<project>/index.html, each href with #sha256=.
    std::map<std::string, std::string> pages;
    for (const auto& e : fs::directory_iterator(files)) {
      const std::string f = e.path().filename().string();
      const std::string project = pep503_normalize(f.substr(0, f.find('-')));
      pages[project] += "<a href=\"../../files/" + f + "#sha256=" + hash_file(e.path(), HashAlgorithm::Sha256).value() +
                        "\">" + f + "</a><br/>\n";
    }
    for (const auto& [project, body] : pages) {
      fs::create_directories(root_ / "simple" / project);
      testing::spit(root_ / "simple" / project / "index.html", "<!DOCTYPE html><html><body>\n" + body + "</body></html>\n");
    }
    server_ = std::make_unique<testing::HttpServer>(root_);
    ASSERT_TRUE(server_->ok()) << server_->error();
    target_ = PypiTarget::for_conda("3.11.2", "h0_cpython", "linux-64", {{"__glibc", "2.28", "0"}}).value();
  }
  void TearDown() override {
    server_.reset();
    if (!root_.empty()) fs::remove_all(root_);
  }

  Result<Pins> ours(const std::vector<std::string>& reqs) {
    PypiIndexOptions o;
    o.cache_dir = root_ / "cache";
    PypiIndex index({{server_->url("/simple")}, {}}, o);
    PypiResolveInput in;
    in.target = target_;
    for (const auto& r : reqs) in.requests.push_back({Pep508Requirement::parse(r).value(), r, "test"});
    auto res = resolve_pypi(in, index);
    if (!res) return res.error();
    Pins out;
    for (const auto& p : res->pins) out.insert({p.name, p.version});
    return out;
  }
  /// pip's answer; nullopt when pip fails (it then prints why).
  std::optional<Pins> pips(const std::vector<std::string>& reqs) {
    std::string cmd = "PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1 /usr/bin/python3 -m pip install --dry-run "
                      "--ignore-installed --quiet --no-cache-dir --target " + testing::q(root_ / "target") + " --report " + testing::q(root_ / "report.json") +
                      " --python-version 3.11.2 --implementation cp --abi cp311 --only-binary=:all: --index-url " +
                      server_->url("/simple");
    for (const auto& p : target_.platforms) cmd += " --platform " + p;
    for (const auto& r : reqs) cmd += " " + ("'" + r + "'");
    auto r = run_command(cmd + " 2>&1");
    pip_output_ = r.out + r.err + " [" + cmd + "]";
    if (r.exit_code != 0) return std::nullopt;
    auto j = nlohmann::json::parse(testing::slurp(root_ / "report.json"));
    Pins out;
    for (const auto& i : j["install"]) out.insert({pep503_normalize(i["metadata"]["name"].get<std::string>()), i["metadata"]["version"].get<std::string>()});
    return out;
  }

  std::string pip_output_;
  fs::path root_;
  std::unique_ptr<testing::HttpServer> server_;
  PypiTarget target_;
};

TEST_F(PipAgreement, SameAnswersAsPipOnEveryRequirementSet) {
  const std::vector<std::vector<std::string>> sets = {
      {"alpha"},                                       // markers, an extra, platform tags, a pre-release left out
      {"alpha==1.0", "pip", "setuptools<70", "wheel"},  // Debian's real wheels
      {"zeta", "eta>=2"},                              // a backtrack: zeta 2.0 wants eta<2
      {"beta>=1.2rc1"},                                // a pre-release named, so admitted
      {"epsilon"},                                     // the best tag for cp311 on manylinux
      {"delta[fast]", "beta"},
  };
  for (const auto& reqs : sets) {
    std::string label;
    for (const auto& r : reqs) label += r + " ";
    auto pip = pips(reqs);
    ASSERT_TRUE(pip.has_value()) << label << ": pip failed: " << pip_output_;
    auto mine = ours(reqs);
    ASSERT_TRUE(mine.ok()) << label << ": " << mine.error().to_string();
    EXPECT_EQ(*mine, *pip) << label;
  }
  // Only an sdist: pip (--only-binary=:all:) fails, and envlock names it.
  EXPECT_FALSE(pips({"sdonly"}).has_value());
  auto sd = ours({"sdonly"});
  ASSERT_FALSE(sd.ok());
  EXPECT_EQ(sd.error().to_string(),
            "sdonly: sdonly has only sdists (sdonly-1.0.tar.gz): envlock installs wheels only\n"
            "  sdonly  (required by the manifest)\n"
            "hint: envlock installs wheels only (as pip --only-binary=:all:): pin a version that has a wheel, or build one "
            "into a find-links folder");
}

// The index URL policy applies to every file URL a page lists (attack 23, F5), as pip ignores a
// link to a host that is neither secure nor trusted ("is not a trusted or secure host and is
// being ignored"): a page served from 127.0.0.1 keeps its https links, its own host's and
// localhost's http links, and drops plain http to another host, file:// and other schemes; a page
// that is itself a file keeps its file:// links.
TEST(PypiIndexLinks, ThePolicyOfIndexUrlsAppliesToEveryLinkAPageLists) {
  const fs::path root = fs::temp_directory_path() / ("envlock-pypi-links-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const std::string sha = "#sha256=" + std::string(64, 'a');
  auto link = [&](const std::string& href) { return "<a href=\"" + href + sha + "\">x</a>\n"; };
  testing::spit(root / "simple/okpkg/index.html",
                link("http://192.0.2.2:18790/files/okpkg-1.0-py3-none-any.whl") +
                    link("file:///srv/wheels/okpkg-2.0-py3-none-any.whl") + link("ftp://files.example/okpkg-3.0-py3-none-any.whl") +
                    link("https://files.example/okpkg-4.0-py3-none-any.whl") + link("../../files/okpkg-5.0-py3-none-any.whl") +
                    link("http://localhost:1/okpkg-6.0-py3-none-any.whl") +
                    link("http://localhost@192.0.2.2/okpkg-7.0-py3-none-any.whl"));
  testing::spit(root / "links.html", link("file:///srv/wheels/okpkg-8.0-py3-none-any.whl") +
                                         link("http://192.0.2.2/okpkg-9.0-py3-none-any.whl"));
  testing::HttpServer server(root);
  ASSERT_TRUE(server.ok()) << server.error();
  PypiIndexOptions o;
  o.cache_dir = root / "cache";
  PypiIndex index({{server.url("/simple")}, {"file://" + (root / "links.html").string()}}, o);
  auto files = index.files("okpkg");
  ASSERT_TRUE(files.ok()) << files.error().to_string();
  std::string listed;
  for (const auto& f : *files) listed += f.filename + "\n";
  EXPECT_EQ(listed,
            "okpkg-4.0-py3-none-any.whl\nokpkg-5.0-py3-none-any.whl\nokpkg-6.0-py3-none-any.whl\n"
            "okpkg-8.0-py3-none-any.whl\n");
  fs::remove_all(root);
}

}  // namespace
}  // namespace envlock
