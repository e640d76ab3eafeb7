// PEP 440 versions and specifiers, PEP 508 requirements and markers, simple-API pages and wheel
// tags, each case as pypa/packaging 21.3 (pip 23.0's vendored copy) answers it.
#include <gtest/gtest.h>

#include "envlock/pypi_index.hpp"
#include "envlock/pypi_resolve.hpp"
#include "envlock/pypi_version.hpp"
#include "envlock/url.hpp"

namespace envlock {
namespace {

Pep440Version V(const char* s) { return Pep440Version::parse(s).value(); }
bool in(const char* spec, const char* v) { return Pep440SpecifierSet::parse(spec).value().contains(V(v)); }

TEST(Pep440, NormalisesAndOrdersAsPackaging) {
  EXPECT_EQ(V("1.0-ALPHA.1").to_string(), "1.0a1");
  EXPECT_EQ(V("v1.0-1").to_string(), "1.0.post1");
  EXPECT_EQ(V("1!2.0.DEV").to_string(), "1!2.0.dev0");
  EXPECT_EQ(V("2.4.1+CU121").to_string(), "2.4.1+cu121");
  EXPECT_EQ(V("1.0c1").to_string(), "1.0rc1");
  EXPECT_FALSE(Pep440Version::parse("1.0-foo").ok());
  const char* order[] = {"1.0.dev0", "1.0a1.dev1", "1.0a1", "1.0b2", "1.0rc1", "1.0", "1.0+abc", "1.0+5", "1.0.post1.dev0", "1.0.post1", "1.1", "1!0.1"};
  for (std::size_t i = 0; i + 1 < std::size(order); ++i) EXPECT_LT(V(order[i]), V(order[i + 1])) << order[i] << " < " << order[i + 1];
  EXPECT_EQ(V("1.0"), V("1.0.0"));
  for (const char* s : order) EXPECT_EQ(Pep440Version::parse(V(s).to_string()).value(), V(s)) << s;
}

TEST(Pep440, SpecifiersFollowPackagingsRules) {
  EXPECT_TRUE(in(">=1.0,<2", "1.5"));
  EXPECT_FALSE(in(">=1.0,<2", "2.0"));
  EXPECT_FALSE(in("<2", "2.0rc1"));      // a pre-release of the bound itself
  EXPECT_FALSE(in(">=1", "2.0rc1"));     // pre-releases only when a clause names one
  EXPECT_TRUE(in(">=2.0rc1", "2.0rc2"));
  EXPECT_FALSE(in(">1.0", "1.0.post1")); // a post-release of the bound
  EXPECT_FALSE(in(">1.0", "1.0+local"));
  EXPECT_TRUE(in("==2.4.1", "2.4.1+cu121"));
  EXPECT_FALSE(in("==2.4.1+cpu", "2.4.1+cu121"));
  EXPECT_TRUE(in("==1.*", "1.9.3"));
  EXPECT_TRUE(in("==1.0.*", "1.0"));
  EXPECT_FALSE(in("==1.1.*", "1.10"));
  EXPECT_TRUE(in("!=1.5.*", "1.6"));
  EXPECT_TRUE(in("~=1.4.2", "1.4.9"));
  EXPECT_FALSE(in("~=1.4.2", "1.5"));
  EXPECT_TRUE(in("~=1.4", "1.9"));
  EXPECT_TRUE(in("===1.0", "1.0"));
  EXPECT_FALSE(Pep440SpecifierSet::parse("~=1").ok());
  EXPECT_FALSE(Pep440SpecifierSet::parse(">=1.*").ok());
  // filter: an empty set admits pre-releases when there is nothing else.
  auto none = Pep440SpecifierSet::parse("").value();
  EXPECT_EQ(none.filter({V("2.0b1"), V("1.0")}).size(), 1u);
  EXPECT_EQ(none.filter({V("2.0b1")}).size(), 1u);
  EXPECT_EQ(Pep440SpecifierSet::parse(">=1").value().filter({V("2.0b1")}).size(), 0u);
}

TEST(Pep508, RequirementsAndMarkers) {
  auto r = Pep508Requirement::parse("Requests[Socks, security] (>=2.31,<3) ; python_version >= \"3.8\" and extra == 'Test'").value();
  EXPECT_EQ(r.name, "Requests");
  EXPECT_EQ(r.extras, (std::vector<std::string>{"security", "socks"}));
  EXPECT_EQ(r.to_string(), "Requests[security,socks]<3,>=2.31; python_version >= \"3.8\" and extra == 'Test'");
  MarkerEnvironment env{{"python_version", "3.11"}, {"python_full_version", "3.11.2"}, {"sys_platform", "linux"},
                        {"platform_machine", "x86_64"}, {"os_name", "posix"}};
  EXPECT_FALSE(r.applies(env, ""));
  EXPECT_TRUE(r.applies(env, "test"));
  auto m = [&](const char* text) { return Marker::parse(text).value().evaluate(env); };
  EXPECT_TRUE(m("python_version < '3.12'"));
  EXPECT_FALSE(m("python_version < '3.9'"));
  EXPECT_TRUE(m("python_version > '3.9'"));          // version order, not text order
  EXPECT_TRUE(m("'linux' in sys_platform"));
  EXPECT_TRUE(m("sys.platform == 'linux'"));        // packaging 21.3's legacy name
  EXPECT_FALSE(m("platform_machine == 'arm64' or (os_name == 'nt' and python_version >= '3')"));
  EXPECT_TRUE(m("python_full_version >= '3.11.1' and platform_machine != 'aarch64'"));
  EXPECT_FALSE(Marker::parse("python_version <").ok());
  auto bad = Pep508Requirement::parse("-e .");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::Parse);
  auto direct = Pep508Requirement::parse("pkg @ https://h/pkg-1.0-py3-none-any.whl ; os_name == 'posix'").value();
  EXPECT_EQ(direct.url, "https://h/pkg-1.0-py3-none-any.whl");
  EXPECT_TRUE(direct.applies(env));
  // An extra's name is a PEP 508 identifier, a letter or digit at both ends, as packaging 23
  // (Debian's pip, vendored) reads it: `1[_]`, `x[a_]`, `x[_a]`, `x[a.]` are InvalidRequirement
  // there; `_` alone normalised to `-` printed an extra nothing reads back (fuzz_pypi_requirement).
  for (const char* text : {"1[_]", "x[a_]", "x[_a]", "x[a.]"}) EXPECT_FALSE(Pep508Requirement::parse(text).ok()) << text;
  EXPECT_EQ(Pep508Requirement::parse("x[a-b]").value().to_string(), "x[a-b]");
}

TEST(SimpleApi, HtmlAndJsonPages) {
  const std::string html =
      "<html><body><a href=\"../../files/demo-1.0-py3-none-any.whl#sha256=" + std::string(64, 'a') +
      "\" data-requires-python=\"&gt;=3.8\" data-core-metadata=\"sha256=" + std::string(64, 'b') +
      "\">demo-1.0-py3-none-any.whl</a>\n<a href='https://other/demo-0.9.tar.gz' data-yanked=''>x</a></body></html>";
  auto files = parse_simple_html(html, "http://127.0.0.1:9/simple/demo/");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].url, "http://127.0.0.1:9/files/demo-1.0-py3-none-any.whl");
  EXPECT_EQ(files[0].filename, "demo-1.0-py3-none-any.whl");
  EXPECT_EQ(files[0].sha256, std::string(64, 'a'));
  EXPECT_EQ(files[0].requires_python, ">=3.8");
  EXPECT_TRUE(files[0].has_metadata);
  EXPECT_EQ(files[0].metadata_sha256, std::string(64, 'b'));
  EXPECT_TRUE(files[1].yanked);
  auto json = parse_simple_json(R"({"meta": {"api-version": "1.1"}, "name": "demo", "files": [
      {"filename": "demo-1.0-py3-none-any.whl", "url": "/f/demo-1.0-py3-none-any.whl", "hashes": {"sha256": ")" +
                                    std::string(64, 'c') + R"("}, "requires-python": ">=3.8", "core-metadata": true, "size": 12}]})",
                                "https://u:p@host/simple/demo/");
  ASSERT_TRUE(json.ok()) << json.error().to_string();
  ASSERT_EQ(json->size(), 1u);
  EXPECT_EQ((*json)[0].url, "https://u:p@host/f/demo-1.0-py3-none-any.whl");
  EXPECT_EQ((*json)[0].size, 12u);
  EXPECT_TRUE((*json)[0].has_metadata);
  // A <base href> that resolves to no hierarchical URL cannot resolve a relative link: the
  // page's URL stays the base, and every listed URL is absolute (fuzz_pypi_index).
  auto odd_base = parse_simple_html("<base href=\"https:!/x\"><a href=\"demo-1.0.tar.gz\">d</a>", "https://h/simple/demo/");
  ASSERT_EQ(odd_base.size(), 1u);
  EXPECT_EQ(odd_base[0].url, "https://h/simple/demo/demo-1.0.tar.gz");
  // A scheme starts with a letter (RFC 3986 3.1): `.x:1/demo-1.0.tar.gz` is a relative path.
  EXPECT_EQ(resolve_url("https://h/simple/demo/", ".x:1/demo-1.0.tar.gz"), "https://h/simple/demo/.x:1/demo-1.0.tar.gz");
  EXPECT_EQ(resolve_url("https://h/simple/demo/", "x+y:demo"), "x+y:demo");
  auto v2 = parse_simple_json(R"({"meta": {"api-version": "2.0"}, "files": []})", "https://u:secret@host/simple/demo/");
  ASSERT_FALSE(v2.ok());
  EXPECT_EQ(v2.error().to_string().find("secret"), std::string::npos) << v2.error().to_string();
}

