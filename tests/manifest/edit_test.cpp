// add_dependencies / remove_dependencies (envlock/manifest_edit.hpp): the text edited in place,
// every byte outside the changed entry kept, as `pixi add` / `pixi remove` keep pixi.toml's
// comments and layout through toml_edit. Each test compares the whole new text.
#include <gtest/gtest.h>

#include "envlock/manifest_edit.hpp"

namespace envlock {
namespace {

Manifest parsed(const std::string& text) {
  auto m = parse_manifest(text, "envlock.yaml", "/proj", Manifest::Format::Envlock);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().to_string());
  if (!m) return {};
  m->path = "envlock.yaml";
  return *m;
}

/// The new text, or "error: ..." as the error renders.
std::string add(const std::string& text, const std::vector<std::string>& specs, const std::string& env = "default",
                DependencyKind kind = DependencyKind::Conda) {
  auto r = add_dependencies(parsed(text), text, env, specs, kind);
  return r ? r->text : "error: " + r.error().to_string();
}

std::string rm(const std::string& text, const std::vector<std::string>& names, const std::string& env = "default",
               DependencyKind kind = DependencyKind::Conda) {
  auto r = remove_dependencies(parsed(text), text, env, names, kind);
  return r ? r->text : "error: " + r.error().to_string();
}

const std::string kBlock =
    "# the project's manifest\n"
    "name: demo   # a label\n"
    "channels: ['./chan']\n"
    "platforms: [linux-64]\n"
    "dependencies:\n"
    "    # the interpreter first\n"
    "    -   python 3.12.*\n"
    "    -   cudatoolkit 11.8.*  # [linux64]\n"
    "\n"
    "environments:\n"
    "  train:\n"
    "    base: default\n"
    "    dependencies: [lightning, \"torchmetrics >=1\"]   # flow\n"
    "  docs: {dependencies: [sphinx]}\n"
    "variables:\n"
    "  A: \"1\"\n";

TEST(ManifestEdit, BlockListAppendsAfterTheLastEntryInItsIndentation) {
  auto r = add_dependencies(parsed(kBlock), kBlock, "default", {"numpy >=1.26,<2"}, DependencyKind::Conda);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->text,
            "# the project's manifest\n"
            "name: demo   # a label\n"
            "channels: ['./chan']\n"
            "platforms: [linux-64]\n"
            "dependencies:\n"
            "    # the interpreter first\n"
            "    -   python 3.12.*\n"
            "    -   cudatoolkit 11.8.*  # [linux64]\n"
            "    -   numpy >=1.26,<2\n"
            "\n"
            "environments:\n"
            "  train:\n"
            "    base: default\n"
            "    dependencies: [lightning, \"torchmetrics >=1\"]   # flow\n"
            "  docs: {dependencies: [sphinx]}\n"
            "variables:\n"
            "  A: \"1\"\n");
  ASSERT_EQ(r->edits.size(), 1u);
  EXPECT_EQ(r->edits[0].action, DependencyEdit::Action::Added);
  EXPECT_EQ(r->edits[0].name, "numpy");
  EXPECT_EQ(r->edits[0].line, 9);
  EXPECT_EQ(r->manifest.environment("default")->dependencies.size(), 3u);
}

// A manifest saved with a UTF-8 byte order mark (Windows editors): yaml-cpp's positions count
// from after it, so every add landed three bytes early and was refused (attack 21, F1). The mark
// stays where it was.
TEST(ManifestEdit, AByteOrderMarkIsKept) {
  const std::string bom = "\xEF\xBB\xBF";
  const std::string text = bom + "channels: [./chan]\nplatforms: [linux-64]\ndependencies: [zlib]\n";
  EXPECT_EQ(add(text, {"numpy >=1.26"}), bom + "channels: [./chan]\nplatforms: [linux-64]\ndependencies: [zlib, numpy >=1.26]\n");
  EXPECT_EQ(rm(text, {"zlib"}), bom + "channels: [./chan]\nplatforms: [linux-64]\ndependencies: []\n");
}

