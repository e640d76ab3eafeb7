// StringMatcher, BuildNumberSpec and MatchSpec: the spellings conda accepts, matching against
// records, canonical strings and errors.
#include <gtest/gtest.h>

#include "envlock/match_spec.hpp"
#include "envlock/package_record.hpp"

namespace envlock {
namespace {

MatchSpec S(const std::string& s) {
  auto m = MatchSpec::parse(s);
  EXPECT_TRUE(m) << s << ": " << (m ? "" : m.error().to_string());
  return m ? *m : MatchSpec{};
}

RepoDataRecord R(const char* name, const char* version, const char* build, std::uint64_t build_number = 0) {
  RepoDataRecord r;
  r.name = name;
  r.version = *Version::parse(version);
  r.build = build;
  r.build_number = build_number;
  r.subdir = "linux-64";
  r.channel = "https://conda.anaconda.org/conda-forge";
  r.file_name = std::string(name) + "-" + version + "-" + build + ".conda";
  r.url = r.channel + "/linux-64/" + r.file_name;
  return r;
}

TEST(StringMatcher, ExactGlobRegex) {
  auto exact = *StringMatcher::parse("py312h1234_0");
  EXPECT_TRUE(exact.is_exact());
  EXPECT_TRUE(exact.matches("py312h1234_0"));
  EXPECT_FALSE(exact.matches("py312h1234_01"));
  auto glob = *StringMatcher::parse("py312*_0");
  EXPECT_FALSE(glob.is_exact());
  EXPECT_TRUE(glob.matches("py312habc_0"));
  EXPECT_TRUE(glob.matches("py312_0"));
  EXPECT_FALSE(glob.matches("py311habc_0"));
  EXPECT_FALSE(glob.matches("py312habc_1"));
  auto regex = *StringMatcher::parse("^py3[0-9]+_.*$");
  EXPECT_TRUE(regex.matches("py310_cuda"));
  EXPECT_FALSE(regex.matches("py2_cuda"));
  EXPECT_TRUE(StringMatcher().is_any());
  EXPECT_FALSE(StringMatcher::parse(""));
  EXPECT_FALSE(StringMatcher::parse("^py3[$"));
  EXPECT_FALSE(StringMatcher::parse("py3$"));
}

TEST(BuildNumberSpec, Operators) {
  EXPECT_TRUE(BuildNumberSpec::parse("5")->matches(5));
  EXPECT_FALSE(BuildNumberSpec::parse("5")->matches(6));
  EXPECT_TRUE(BuildNumberSpec::parse(">=5")->matches(7));
  EXPECT_FALSE(BuildNumberSpec::parse(">=5")->matches(4));
  EXPECT_TRUE(BuildNumberSpec::parse("<5")->matches(4));
  EXPECT_TRUE(BuildNumberSpec::parse("!=5")->matches(4));
  EXPECT_FALSE(BuildNumberSpec::parse("!=5")->matches(5));
  EXPECT_TRUE(BuildNumberSpec::parse("*")->matches(0));
  EXPECT_EQ(BuildNumberSpec::parse("5")->to_string(), "5");
  EXPECT_EQ(BuildNumberSpec::parse("=5")->to_string(), "==5");
  EXPECT_EQ(BuildNumberSpec::parse(">= 5")->to_string(), ">=5");
  auto bad = BuildNumberSpec::parse(">=x");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("at character 3"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(BuildNumberSpec::parse("-1"));
  EXPECT_FALSE(BuildNumberSpec::parse(""));
}

TEST(MatchSpec, Spellings) {
  MatchSpec a = S("numpy");
  EXPECT_EQ(a.exact_name(), "numpy");
  EXPECT_FALSE(a.version);

  MatchSpec b = S("numpy >=1.26,<2 py312*");
  EXPECT_EQ(b.version->to_string(), ">=1.26,<2");
  EXPECT_EQ(b.build->to_string(), "py312*");

  MatchSpec c = S("numpy=1.26=py312h_0");
  EXPECT_EQ(c.version->to_string(), "==1.26");  // `=1.26` with a build is exact, as in conda
  EXPECT_EQ(c.build->to_string(), "py312h_0");

  EXPECT_EQ(S("numpy=1.26").version->to_string(), "1.26.*");
  EXPECT_EQ(S("numpy==1.26.4").version->to_string(), "==1.26.4");
  EXPECT_EQ(S("numpy 1.26.*").version->to_string(), "1.26.*");
  EXPECT_EQ(S("numpy 1.26.4 py312h_0").build->to_string(), "py312h_0");
  EXPECT_EQ(S("numpy >=1.0 , < 2.0 py34_0").version->to_string(), ">=1.0,<2.0");
  EXPECT_EQ(S("blas * openblas").version->to_string(), "*");
  EXPECT_EQ(S("NumPy").exact_name(), "numpy");

  MatchSpec d = S("conda-forge::numpy");
  EXPECT_EQ(*d.channel, "conda-forge");
  EXPECT_FALSE(d.subdir);
  MatchSpec e = S("conda-forge/linux-64::numpy >=1");
  EXPECT_EQ(*e.channel, "conda-forge");
  EXPECT_EQ(*e.subdir, "linux-64");
  MatchSpec f = S("https://conda.anaconda.org/conda-forge::numpy");
  EXPECT_EQ(*f.channel, "https://conda.anaconda.org/conda-forge");

  MatchSpec g = S("numpy[version='>=1.26', build=py312*, build_number='>=2', md5=ABC, subdir=linux-64, "
                  "channel=conda-forge, license=BSD*, track_features='b a', fn=x.conda, url=https://x/y.conda]");
  EXPECT_EQ(g.version->to_string(), ">=1.26");
  EXPECT_EQ(g.build->to_string(), "py312*");
  EXPECT_EQ(g.build_number->to_string(), ">=2");
  EXPECT_EQ(*g.md5, "abc");
  EXPECT_EQ(*g.subdir, "linux-64");
  EXPECT_EQ(*g.channel, "conda-forge");
  EXPECT_EQ(*g.license, "BSD*");
  EXPECT_EQ(g.track_features, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(*g.file_name, "x.conda");
  EXPECT_EQ(*g.url, "https://x/y.conda");

  // Brackets win over positional values.
  EXPECT_EQ(S("numpy 1.0 [version='2.0']").version->to_string(), "==2.0");
  EXPECT_TRUE(S("numpy[optional]").optional);
  EXPECT_EQ(S("ray[default,data] >=2.9.0,<3.0.0").extras, (std::vector<std::string>{"data", "default"}));
  EXPECT_EQ(S("mkl@").track_features, (std::vector<std::string>{"mkl"}));
  EXPECT_EQ(S("numpy 1.2 # a comment").version->to_string(), "==1.2");
}

TEST(MatchSpec, PackageUrl) {
  const std::string sha(64, 'a');
  MatchSpec u = S("https://conda.anaconda.org/conda-forge/linux-64/numpy-1.26.4-py312h_0.conda#" + sha);
  EXPECT_EQ(*u.channel, "https://conda.anaconda.org/conda-forge");
  EXPECT_EQ(*u.subdir, "linux-64");
  EXPECT_EQ(u.exact_name(), "numpy");
  EXPECT_EQ(u.version->to_string(), "==1.26.4");
  EXPECT_EQ(u.build->to_string(), "py312h_0");
  EXPECT_EQ(*u.file_name, "numpy-1.26.4-py312h_0.conda");
  EXPECT_EQ(*u.sha256, sha);
  EXPECT_EQ(u.to_string(), "https://conda.anaconda.org/conda-forge/linux-64/numpy-1.26.4-py312h_0.conda#" + sha);
  MatchSpec p = S("/tmp/pkgs/foo-1.0-0.tar.bz2");
  EXPECT_EQ(*p.url, "file:///tmp/pkgs/foo-1.0-0.tar.bz2");
  EXPECT_TRUE(p.name.is_any());  // no subdir in the path: conda matches by file name only
  EXPECT_FALSE(MatchSpec::parse("https://x/linux-64/numpy.conda"));
  // A path's folder is percent-encoded in the URL and channel (file_url_from_path), as a local
  // channel's records spell theirs; the file name is joined as written.
  MatchSpec odd = S("/srv/caf\xc3\xa9%/linux-64/foo-1.0+cpu-0.conda");
  EXPECT_EQ(*odd.url, "file:///srv/caf%C3%A9%25/linux-64/foo-1.0+cpu-0.conda");
  EXPECT_EQ(*odd.channel, "file:///srv/caf%C3%A9%25");
  EXPECT_EQ(*odd.file_name, "foo-1.0+cpu-0.conda");
  EXPECT_EQ(odd.version->to_string(), "==1.0+cpu");
}

TEST(MatchSpec, CanonicalStringRoundTrips) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"numpy", "numpy"},
      {"numpy >=1.26,<2 py312*", "numpy >=1.26,<2 py312*"},
      {"numpy=1.26=py312h_0", "numpy ==1.26 py312h_0"},
      {"numpy=1.26", "numpy 1.26.*"},
      {"numpy[build=py312*]", "numpy[build=py312*]"},
      {"conda-forge/linux-64::numpy[build_number='>=2']", "conda-forge/linux-64::numpy[build_number='>=2']"},
      {"*/linux-64::numpy", "numpy[subdir=linux-64]"},
      {"numpy[version='^1\\.2.*$']", "numpy[version='^1\\.2.*$']"},
      {"numpy[track_features='b a']", "numpy[track_features='a b']"},
      {"numpy 1.2[optional]", "numpy ==1.2[optional]"},
      {"python 2.7*|3.5*", "python 2.7.*|3.5.*"},
      {"pytorch 1.*.*", "pytorch 1.*.*"},
  };
  for (const auto& [in, canonical] : cases) {
    MatchSpec m = S(in);
    EXPECT_EQ(m.to_string(), canonical) << in;
    EXPECT_EQ(S(m.to_string()), m) << in << " -> " << m.to_string();
  }
}

TEST(MatchSpec, MatchesRecords) {
  RepoDataRecord r = R("numpy", "1.26.4", "py312h1234567_0", 0);
  r.track_features = {"mkl"};
  r.license = "BSD-3-Clause";
  r.md5 = "0123456789abcdef0123456789abcdef";
  EXPECT_TRUE(S("numpy").matches(r));
  EXPECT_TRUE(S("NUMPY").matches(r));
  EXPECT_FALSE(S("scipy").matches(r));
  EXPECT_TRUE(S("numpy >=1.26,<2").matches(r));
  EXPECT_FALSE(S("numpy <1.26").matches(r));
  EXPECT_TRUE(S("numpy 1.26.* py312*").matches(r));
  EXPECT_FALSE(S("numpy 1.26.* py311*").matches(r));
  EXPECT_TRUE(S("numpy=1.26").matches(r));
  EXPECT_FALSE(S("numpy=1.26=py311_0").matches(r));
  EXPECT_TRUE(S("conda-forge::numpy").matches(r));
  EXPECT_TRUE(S("conda-forge/linux-64::numpy").matches(r));
  EXPECT_FALSE(S("conda-forge/osx-64::numpy").matches(r));
  EXPECT_FALSE(S("bioconda::numpy").matches(r));
  EXPECT_TRUE(S("https://conda.anaconda.org/conda-forge::numpy").matches(r));
  EXPECT_TRUE(S("numpy[build_number='>=0']").matches(r));
  EXPECT_FALSE(S("numpy[build_number='>=1']").matches(r));
  EXPECT_TRUE(S("numpy[license=bsd*]").matches(r));
  EXPECT_TRUE(S("numpy[md5=0123456789ABCDEF0123456789ABCDEF]").matches(r));
  EXPECT_FALSE(S("numpy[sha256=" + std::string(64, 'b') + "]").matches(r));
  EXPECT_TRUE(S("numpy[track_features=mkl]").matches(r));
  EXPECT_FALSE(S("numpy[track_features='mkl blas']").matches(r));
  EXPECT_TRUE(S("num*").matches(r));
  EXPECT_TRUE(S("*[md5=0123456789abcdef0123456789abcdef]").matches(r));
  EXPECT_TRUE(S(r.url).matches(r));
  EXPECT_FALSE(S("https://conda.anaconda.org/conda-forge/linux-64/numpy-1.26.4-py312h1234567_1.conda").matches(r));
  // The package-only overload cannot check where a record came from.
  EXPECT_TRUE(S("bioconda::numpy").matches(static_cast<const PackageRecord&>(r)));
}

TEST(MatchSpec, ErrorsNameInputPositionAndRule) {
  struct Bad {
    const char* text;
    std::size_t column;
    const char* rule;
  };
  for (const Bad& b : std::vector<Bad>{{"", 1, "empty match spec"},
                                      {"numpy[version=1.2", 18, "unbalanced '['"},
                                      {"numpy[version=1.2][build=0]", 19, "multiple bracket sections"},
                                      {"numpy[colour=red]", 7, "unknown bracket key 'colour'"},
                                      {"numpy[version=]", 15, "empty value for bracket key 'version'"},
                                      {"numpy[version='1.2]", 20, "unbalanced '['"},
                                      {"numpy >=1..2", 7, "empty version component"},
                                      {">=1.2", 1, "no package name found"},
                                      {"conda-forge::", 14, "must be followed by a package name"},
                                      {"python:3.8", 7, "a single ':' is not valid"},
                                      {"num$py", 4, "invalid character '$' in package name"},
                                      {"numpy[build_number=x]", 1, "bad build_number"},
                                      {"package[when=\"side-dependency=0.2\"]", 9, "unknown bracket key 'when'"}}) {
    auto m = MatchSpec::parse(b.text);
    ASSERT_FALSE(m) << b.text;
    EXPECT_EQ(m.error().kind, ErrorKind::Parse);
    const std::string msg = m.error().message;
    EXPECT_NE(msg.find(std::string("'") + b.text + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("at character " + std::to_string(b.column)), std::string::npos) << msg;
    EXPECT_NE(msg.find(b.rule), std::string::npos) << msg;
    EXPECT_FALSE(m.error().hint.empty()) << b.text;
  }
}

}  // namespace
}  // namespace envlock