TEST(WheelTags, CondaPythonOnLinuxAsPackagingOrdersThem) {
  auto t = PypiTarget::for_conda("3.11.2", "h2755cc3_0_cpython", "linux-64", {{"__glibc", "2.28", "0"}}).value();
  ASSERT_GE(t.platforms.size(), 3u);
  EXPECT_EQ(t.platforms.front(), "manylinux_2_28_x86_64");
  EXPECT_EQ(t.platforms.back(), "linux_x86_64");
  EXPECT_EQ(t.tags.front(), "cp311-cp311-manylinux_2_28_x86_64");
  EXPECT_EQ(t.tags.back(), "py30-none-any");
  EXPECT_LT(*t.tag_priority("cp311", "cp311", "manylinux2014_x86_64"), *t.tag_priority("cp311", "abi3", "manylinux_2_28_x86_64"));
  EXPECT_TRUE(t.tag_priority("cp37", "abi3", "manylinux_2_17_x86_64").has_value());
  EXPECT_FALSE(t.tag_priority("cp312", "cp312", "manylinux_2_17_x86_64").has_value());
  EXPECT_FALSE(t.tag_priority("cp311", "cp311", "manylinux_2_31_x86_64").has_value());
  EXPECT_TRUE(t.tag_priority("py2.py3", "none", "any").has_value());
  EXPECT_EQ(t.markers.at("sys_platform"), "linux");
  EXPECT_EQ(t.markers.at("python_version"), "3.11");
  auto mac = PypiTarget::for_conda("3.12.1", "h0_cpython", "osx-arm64", {{"__osx", "13.0", "0"}}).value();
  EXPECT_EQ(mac.platforms.front(), "macosx_13_0_arm64");
  EXPECT_EQ(mac.markers.at("platform_machine"), "arm64");
  EXPECT_FALSE(PypiTarget::for_conda("3.11.2", "h0", "noarch", {}).ok());
}

TEST(CondaMapping, PythonPackagesByNameWithKnownRenames) {
  PackageRecord torch;
  torch.name = "pytorch";
  torch.version = Version::parse("2.4.1").value();
  torch.depends = {"python >=3.11,<3.12.0a0"};
  EXPECT_EQ(conda_pypi_provides(torch)->name, "torch");
  PackageRecord zlib;
  zlib.name = "zlib";
  EXPECT_FALSE(conda_pypi_provides(zlib).has_value());
  PackageRecord python;
  python.name = "python";
  python.depends = {"python_abi 3.11.* *_cp311"};
  EXPECT_FALSE(conda_pypi_provides(python).has_value());
}

}  // namespace
}  // namespace envlock
