// Every environment file of ../shared/corpus/envyml (real projects' environment.yml and
// conda-lock inputs) loads, or is refused with a reason at file:line:col.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>

#include "envlock/manifest.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;

fs::path corpus() { return fs::path(ENVLOCK_SHARED_DIR) / "corpus" / "envyml"; }

std::vector<fs::path> files() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(corpus()))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(CorpusEnvYml, EveryFileLoadsOrIsRefusedPrecisely) {
  if (!fs::is_directory(corpus())) GTEST_SKIP() << "corpus not found at " << corpus() << "; set ENVLOCK_SHARED_DIR to the folder holding corpus/";
  const std::regex place(R"(^.+:[0-9]+:[0-9]+$)");
  std::size_t loaded = 0, refused = 0, with_pip = 0, specs = 0;
  for (const auto& f : files()) {
    auto m = load_manifest(f);
    if (!m) {
      ++refused;
      const Error& e = m.error();
      EXPECT_EQ(e.kind, ErrorKind::Parse) << f;
      EXPECT_TRUE(std::regex_match(e.where, place)) << f << ": " << e.to_string();
      EXPECT_TRUE(e.where.starts_with(f.string())) << e.where;
      EXPECT_FALSE(e.message.empty());
      EXPECT_FALSE(e.detail.empty()) << "no offending line shown for " << f;
      std::cout << "[refused] " << e.to_string() << "\n";
      continue;
    }
    ++loaded;
    ASSERT_FALSE(m->environments.empty()) << f;
    for (const auto& [name, env] : m->environments) {
      specs += env.dependencies.size();
      if (!env.pip.empty()) ++with_pip;
      for (const auto& rs : env.dependencies) {
        EXPECT_GT(rs.location.line, 0) << f << " " << rs.text;
        EXPECT_FALSE(rs.spec.exact_name().empty() && rs.spec.url.value_or("").empty()) << f << " " << rs.text;
      }
    }
    EXPECT_TRUE(manifest_hash(*m).starts_with("sha256:"));
  }
  std::cout << "[corpus] " << loaded << " loaded, " << refused << " refused, " << specs << " specs, " << with_pip
            << " with pip requirements\n";
  EXPECT_GE(loaded, 100u);
  EXPECT_LE(refused, 7u);
  EXPECT_GE(with_pip, 10u);
}

// Every pip line of the corpus as pip reads it: a name only where the line names a project (a
// PEP 503 name, never a URL scheme or an option), the text kept whole.
TEST(CorpusEnvYml, PipLinesGetARealProjectNameOrNone) {
  if (!fs::is_directory(corpus())) GTEST_SKIP() << "corpus not found at " << corpus() << "; set ENVLOCK_SHARED_DIR to the folder holding corpus/";
  const std::regex pep503(R"(^[a-z0-9]([a-z0-9-]*[a-z0-9])?$)");
  std::size_t lines = 0, nameless = 0;
  for (const auto& f : files()) {
    auto m = load_manifest(f);
    if (!m) continue;
    for (const auto& [_, env] : m->environments) {
      for (const auto& p : env.pip) {
        ++lines;
        EXPECT_FALSE(p.requirement.empty()) << f;
        if (p.name.empty()) {
          ++nameless;
          continue;
        }
        EXPECT_TRUE(std::regex_match(p.name, pep503)) << f << ": '" << p.name << "' from " << p.requirement;
        EXPECT_NE(p.name, "https") << f << ": " << p.requirement;
        EXPECT_NE(p.name, "git") << f << ": " << p.requirement;
        if (p.requirement.starts_with("-")) {
          EXPECT_NE(p.requirement.find("#egg="), std::string::npos) << f << ": " << p.requirement;
        }
      }
    }
  }
  std::cout << "[corpus] " << lines << " pip lines, " << nameless << " naming no project\n";
  EXPECT_GE(nameless, 5u);

  // latent-diffusion: two editable VCS checkouts named by #egg=, and `-e .`, which names none.
  auto ldm = load_manifest(corpus() / "CompVis__latent-diffusion" / "environment.yaml");
  ASSERT_TRUE(ldm.ok()) << ldm.error().to_string();
  const auto& pip = ldm->environment("default")->pip;
  ASSERT_EQ(pip.size(), 15u);
  EXPECT_EQ(pip[12].name, "taming-transformers");
  EXPECT_EQ(pip[13].name, "clip");
  EXPECT_EQ(pip[14].name, "");
  EXPECT_EQ(pip[14].requirement, "-e .");
  // Clay's index option is no package: it is the environment's PyPI index (issue 20 point 1), and
  // its PEP 508 lines are resolved against it.
  auto clay = load_manifest(corpus() / "Clay-foundation__model" / "environment.yml");
  ASSERT_TRUE(clay.ok()) << clay.error().to_string();
  EXPECT_EQ(clay->pypi_indexes_for(*clay->environment("default")).at(0).written, "https://download.pytorch.org/whl/cu121");
  EXPECT_FALSE(clay->environment("default")->pypi_dependencies.empty());
}