TEST(ManifestEdit, FlowListAppendsAfterItsLastEntryQuotedWhenNeeded) {
  // The last entry is double-quoted: so is the new one; a comma in a flow list needs quotes anyway.
  EXPECT_EQ(add(kBlock, {"pandas"}, "train"),
            "# the project's manifest\n"
            "name: demo   # a label\n"
            "channels: ['./chan']\n"
            "platforms: [linux-64]\n"
            "dependencies:\n"
            "    # the interpreter first\n"
            "    -   python 3.12.*\n"
            "    -   cudatoolkit 11.8.*  # [linux64]\n"
            "\n"
            "environments:\n"
            "  train:\n"
            "    base: default\n"
            "    dependencies: [lightning, \"torchmetrics >=1\", \"pandas\"]   # flow\n"
            "  docs: {dependencies: [sphinx]}\n"
            "variables:\n"
            "  A: \"1\"\n");
  const std::string docs = add(kBlock, {"furo >=2024,<2025"}, "docs");
  EXPECT_NE(docs.find("  docs: {dependencies: [sphinx, \"furo >=2024,<2025\"]}\n"), std::string::npos) << docs;
  const std::string plain = add(kBlock, {"furo"}, "docs");
  EXPECT_NE(plain.find("  docs: {dependencies: [sphinx, furo]}\n"), std::string::npos) << plain;
}

TEST(ManifestEdit, AnEntryOfTheSameNameIsReplacedInPlaceKeepingItsLine) {
  auto r = add_dependencies(parsed(kBlock), kBlock, "default", {"CudaToolkit 12.*"}, DependencyKind::Conda);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  std::string want = kBlock;
  want.replace(want.find("cudatoolkit 11.8.*"), 18, "CudaToolkit 12.*");
  EXPECT_EQ(r->text, want);  // the selector comment stays
  EXPECT_EQ(r->edits[0].action, DependencyEdit::Action::Replaced);
  EXPECT_EQ(r->edits[0].previous, "cudatoolkit 11.8.*");
  EXPECT_EQ(r->edits[0].line, 8);
  std::string quoted = kBlock;
  quoted.replace(quoted.find("\"torchmetrics >=1\""), 18, "\"torchmetrics >=1.4\"");
  EXPECT_EQ(add(kBlock, {"torchmetrics >=1.4"}, "train"), quoted);  // its double quotes kept
}

TEST(ManifestEdit, RemoveDeletesTheWholeEntry) {
  std::string want = kBlock;
  want.erase(want.find("    -   cudatoolkit"), std::string("    -   cudatoolkit 11.8.*  # [linux64]\n").size());
  EXPECT_EQ(rm(kBlock, {"cudatoolkit"}), want);
  std::string flow = kBlock;
  flow.replace(flow.find("[lightning, \"torchmetrics >=1\"]"), 31, "[\"torchmetrics >=1\"]");
  EXPECT_EQ(rm(kBlock, {"lightning"}, "train"), flow);
  std::string last = kBlock;
  last.replace(last.find("[lightning, \"torchmetrics >=1\"]"), 31, "[lightning]");
  EXPECT_EQ(rm(kBlock, {"torchmetrics"}, "train"), last);
  std::string only = kBlock;
  only.replace(only.find("{dependencies: [sphinx]}"), 24, "{dependencies: []}");
  EXPECT_EQ(rm(kBlock, {"sphinx"}, "docs"), only);
  // ... and the emptied list takes a new entry again.
  std::string again = kBlock;
  again.replace(again.find("{dependencies: [sphinx]}"), 24, "{dependencies: [mkdocs]}");
  EXPECT_EQ(add(rm(kBlock, {"sphinx"}, "docs"), {"mkdocs"}, "docs"), again);
}

