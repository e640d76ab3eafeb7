// `variables:` (issue 21): name -> value, top-level (every environment) and per environment,
// layered along `base:`; bad names and values are file:line:col errors with a caret. conda's
// environment.yml has the same key (conda/conda#10169).
#include <gtest/gtest.h>

#include <filesystem>

#include "envlock/manifest.hpp"

namespace envlock {
namespace {

using Vars = std::vector<std::pair<std::string, std::string>>;

Result<Manifest> parse(const std::string& text, const std::string& source = "envlock.yaml") {
  return parse_manifest(text, source, "/proj");
}

Error error_of(const std::string& text) {
  auto m = parse(text);
  EXPECT_FALSE(m.ok());
  return m.ok() ? Error{} : m.error();
}

TEST(ManifestVariables, TopLevelThenBasesThenTheEnvironmentsOwn) {
  auto m = parse(
      "channels: [conda-forge]\n"
      "dependencies: [python]\n"
      "variables: {OMP_NUM_THREADS: '4', DATA: /data, EMPTY: ''}\n"
      "environments:\n"
      "  train:\n"
      "    base: default\n"
      "    dependencies: [pytorch]\n"
      "    variables: {DATA: /scratch, CUDA_MODULE_LOADING: LAZY}\n"
      "  eval:\n"
      "    base: train\n"
      "    dependencies: [numpy]\n"
      "    variables:\n"
      "      OMP_NUM_THREADS: 1   # a number is its text\n");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->variables, (Vars{{"OMP_NUM_THREADS", "4"}, {"DATA", "/data"}, {"EMPTY", ""}}));
  EXPECT_EQ(m->variables_for("default"), (Vars{{"OMP_NUM_THREADS", "4"}, {"DATA", "/data"}, {"EMPTY", ""}}));
  EXPECT_EQ(m->variables_for("train"),
            (Vars{{"OMP_NUM_THREADS", "4"}, {"DATA", "/scratch"}, {"EMPTY", ""}, {"CUDA_MODULE_LOADING", "LAZY"}}));
  EXPECT_EQ(m->variables_for("eval"),
            (Vars{{"OMP_NUM_THREADS", "1"}, {"DATA", "/scratch"}, {"EMPTY", ""}, {"CUDA_MODULE_LOADING", "LAZY"}}));
  EXPECT_EQ(m->variables_for("nosuch"), Vars{});
}

TEST(ManifestVariables, AreNotASolveInputSoTheHashStays) {
  auto a = parse("channels: [conda-forge]\ndependencies: [python]\n");
  auto b = parse("channels: [conda-forge]\ndependencies: [python]\nvariables: {A: '1'}\n");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(manifest_hash(*a), manifest_hash(*b));
}

TEST(ManifestVariables, CondaEnvironmentYmlHasThemToo) {
  // conda/conda#10169: `variables:` in environment.yml, set by `conda env create`.
  auto m = parse("name: x\nchannels: [conda-forge]\ndependencies: [python]\nvariables:\n  MY_VAR: weee\n",
                 "environment.yml");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->format, Manifest::Format::CondaEnvironment);
  EXPECT_TRUE(m->warnings.empty()) << m->warnings.front();
  EXPECT_EQ(m->variables_for("default"), (Vars{{"MY_VAR", "weee"}}));
}

// rattler's own test of environment.yml variables (conda/rattler,
// test-data/environments/variables.environment.yaml): MY_ENV_VAR: "My Value".
TEST(ManifestVariables, RattlersVariablesEnvironmentFile) {
  const std::filesystem::path file = std::filesystem::path(ENVLOCK_SHARED_DIR) /
                                     "corpus/envyml/conda__rattler/test-data__environments__variables.environment.yaml";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "the shared corpus is absent: " << file;
  auto m = load_manifest(file);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_TRUE(m->warnings.empty()) << m->warnings.front();
  EXPECT_EQ(m->variables_for("default"), (Vars{{"MY_ENV_VAR", "My Value"}}));
}

TEST(ManifestVariables, ANewlineInAValueIsRefusedWhereItIs) {
  Error e = error_of("dependencies: [python]\nvariables:\n  GREETING: \"hello\\nworld\"\n");
  EXPECT_EQ(e.kind, ErrorKind::Parse);
  EXPECT_EQ(e.to_string(),
            "envlock.yaml:3:13: the value of variable 'GREETING' holds a newline\n"
            "    GREETING: \"hello\\nworld\"\n"
            "              ^\n"
            "hint: a variable's value is one line of text (a NUL cannot be in an environment variable; a line break "
            "would not survive every shell's activation script)");
  Error block = error_of("dependencies: [python]\nvariables:\n  TEXT: |\n    one\n    two\n");
  EXPECT_EQ(block.where, "envlock.yaml:3:9");
  EXPECT_EQ(block.message, "the value of variable 'TEXT' holds a newline");
}

TEST(ManifestVariables, ANulInAValueIsRefused) {
  Error e = error_of("dependencies: [python]\nvariables: {A: \"x\\0y\"}\n");
  EXPECT_EQ(e.where, "envlock.yaml:2:16");
  EXPECT_EQ(e.message, "the value of variable 'A' holds a NUL byte");
  Error cr = error_of("dependencies: [python]\nvariables: {A: \"x\\ry\"}\n");
  EXPECT_EQ(cr.message, "the value of variable 'A' holds a carriage return");
}

TEST(ManifestVariables, BadNamesAndShapes) {
  Error name = error_of("dependencies: [python]\nvariables:\n  1BAD: x\n");
  EXPECT_EQ(name.where, "envlock.yaml:3:3");
  EXPECT_EQ(name.message, "variable name '1BAD' is not an environment variable name");
  EXPECT_EQ(error_of("dependencies: [python]\nvariables: {'A=B': x}\n").message,
            "variable name 'A=B' is not an environment variable name");
  Error path = error_of("dependencies: [python]\nvariables: {PATH: /opt/bin}\n");
  EXPECT_EQ(path.where, "envlock.yaml:2:13");
  EXPECT_EQ(path.message, "variable 'PATH' is set by activation itself");
  EXPECT_EQ(error_of("dependencies: [python]\nvariables: {CONDA_PREFIX: /x}\n").message,
            "variable 'CONDA_PREFIX' is set by activation itself");
  Error list = error_of("dependencies: [python]\nvariables: [A, B]\n");
  EXPECT_EQ(list.where, "envlock.yaml:2:12");
  EXPECT_EQ(list.message, "variables must be a map of name -> value, found a list");
  Error nested = error_of("dependencies: [python]\nvariables:\n  A: [1, 2]\n");
  EXPECT_EQ(nested.where, "envlock.yaml:3:6");
  EXPECT_EQ(nested.message, "the value of variable 'A' must be a string, found a list");
  Error none = error_of("dependencies: [python]\nvariables:\n  A:\n");
  EXPECT_EQ(none.where, "envlock.yaml:3:3");
  EXPECT_EQ(error_of("dependencies: [python]\nvariables: {A: x, A: y}\n").kind, ErrorKind::Parse);
  Error env = error_of("environments:\n  e:\n    dependencies: [python]\n    variables: {9: x}\n");
  EXPECT_EQ(env.where, "envlock.yaml:4:17");
  EXPECT_EQ(env.message, "variable name '9' is not an environment variable name");
  Error envshape = error_of("environments:\n  e:\n    dependencies: [python]\n    variables: x\n");
  EXPECT_EQ(envshape.message, "variables of environment 'e' must be a map of name -> value, found a scalar 'x'");
}

}  // namespace
}  // namespace envlock