TEST(CorpusEnvYml, RealFilesReadAsExpected) {
  if (!fs::is_directory(corpus())) GTEST_SKIP() << "corpus not found at " << corpus() << "; set ENVLOCK_SHARED_DIR to the folder holding corpus/";
  // Clay's environment.yml: three channels, python + pip, then 14 pip requirements.
  auto clay = load_manifest(corpus() / "Clay-foundation__model" / "environment.yml");
  ASSERT_TRUE(clay.ok()) << clay.error().to_string();
  EXPECT_EQ(clay->name, "claymodel");
  ASSERT_EQ(clay->channels.size(), 3u);
  EXPECT_EQ(clay->channels[1].url, "https://conda.anaconda.org/nvidia");
  const auto* env = clay->environment("default");
  ASSERT_NE(env, nullptr);
  ASSERT_EQ(env->dependencies.size(), 2u);
  EXPECT_EQ(env->dependencies[0].text, "python=3.11");
  // Its `--extra-index-url` line makes the 13 requirements PyPI requirements to resolve (issue 20).
  EXPECT_EQ(env->pip.size(), 0u);
  ASSERT_EQ(env->pypi_dependencies.size(), 13u);
  EXPECT_EQ(env->pypi_dependencies[0].text, "torch==2.4.0+cu121");

  // An older revision carries conda-lock selectors and platforms.
  auto old = load_manifest(corpus() / "Clay-foundation__model" / "environment.yml@c661ea44");
  ASSERT_TRUE(old.ok()) << old.error().to_string();
  EXPECT_EQ(old->platforms, std::vector<std::string>{"linux-64"});
  int osx_only = 0, linux_only = 0;
  for (const auto& rs : old->environment("default")->dependencies) {
    if (rs.selector == "osx") ++osx_only;
    if (rs.selector == "linux") ++linux_only;
  }
  EXPECT_EQ(osx_only, 1);
  EXPECT_EQ(linux_only, 1);

  // mamba's `sel(...)` selectors.
  auto sel = load_manifest(corpus() / "mamba-org__mamba" / "libmamba__tests__data__env_file__env_2.yaml");
  ASSERT_TRUE(sel.ok()) << sel.error().to_string();
  std::vector<std::string> linux64;
  for (const auto& rs : sel->environment("default")->dependencies)
    if (rs.applies_to("linux-64")) linux64.push_back(rs.text);
  EXPECT_EQ(linux64, (std::vector<std::string>{"test1-unix", "test1-linux", "test2-linux", "test4"}));

  // A spec conda refuses too (`=>` is no operator) is refused at its line.
  auto trivy = load_manifest(corpus() / "aquasecurity__trivy" / "pkg__dependency__parser__conda__environment__testdata__happy.yaml");
  ASSERT_FALSE(trivy.ok());
  EXPECT_TRUE(trivy.error().where.ends_with(":15:5")) << trivy.error().where;
  EXPECT_TRUE(trivy.error().message.starts_with("invalid MatchSpec 'libgfortran5 =>13.2.0,<13.3|13.4'"));

  // conda-lock's virtual-packages file is not an environment.
  auto vp = load_manifest(corpus() / "conda__conda-lock" / "tests__test-cuda__virtual-packages.yaml");
  ASSERT_FALSE(vp.ok());
  EXPECT_EQ(vp.error().message, "this is a conda-lock virtual-packages file, not an environment file");
}

}  // namespace
}  // namespace envlock