TEST(ManifestEdit, AMissingDependenciesKeyIsCreatedInTheEnvironmentsStyle) {
  const std::string text =
      "channels: [./chan]\n"
      "dependencies: [python]\n"
      "environments:\n"
      "  gpu:\n"
      "    base: default   # on the default layer\n"
      "  cpu: {base: default}\n"
      "variables: {A: '1'}\n";
  EXPECT_EQ(add(text, {"pytorch"}, "gpu"),
            "channels: [./chan]\n"
            "dependencies: [python]\n"
            "environments:\n"
            "  gpu:\n"
            "    base: default   # on the default layer\n"
            "    dependencies:\n"
            "      - pytorch\n"
            "  cpu: {base: default}\n"
            "variables: {A: '1'}\n");
  EXPECT_EQ(add(text, {"pytorch-cpu"}, "cpu"),
            "channels: [./chan]\n"
            "dependencies: [python]\n"
            "environments:\n"
            "  gpu:\n"
            "    base: default   # on the default layer\n"
            "  cpu: {base: default, dependencies: [pytorch-cpu]}\n"
            "variables: {A: '1'}\n");
  // A key written without a value.
  EXPECT_EQ(add("channels: [./chan]\ndependencies:   # none yet\nname: x\n", {"zlib"}),
            "channels: [./chan]\ndependencies:   # none yet\n  - zlib\nname: x\n");
}

TEST(ManifestEdit, SelectorsMultiLineEntriesAndExplicitNulls) {
  const std::string text =
      "channels: [./chan]\n"
      "dependencies:\n"
      "  - sel(linux): cudatoolkit 11.8.*\n"
      "  - a long\n"
      "    spec\n"
      "  # a note on b\n"
      "  - b\n"
      "platforms: [linux-64]\n";
  EXPECT_EQ(add(text, {"cudatoolkit 12.*"}),
            "channels: [./chan]\ndependencies:\n  - sel(linux): cudatoolkit 12.*\n  - a long\n    spec\n"
            "  # a note on b\n  - b\nplatforms: [linux-64]\n");
  EXPECT_EQ(rm(text, {"a"}),
            "channels: [./chan]\ndependencies:\n  - sel(linux): cudatoolkit 11.8.*\n  # a note on b\n  - b\n"
            "platforms: [linux-64]\n");
  EXPECT_EQ(rm(text, {"cudatoolkit", "b"}),
            "channels: [./chan]\ndependencies:\n  - a long\n    spec\n  # a note on b\nplatforms: [linux-64]\n");
  EXPECT_EQ(add("channels: [./chan]\ndependencies: ~   # later\n", {"zlib"}),
            "channels: [./chan]\ndependencies: [zlib]   # later\n");
  // The last entry of a block list removed: the key stays, without a value, and takes entries again.
  const std::string emptied = rm("channels: [./chan]\ndependencies:\n  - a\nname: x\n", {"a"});
  EXPECT_EQ(emptied, "channels: [./chan]\ndependencies:\nname: x\n");
  EXPECT_EQ(add(emptied, {"a"}), "channels: [./chan]\ndependencies:\n  - a\nname: x\n");
}

TEST(ManifestEdit, PipRequirementsGoToThePipList) {
  const std::string text =
      "channels: [./chan]\n"
      "dependencies:\n"
      "  - python\n"
      "  - pip:\n"
      "    - requests==2.31.0   # pinned\n"
      "name: x\n";
  EXPECT_EQ(add(text, {"rich>=13"}, "default", DependencyKind::Pypi),
            "channels: [./chan]\n"
            "dependencies:\n"
            "  - python\n"
            "  - pip:\n"
            "    - requests==2.31.0   # pinned\n"
            "    - rich>=13\n"
            "name: x\n");
  EXPECT_EQ(add(text, {"Requests>=2.32"}, "default", DependencyKind::Pypi),  // PEP 503: the same project
            "channels: [./chan]\n"
            "dependencies:\n"
            "  - python\n"
            "  - pip:\n"
            "    - Requests>=2.32   # pinned\n"
            "name: x\n");
  // The last requirement removed: the `- pip:` entry goes too.
  EXPECT_EQ(rm(text, {"requests"}, "default", DependencyKind::Pypi), "channels: [./chan]\ndependencies:\n  - python\nname: x\n");
  // No pip list yet: one is made, as conda's environment.yml writes it.
  EXPECT_EQ(add("channels: [./chan]\ndependencies:\n  - python\n", {"rich"}, "default", DependencyKind::Pypi),
            "channels: [./chan]\ndependencies:\n  - python\n  - pip:\n    - rich\n");
  EXPECT_EQ(add("channels: [./chan]\ndependencies: [python]\n", {"rich"}, "default", DependencyKind::Pypi),
            "channels: [./chan]\ndependencies: [python, {pip: [rich]}]\n");
}

// A manifest that names an index or find-links resolves its pip lines (the parse moves a `pip:`
// list's PEP 508 lines to pypi_dependencies): --pypi still edits the list the text holds, and
// an environment with `pypi-dependencies:` gets its new named requirements there, as `pixi add
// --pypi` writes pypi-dependencies (attack 23, F14: every such add was refused as not reading
// back, every rm said "its pip requirements: none").
TEST(ManifestEdit, PypiEditsTheListTheEnvironmentUsesWhenItResolvesPipLines) {
  const auto pypi = DependencyKind::Pypi;
  for (const std::string key : {"find-links: [./wheels]\n", "pypi-indexes: [https://pypi.org/simple]\n"}) {
    const std::string text = "channels: [./chan]\n" + key + "dependencies:\n  - python\n  - pip:\n    - okpkg\n";
    EXPECT_EQ(add(text, {"other>=1"}, "default", pypi),
              "channels: [./chan]\n" + key + "dependencies:\n  - python\n  - pip:\n    - okpkg\n    - other>=1\n");
    EXPECT_EQ(add(text, {"OKPKG==2"}, "default", pypi),
              "channels: [./chan]\n" + key + "dependencies:\n  - python\n  - pip:\n    - OKPKG==2\n");
    EXPECT_EQ(rm(text, {"okpkg"}, "default", pypi), "channels: [./chan]\n" + key + "dependencies:\n  - python\n");
  }
  // The pip list's own index option: kept where it is; a path stays in the pip list.
  const std::string option = "channels: [./chan]\ndependencies:\n  - python\n  - pip:\n    - --find-links ./w\n    - okpkg\n";
  EXPECT_EQ(add(option, {"./w/other-1.0-py3-none-any.whl"}, "default", pypi),
            "channels: [./chan]\ndependencies:\n  - python\n  - pip:\n    - --find-links ./w\n    - okpkg\n"
            "    - ./w/other-1.0-py3-none-any.whl\n");
  EXPECT_EQ(rm(option, {"okpkg"}, "default", pypi),
            "channels: [./chan]\ndependencies:\n  - python\n  - pip:\n    - --find-links ./w\n");
  EXPECT_EQ(rm(option, {"other"}, "default", pypi),
            "error: envlock.yaml: environment 'default' has no pip requirement 'other'\nits pip requirements: okpkg\n"
            "hint: name one of them, or drop --pypi for a conda dependency");

  // pypi-dependencies, flow at the top level: appended, replaced, removed.
  const std::string flow = "channels: [./chan]\nfind-links: [./wheels]\ndependencies: [python]\npypi-dependencies: [okpkg]\n";
  EXPECT_EQ(add(flow, {"other>=1"}, "default", pypi),
            "channels: [./chan]\nfind-links: [./wheels]\ndependencies: [python]\npypi-dependencies: [okpkg, other>=1]\n");
  EXPECT_EQ(add(flow, {"okpkg>=2"}, "default", pypi),
            "channels: [./chan]\nfind-links: [./wheels]\ndependencies: [python]\npypi-dependencies: [okpkg>=2]\n");
  EXPECT_EQ(rm(flow, {"okpkg"}, "default", pypi),
            "channels: [./chan]\nfind-links: [./wheels]\ndependencies: [python]\npypi-dependencies: []\n");
  // ... without find-links (pip's default index), and left empty it takes the next one.
  EXPECT_EQ(add("channels: [./chan]\ndependencies: [python]\npypi-dependencies: []\n", {"okpkg"}, "default", pypi),
            "channels: [./chan]\ndependencies: [python]\npypi-dependencies: [okpkg]\n");
  EXPECT_EQ(add("channels: [./chan]\ndependencies: [python]\npypi-dependencies:\n", {"okpkg"}, "default", pypi),
            "channels: [./chan]\ndependencies: [python]\npypi-dependencies:\n  - okpkg\n");
  // A path or URL is not PEP 508 alone: it goes to the pip list, made when missing.
  EXPECT_EQ(add(flow, {"./wheels/other-1.0-py3-none-any.whl"}, "default", pypi),
            "channels: [./chan]\nfind-links: [./wheels]\ndependencies: [python, {pip: [./wheels/other-1.0-py3-none-any.whl]}]\n"
            "pypi-dependencies: [okpkg]\n");
  EXPECT_EQ(add(flow, {"okpkg @ https://host/okpkg-1.0-py3-none-any.whl"}, "default", pypi),
            "error: envlock.yaml: 'okpkg @ https://host/okpkg-1.0-py3-none-any.whl' is a path, URL or pip option, and "
            "'okpkg' is listed in pypi-dependencies (line 4), which holds PEP 508 requirements only\n"
            "hint: `envlock rm --pypi okpkg` first, then add it again: it goes to the `pip:` list");

  // Both lists, in an environment's block map: a name is replaced where it is, rm takes it
  // from either, and its error lists both.
  const std::string both =
      "channels: [./chan]\n"
      "find-links: [./wheels]\n"
      "environments:\n"
      "  train:\n"
      "    dependencies:\n"
      "      - python\n"
      "      - pip:\n"
      "        - piponly==1\n"
      "    pypi-dependencies:\n"
      "      - okpkg   # from the index\n";
  EXPECT_EQ(add(both, {"piponly==2", "other"}, "train", pypi),
            "channels: [./chan]\nfind-links: [./wheels]\nenvironments:\n  train:\n    dependencies:\n      - python\n"
            "      - pip:\n        - piponly==2\n    pypi-dependencies:\n      - okpkg   # from the index\n      - other\n");
  EXPECT_EQ(rm(both, {"okpkg", "piponly"}, "train", pypi),
            "channels: [./chan]\nfind-links: [./wheels]\nenvironments:\n  train:\n    dependencies:\n      - python\n"
            "    pypi-dependencies:\n");
  EXPECT_EQ(rm(both, {"numpy"}, "train", pypi),
            "error: envlock.yaml: environment 'train' has no pip requirement 'numpy'\nits pip requirements: okpkg, "
            "piponly==1\nhint: name one of them, or drop --pypi for a conda dependency");
  // The edit says which list it wrote.
  auto r = add_dependencies(parsed(both), both, "train", {"piponly==2", "other"}, pypi);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->edits.size(), 2u);
  EXPECT_FALSE(r->edits[0].pypi_dependencies);
  EXPECT_EQ(r->edits[0].line, 8);
  EXPECT_TRUE(r->edits[1].pypi_dependencies);
  EXPECT_EQ(r->edits[1].line, 11);
}

TEST(ManifestEdit, AFileWithoutAFinalNewlineKeepsIt) {
  EXPECT_EQ(add("channels: [./chan]\ndependencies:\n- a\n- b", {"c"}), "channels: [./chan]\ndependencies:\n- a\n- b\n- c");
  EXPECT_EQ(rm("channels: [./chan]\ndependencies:\n- a\n- b", {"b"}), "channels: [./chan]\ndependencies:\n- a");
}

TEST(ManifestEdit, MultiLineFlowListsGetALineOfTheirOwn) {
  EXPECT_EQ(add("channels: [./chan]\ndependencies: [\n  a,\n  b,\n]\n", {"c"}),
            "channels: [./chan]\ndependencies: [\n  a,\n  b,\n  c,\n]\n");
  EXPECT_EQ(add("channels: [./chan]\ndependencies: [\n  a,\n  b  # last\n]\n", {"c"}),
            "channels: [./chan]\ndependencies: [\n  a,\n  b,  # last\n  c\n]\n");
}

TEST(ManifestEdit, Errors) {
  EXPECT_EQ(add(kBlock, {"numpy >=>2"}),
            "error: invalid match spec 'numpy >=>2' at character 7: bad version constraint '>=>2': invalid version "
            "constraint '>=>2' at character 1: invalid operator; use one of == != < <= > >= ~= =\n"
            "  numpy >=>2\n        ^\n"
            "hint: a match spec looks like 'numpy >=1.26,<2', 'numpy=1.26=py312*', 'conda-forge::numpy 1.26.* py312*' "
            "or 'numpy[version=\">=1.26\"]'");
  EXPECT_EQ(add(kBlock, {"*[version=1]"}),
            "error: the spec '*[version=1]' names no single package\nhint: start the spec with the package name, e.g. "
            "`numpy >=1.26`");
  EXPECT_EQ(add(kBlock, {"numpy", "NumPy 2"}), "error: 'numpy' is given twice\nhint: give each package once");
  EXPECT_EQ(add(kBlock, {"numpy\n- evil"}),
            "error: the spec 'numpy\\x0a- evil' holds a control character or a line break\nhint: give one spec per "
            "argument, on one line");
  EXPECT_EQ(add(kBlock, {"numpy"}, "gpu"),
            "error: envlock.yaml: has no environment 'gpu'\nenvironments in it: default, docs, train\nhint: pass one of "
            "them with -e");
  EXPECT_EQ(rm(kBlock, {"numpy"}),
            "error: envlock.yaml: environment 'default' has no dependency 'numpy'\nits dependencies: python 3.12.*, "
            "cudatoolkit 11.8.*\nhint: name one of them, or `--pypi` for a pip requirement");
  EXPECT_EQ(add(kBlock, {"./src"}, "default", DependencyKind::Pypi),
            "error: the pip requirement './src' names no project\nhint: write a requirement such as `requests>=2.31`, "
            "`pkg @ https://host/pkg.whl` or `-e ./src#egg=pkg`");
  // Not PEP 508: pip refuses it too (attack 21, F7). Extras, markers and references are fine.
  EXPECT_EQ(add(kBlock, {"not a valid req!!"}, "default", DependencyKind::Pypi),
            "error: the pip requirement 'not a valid req!!' is not a PEP 508 requirement\nhint: write a requirement such "
            "as `requests>=2.31`, `pkg[extra]>=1; python_version>='3.10'` or `pkg @ https://host/pkg.whl`");
  const std::string simple = "channels: [./chan]\nplatforms: [linux-64]\ndependencies:\n  - python\n";
  for (const std::string ok : {"pkg[extra]>=1", "pkg ; python_version>='3.10'", "pkg @ https://h/p.whl", "pkg (>=1)", "a.b-c_d"})
    EXPECT_EQ(add(simple, {ok}, "default", DependencyKind::Pypi), simple + "  - pip:\n    - " + ok + "\n") << ok;
  // A list whose entries have blanks after the dash: the pip list goes under the `pip` key's column.
  EXPECT_NE(add(kBlock, {"requests>=2"}, "default", DependencyKind::Pypi)
                .find("    -   cudatoolkit 11.8.*  # [linux64]\n    -   pip:\n        - requests>=2\n\n"),
            std::string::npos)
      << add(kBlock, {"requests>=2"}, "default", DependencyKind::Pypi);
}

}  // namespace
}  // namespace envlock
