#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "envlock/manifest.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;

// Line numbers matter: tests assert them.
const char* const kManifest =
    "name: vision\n"                                        // 1
    "channels:\n"                                           // 2
    "  - conda-forge\n"                                     // 3
    "  - ./local-chan\n"                                    // 4
    "  - https://user:secret@example.com/t/tok-123/chan/\n" // 5
    "platforms: [linux-64, osx-arm64]\n"                    // 6
    "channel-priority: flexible\n"                          // 7
    "dependencies:\n"                                       // 8
    "  - numpy >=2\n"                                       // 9
    "  - python 3.12.*\n"                                   // 10
    "environments:\n"                                       // 11
    "  train:\n"                                            // 12
    "    base: default\n"                                   // 13
    "    dependencies:\n"                                   // 14
    "      - pytorch 2.4.*   # [linux64]\n"                 // 15
    "      - lightning\n"                                   // 16
    "    platforms: [linux-64]\n"                           // 17
    "virtual-packages:\n"                                   // 18
    "  linux-64: [__glibc=2.28, __cuda=12.4]\n"             // 19
    "reference: {command: python eval.py, metric: 'json:loss', tolerance: 0.05}\n";  // 20

Result<Manifest> parse(const std::string& text, std::optional<Manifest::Format> f = std::nullopt) {
  return parse_manifest(text, "envlock.yaml", "/proj", f);
}

TEST(Manifest, ReadsEveryPart) {
  auto m = parse(kManifest);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->format, Manifest::Format::Envlock);
  EXPECT_EQ(m->name, "vision");
  ASSERT_EQ(m->channels.size(), 3u);
  EXPECT_EQ(m->channels[0].kind, Channel::Kind::Named);
  EXPECT_EQ(m->channels[0].url, "https://conda.anaconda.org/conda-forge");
  EXPECT_EQ(m->channels[1].kind, Channel::Kind::LocalDirectory);
  EXPECT_EQ(m->channels[1].url, "file:///proj/local-chan");
  EXPECT_EQ(m->channels[1].local_path(), fs::path("/proj/local-chan"));
  EXPECT_EQ(m->channels[2].kind, Channel::Kind::Url);
  EXPECT_EQ(m->channels[2].url, "https://user:secret@example.com/t/tok-123/chan");  // kept in memory
  EXPECT_EQ(m->channels[2].public_url(), "https://example.com/chan");
  EXPECT_EQ(m->channels[2].location.line, 5);
  EXPECT_EQ(m->platforms, (std::vector<std::string>{"linux-64", "osx-arm64"}));
  EXPECT_FALSE(m->platforms_from_host);
  EXPECT_EQ(m->channel_priority, ChannelPriority::Flexible);

  ASSERT_EQ(m->environments.size(), 2u);
  const ManifestEnvironment* def = m->environment("default");
  ASSERT_NE(def, nullptr);
  ASSERT_EQ(def->dependencies.size(), 2u);
  EXPECT_EQ(def->dependencies[0].text, "numpy >=2");
  EXPECT_EQ(def->dependencies[0].spec.exact_name(), "numpy");
  EXPECT_EQ(def->dependencies[0].location.to_string(), "envlock.yaml:9:5");
  EXPECT_EQ(def->base, "");
  EXPECT_EQ(m->platforms_for(*def), m->platforms);

  const ManifestEnvironment* train = m->environment("train");
  ASSERT_NE(train, nullptr);
  EXPECT_EQ(train->base, "default");
  ASSERT_EQ(train->dependencies.size(), 2u);
  EXPECT_EQ(train->dependencies[0].text, "pytorch 2.4.*");
  EXPECT_EQ(train->dependencies[0].selector, "linux64");
  EXPECT_TRUE(train->dependencies[0].applies_to("linux-64"));
  EXPECT_FALSE(train->dependencies[0].applies_to("osx-arm64"));
  EXPECT_EQ(train->dependencies[1].selector, "");
  EXPECT_EQ(m->platforms_for(*train), std::vector<std::string>{"linux-64"});
  EXPECT_EQ(&m->channels_for(*train), &m->channels);

  const auto& vps = m->virtual_packages_for("linux-64");
  ASSERT_EQ(vps.size(), 2u);
  EXPECT_EQ(vps[0].to_string(), "__cuda=12.4=0");  // sorted by name
  EXPECT_EQ(vps[1].to_string(), "__glibc=2.28=0");
  EXPECT_TRUE(m->virtual_packages_for("osx-arm64").empty());

  ASSERT_TRUE(m->reference.has_value());
  EXPECT_EQ(m->reference->command, "python eval.py");
  EXPECT_EQ(m->reference->metric, "json:loss");
  EXPECT_DOUBLE_EQ(m->reference->tolerance, 0.05);
  EXPECT_EQ(m->layer_order(), (std::vector<std::string>{"default", "train"}));
}

TEST(Manifest, PlatformsDefaultToTheHost) {
  auto m = parse("channels: [conda-forge]\ndependencies: [python]\n");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_TRUE(m->platforms_from_host);
  ASSERT_EQ(m->platforms.size(), 1u);
  EXPECT_FALSE(m->platforms[0].empty());
  EXPECT_EQ(m->channel_priority, ChannelPriority::Strict);
}

TEST(Manifest, ChannelAliasAndEnvironmentChannels) {
  auto m = parse(
      "channel-alias: https://mirror.example.org/conda/\n"
      "channels: [conda-forge]\n"
      "environments:\n"
      "  gpu: {dependencies: [pytorch], channels: [pytorch, file:///srv/chan/]}\n");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->channels[0].url, "https://mirror.example.org/conda/conda-forge");
  const auto& chans = m->channels_for(*m->environment("gpu"));
  ASSERT_EQ(chans.size(), 2u);
  EXPECT_EQ(chans[0].url, "https://mirror.example.org/conda/pytorch");
  EXPECT_EQ(chans[1].url, "file:///srv/chan");
  EXPECT_EQ(chans[1].kind, Channel::Kind::LocalDirectory);
  EXPECT_EQ(m->environment("default"), nullptr);
}

TEST(Manifest, ResolveChannel) {
  auto named = resolve_channel("pytorch/label/nightly", "/p");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->url, "https://conda.anaconda.org/pytorch/label/nightly");
  auto up = resolve_channel("../chan", "/p/q");
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->url, "file:///p/chan");
  auto bad = resolve_channel("ftp://host/chan", "/p");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "unsupported URL scheme 'ftp' in channel 'ftp://host/chan'");
  auto rel = resolve_channel("file://chan", "/p");
  ASSERT_FALSE(rel.ok());
  EXPECT_EQ(rel.error().message, "file URL 'file://chan' is not absolute");
  EXPECT_FALSE(resolve_channel("  ", "/p").ok());
}

// A directory's URL is percent-encoded (RFC 8089/3986, as mamba writes it) so libcurl takes it;
// local_path() gives the folder back. Written encoded or not, a file:// URL names one folder.
TEST(Manifest, ResolveChannelEncodesDirectoryPaths) {
  auto rel = resolve_channel("./my chan", "/tmp/x/proj sp");
  ASSERT_TRUE(rel.ok()) << rel.error().to_string();
  EXPECT_EQ(rel->url, "file:///tmp/x/proj%20sp/my%20chan");
  EXPECT_EQ(rel->local_path(), "/tmp/x/proj sp/my chan");
  EXPECT_EQ(rel->spelling, "./my chan");
  auto odd = resolve_channel("/srv/a#b/100%/caf\xc3\xa9?/", "/p");
  ASSERT_TRUE(odd.ok()) << odd.error().to_string();
  EXPECT_EQ(odd->url, "file:///srv/a%23b/100%25/caf%C3%A9%3F");
  EXPECT_EQ(odd->local_path(), "/srv/a#b/100%/caf\xc3\xa9?");
  for (const char* spelling : {"file:///srv/my%20chan", "file:///srv/my chan", "file://localhost/srv/my%20chan/",
                               "FILE:///srv/./x/../my%20chan"}) {
    auto ch = resolve_channel(spelling, "/p");
    ASSERT_TRUE(ch.ok()) << spelling << ": " << ch.error().to_string();
    EXPECT_EQ(ch->url, "file:///srv/my%20chan") << spelling;
    EXPECT_EQ(ch->local_path(), "/srv/my chan") << spelling;
  }
  auto host = resolve_channel("file://server/share", "/p");
  ASSERT_FALSE(host.ok());
  EXPECT_EQ(host.error().message,
            "channel 'file://server/share': file URL names the host 'server'; envlock reads local paths only");
}

TEST(Manifest, LayerOrderPutsBasesFirst) {
  auto m = parse(
      "channels: [conda-forge]\n"
      "environments:\n"
      "  a: {base: c, dependencies: [x]}\n"
      "  b: {dependencies: [y]}\n"
      "  c: {base: b, dependencies: [z]}\n");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->layer_order(), (std::vector<std::string>{"b", "c", "a"}));
}

// ---- errors: file:line:col, the offending line and a caret ----------------------------------

Error parse_error_of(const std::string& text) {
  auto m = parse(text);
  EXPECT_FALSE(m.ok());
  return m ? Error{} : m.error();
}

TEST(ManifestErrors, YamlSyntax) {
  Error e = parse_error_of("channels: [conda-forge\ndependencies: [python]\n");
  EXPECT_EQ(e.kind, ErrorKind::Parse);
  EXPECT_TRUE(e.where.starts_with("envlock.yaml:")) << e.where;
  EXPECT_NE(e.message.find("invalid YAML"), std::string::npos) << e.message;
}

TEST(ManifestErrors, UnknownKeyShowsTheLineAndCaret) {
  Error e = parse_error_of("channels: [conda-forge]\ndependencies: [python]\nplatfroms: [linux-64]\n");
  EXPECT_EQ(e.where, "envlock.yaml:3:1");
  EXPECT_EQ(e.message, "unknown key 'platfroms'");
  EXPECT_EQ(e.detail, "  platfroms:\n  ^");  // up to the key's `:`, never its value (attack 30, F13)
  EXPECT_NE(e.hint.find("platforms"), std::string::npos);
  EXPECT_EQ(e.to_string().substr(0, e.where.size() + 2), "envlock.yaml:3:1: ");
}

TEST(ManifestErrors, BadMatchSpecPointsAtTheSpec) {
  Error e = parse_error_of("channels: [conda-forge]\ndependencies:\n  - python\n  - numpy >=>2\n");
  EXPECT_EQ(e.where, "envlock.yaml:4:5");
  EXPECT_TRUE(e.message.starts_with("invalid MatchSpec 'numpy >=>2'")) << e.message;
  EXPECT_TRUE(e.detail.starts_with("    - numpy >=>2\n      ^")) << e.detail;
}

TEST(ManifestErrors, EachRuleNamesThePlace) {
  struct Case {
    const char* text;
    const char* where;
    const char* message_start;
  };
  const Case cases[] = {
      {"channels: [conda-forge]\nplatforms: [linux-65]\ndependencies: [x]\n", "envlock.yaml:2:13",
       "unknown platform (conda subdir) 'linux-65'"},
      {"channels: [conda-forge]\nchannel-priority: strictest\ndependencies: [x]\n", "envlock.yaml:2:19",
       "unknown channel-priority 'strictest'"},
      {"channels: [conda-forge]\nenvironments:\n  p: {base: nope, dependencies: [x]}\n", "envlock.yaml:3:13",
       "base 'nope' of environment 'p' is not an environment of this manifest"},
      {"channels: [conda-forge]\nenvironments:\n  a: {base: b}\n  b: {base: a}\n", "envlock.yaml:3:13",
       "environment 'a' has a cycle of base layers"},
      {"channels: [conda-forge]\nplatforms: [linux-64]\nenvironments:\n  a: {dependencies: [x]}\n"
       "  b: {base: a, platforms: [osx-64]}\n",
       "envlock.yaml:5:13", "environment 'b' is locked for osx-64 but its base 'a' is not"},
      {"channels: [conda-forge]\ndependencies: [x]\nvirtual-packages:\n  linux-64: [cuda=12]\n", "envlock.yaml:4:14",
       "'cuda=12' is not a virtual package"},
      // A new-user attack (issue 15, #2): spellings that silently offered no __cuda at all.
      {"channels: [conda-forge]\ndependencies: [x]\nvirtual-packages:\n  linux-64: [\"__cuda >=12\"]\n",
       "envlock.yaml:4:14",
       "virtual package '__cuda >=12' at character 7: a virtual package is written NAME=VERSION[=BUILD], e.g. "
       "__cuda=12.4"},
      {"channels: [conda-forge]\ndependencies: [x]\nvirtual-packages:\n  linux-64: [\"__cuda 12.4\"]\n",
       "envlock.yaml:4:14", "virtual package '__cuda 12.4' at character 7: a virtual package is written NAME"},
      {"channels: [conda-forge]\ndependencies: [x]\nvirtual-packages:\n  linux-64: [__CUDA=12.4]\n",
       "envlock.yaml:4:14",
       "virtual package '__CUDA=12.4' at character 3: virtual package names are lower case: write __cuda=12.4"},
      {"channels: [conda-forge]\ndependencies: [x]\nvirtual-packages:\n  linux-64: [__glibc=2.17=bad=x]\n",
       "envlock.yaml:4:14",
       "virtual package '__glibc=2.17=bad=x' at character 17: a build string may not contain spaces"},
      {"channels: [conda-forge]\ndependencies: [x]\nvirtual-packages:\n  linux-64: [__cuda=banana]\n",
       "envlock.yaml:4:14",
       "virtual package '__cuda=banana' at character 8: the version must start with a digit"},
      {"channels: [conda-forge]\ndependencies: [x]\nreference: {command: a, metric: b, tolerance: -1}\n",
       "envlock.yaml:3:47", "reference.tolerance must be a finite number >= 0"},
      {"channels: [conda-forge]\ndependencies: [x]\nreference: {command: a}\n", "envlock.yaml:3:12",
       "reference has no `metric`"},
      {"channels: [conda-forge]\ndependencies: [x]\nchannels: [bioconda]\n", "envlock.yaml:3:1", "duplicate key 'channels'"},
      {"channels: conda-forge\ndependencies: [x]\n", "envlock.yaml:1:11", "channels must be a list"},
      {"channels: [conda-forge, conda-forge]\ndependencies: [x]\n", "envlock.yaml:1:25",
       "channel 'conda-forge' is listed twice"},
      {"dependencies: [x]\nenvironments:\n  default: {dependencies: [y]}\n", "envlock.yaml:3:3",
       "environment 'default' is defined twice"},
      {"environments:\n  a: {dependencies: [x], extra: 1}\n", "envlock.yaml:2:26", "unknown key 'extra' in environment 'a'"},
      {"environments:\n  a: {dependencies: [x]}\n", "envlock.yaml:2:3", "environment 'a' has no channels"},
      {"channels: [conda-forge]\ndependencies:\n  - x  # [linux128]\n", "envlock.yaml:3:11",
       "unknown platform selector '[linux128]'"},
      {"channels: [conda-forge]\ndependencies:\n  - {conda: x}\n", "envlock.yaml:3:5",
       "a dependency must be a MatchSpec string or a `pip:` list"},
      {"channels: [conda-forge]\nname: x\n", "envlock.yaml:1:1", "nothing to lock"},
      {"- a\n- b\n", "envlock.yaml:1:1", "a manifest must be a YAML map"},
  };
  for (const auto& c : cases) {
    Error e = parse_error_of(c.text);
    EXPECT_EQ(e.where, c.where) << c.text << "\n" << e.to_string();
    EXPECT_TRUE(e.message.starts_with(c.message_start)) << c.text << "\n" << e.to_string();
    // Every error quotes its line but the one about the whole file, which quotes none of it.
    EXPECT_EQ(e.detail.empty(), c.message_start == std::string("nothing to lock")) << c.text;
    EXPECT_EQ(e.kind, ErrorKind::Parse);
  }
  Error empty = parse_error_of("# nothing\n");
  EXPECT_EQ(empty.message, "the manifest is empty");
}

// Attack 20, L2: `lock` accepted a 300-byte environment name that `create` then refused as a
// usage error (exit 2); names that differ only in case (Train, train) were allowed, one folder
// on a case-insensitive filesystem. Both are refused at the name's line.
TEST(ManifestErrors, EnvironmentNamesTooLongOrDifferingOnlyInCaseAreRefusedAtTheirLine) {
  const std::string long_name(300, 'a');
  Error too_long = parse_error_of("channels: [conda-forge]\nenvironments:\n  " + long_name + ": {dependencies: [x]}\n");
  EXPECT_EQ(too_long.kind, ErrorKind::Parse);
  EXPECT_EQ(too_long.where, "envlock.yaml:3:3");
  EXPECT_EQ(too_long.message, "environment name 'aaaaaaaaaaaaaaaa…' is 300 bytes; at most 200");
  EXPECT_EQ(too_long.hint, "its folder .envlock/envs/<name> and the ones envlock keeps beside it must fit in a file "
                           "name (255 bytes): choose a shorter name");
  Error cased = parse_error_of(
      "channels: [conda-forge]\nenvironments:\n  Train: {dependencies: [x]}\n  train: {dependencies: [y]}\n");
  EXPECT_EQ(cased.kind, ErrorKind::Parse);
  EXPECT_EQ(cased.where, "envlock.yaml:4:3");
  EXPECT_EQ(cased.message, "environment 'train' differs from 'Train' only in case");
  EXPECT_EQ(cased.hint, "on a case-insensitive filesystem (macOS, a CIFS or exFAT share) their folders "
                        ".envlock/envs/Train and .envlock/envs/train are one; rename one of them (pixi allows "
                        "lower-case names only)");
  EXPECT_TRUE(parse_manifest("channels: [conda-forge]\nenvironments:\n  " + std::string(200, 'a') +
                                 ": {dependencies: [x]}\n",
                             "envlock.yaml", "/proj")
                  .ok());
}

TEST(ManifestErrors, MissingFileIsAnIoError) {
  auto m = load_manifest("/nonexistent/envlock.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, ErrorKind::Io);
  EXPECT_EQ(m.error().where, "/nonexistent/envlock.yaml");
}

// ---- conda environment.yml ----------------------------------------------------------------

TEST(EnvironmentYml, PipSelectorsDefaultsAndIgnoredKeys) {
  auto m = parse_manifest(
      "name: ml\n"
      "channels: [pytorch, defaults, nodefaults]\n"
      "prefix: /opt/conda/envs/ml\n"
      "dependencies:\n"
      "  - python=3.11\n"
      "  - cudatoolkit=11.8  # [linux]\n"
      "  - pip\n"
      "  - pip:\n"
      "    - --extra-index-url https://download.pytorch.org/whl/cu121\n"
      "    - torch==2.4.0+cu121\n"
      "    - jsonargparse[signatures]>=4.27.7\n"
      "    - -e git+https://github.com/openai/CLIP.git@main#egg=clip\n",
      "environment.yml", "/proj");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->format, Manifest::Format::CondaEnvironment);
  ASSERT_EQ(m->channels.size(), 3u);
  EXPECT_EQ(m->channels[0].url, "https://conda.anaconda.org/pytorch");
  EXPECT_EQ(m->channels[1].url, "https://repo.anaconda.com/pkgs/main");
  EXPECT_EQ(m->channels[2].url, "https://repo.anaconda.com/pkgs/r");
  const ManifestEnvironment* env = m->environment("default");
  ASSERT_NE(env, nullptr);
  ASSERT_EQ(env->dependencies.size(), 3u);
  EXPECT_EQ(env->dependencies[1].selector, "linux");
  EXPECT_TRUE(env->dependencies[1].applies_to("linux-aarch64"));
  EXPECT_FALSE(env->dependencies[1].applies_to("win-64"));
  // issue 20 point 1: the index option and the PEP 508 lines are the PyPI model (the index makes
  // the list resolvable); the editable VCS line stays carried as written.
  ASSERT_EQ(env->pip.size(), 1u);
  EXPECT_EQ(env->pip[0].name, "clip");
  ASSERT_EQ(env->pypi_dependencies.size(), 2u);
  EXPECT_EQ(env->pypi_dependencies[0].text, "torch==2.4.0+cu121");
  EXPECT_EQ(env->pypi_dependencies[0].location.to_string(), "environment.yml:10:7");
  EXPECT_TRUE(env->pypi_dependencies[0].from_pip_list);
  EXPECT_EQ(env->pypi_dependencies[1].text, "jsonargparse[signatures]>=4.27.7");
  ASSERT_TRUE(env->pypi_indexes.has_value());
  EXPECT_EQ(m->pypi_indexes_for(*env), (std::vector<PypiLocation>{{"https://download.pytorch.org/whl/cu121", "https://download.pytorch.org/whl/cu121"}}));
  ASSERT_EQ(m->warnings.size(), 2u);
  EXPECT_NE(m->warnings[0].find("key 'prefix' of environment.yml is ignored"), std::string::npos) << m->warnings[0];
  EXPECT_NE(m->warnings[1].find("environment.yml:8:5: 1 pip requirement of environment 'default' carried unresolved "
                                "into the lockfile (paths, URLs and editable lines are not resolved)"),
            std::string::npos)
      << m->warnings[1];
}

// A `pip:` list as `pip install -r` reads it: option lines and paths/URLs that name no project
// get no invented name; an archive's file name gives one; every URL is credential-free.
TEST(EnvironmentYml, PipLinesAreReadAsPipReadsThemWithoutCredentials) {
  auto m = parse_manifest(
      "channels: [conda-forge]\n"
      "dependencies:\n"
      "  - pip:\n"
      "    - -e .\n"
      "    - --extra-index-url https://bob:PW_SECRET_888@pypi.corp.example.com/simple\n"
      "    - -r requirements-dev.txt\n"
      "    - https://carol:TOKEN_SECRET_999@files.example.com/dl/Foo.Bar-1.0.tar.gz\n"
      "    - https://files.example.com/whl/torch-2.4.0+cu121-cp311-cp311-linux_x86_64.whl#sha256=ab\n"
      "    - git+https://github.com/pydantic/pydantic@v2.0b2\n"
      "    - git+https://github.com/o/tool.git#egg=The_Tool\n"
      "    - ./vendor/Foo_Baz-2.0-py3-none-any.whl\n"
      "    - ../src/mylib\n"
      "    - https://github.com/o/r/archive/refs/heads/main.zip\n"
      "    - mypkg @ git+https://alice:ghp_SECRET777@github.com/acme/mypkg.git@main\n"
      "    - Requests==2.31.0\n",
      "environment.yml", "/proj");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const auto& pip = m->environment("default")->pip;
  // The index option makes the list resolvable (issue 20 point 1): it and the PEP 508 line
  // Requests==2.31.0 leave the carried lines for the PyPI model.
  ASSERT_EQ(pip.size(), 10u);
  EXPECT_EQ(m->environment("default")->pypi_dependencies.size(), 1u);
  EXPECT_EQ(m->pypi_indexes_for(*m->environment("default")).at(0).written, "https://pypi.corp.example.com/simple");
  EXPECT_EQ(m->pypi_indexes_for(*m->environment("default")).at(0).url, "https://bob:PW_SECRET_888@pypi.corp.example.com/simple");
  struct Want {
    std::string name, version, url, requirement;
  };
  const std::vector<Want> want = {
      {"", "", "", "-e ."},
      {"", "", "", "-r requirements-dev.txt"},
      {"foo-bar", "", "https://files.example.com/dl/Foo.Bar-1.0.tar.gz", "https://files.example.com/dl/Foo.Bar-1.0.tar.gz"},
      {"torch", "", "https://files.example.com/whl/torch-2.4.0+cu121-cp311-cp311-linux_x86_64.whl#sha256=ab",
       "https://files.example.com/whl/torch-2.4.0+cu121-cp311-cp311-linux_x86_64.whl#sha256=ab"},
      {"", "", "git+https://github.com/pydantic/pydantic@v2.0b2", "git+https://github.com/pydantic/pydantic@v2.0b2"},
      {"the-tool", "", "git+https://github.com/o/tool.git#egg=The_Tool", "git+https://github.com/o/tool.git#egg=The_Tool"},
      {"foo-baz", "", "", "./vendor/Foo_Baz-2.0-py3-none-any.whl"},
      {"", "", "", "../src/mylib"},
      {"", "", "https://github.com/o/r/archive/refs/heads/main.zip", "https://github.com/o/r/archive/refs/heads/main.zip"},
      {"mypkg", "", "git+https://github.com/acme/mypkg.git@main", "mypkg @ git+https://github.com/acme/mypkg.git@main"},
  };
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(pip[i].name, want[i].name) << i << ": " << pip[i].requirement;
    EXPECT_EQ(pip[i].version, want[i].version) << i;
    EXPECT_EQ(pip[i].url, want[i].url) << i;
    EXPECT_EQ(pip[i].requirement, want[i].requirement) << i;
  }
  // The credentials do not enter the manifest hash either: a rotated token keeps the lock fresh.
  auto rotated = parse_manifest(
      "channels: [conda-forge]\n"
      "dependencies:\n"
      "  - pip:\n"
      "    - --extra-index-url https://bob:ROTATED@pypi.corp.example.com/simple\n"
      "    - mypkg @ git+https://alice:ROTATED@github.com/acme/mypkg.git@main\n",
      "environment.yml", "/proj");
  auto clean = parse_manifest(
      "channels: [conda-forge]\n"
      "dependencies:\n"
      "  - pip:\n"
      "    - --extra-index-url https://pypi.corp.example.com/simple\n"
      "    - mypkg @ git+https://github.com/acme/mypkg.git@main\n",
      "environment.yml", "/proj");
  ASSERT_TRUE(rotated.ok() && clean.ok());
  EXPECT_EQ(manifest_hash(*rotated), manifest_hash(*clean));
  for (const auto& w : rotated->warnings) EXPECT_EQ(w.find("ROTATED"), std::string::npos) << w;
}

TEST(EnvironmentYml, MambaSelectors) {
  auto m = parse_manifest("channels: [conda-forge]\ndependencies:\n  - sel(osx): appnope\n  - python\n", "env.yml", "/p");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const auto& deps = m->environment("default")->dependencies;
  ASSERT_EQ(deps.size(), 2u);
  EXPECT_EQ(deps[0].text, "appnope");
  EXPECT_EQ(deps[0].selector, "osx");
  EXPECT_EQ(deps[0].location.to_string(), "env.yml:3:15");
  EXPECT_TRUE(deps[0].applies_to("osx-arm64"));
  EXPECT_FALSE(deps[0].applies_to("linux-64"));
  auto bad = parse_manifest("channels: [conda-forge]\ndependencies:\n  - sel(plan9): x\n", "env.yml", "/p");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().where, "env.yml:3:5");
  EXPECT_EQ(bad.error().message, "unknown selector 'sel(plan9)'");
}

TEST(EnvironmentYml, NoChannelsMeansCondaDefaults) {
  auto m = parse_manifest("dependencies: [python]\n", "environment.yml", "/p");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  ASSERT_EQ(m->channels.size(), 2u);
  EXPECT_EQ(m->channels[0].spelling, "defaults");
  EXPECT_EQ(m->warnings.size(), 1u);
}

TEST(EnvironmentYml, VirtualPackagesFileIsRefusedWithAReason) {
  auto m = parse_manifest("subdirs:\n  linux-64:\n    packages:\n      __glibc: 2.17\n", "virtual-packages.yml", "/p");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().where, "virtual-packages.yml:1:1");
  EXPECT_EQ(m.error().message, "this is a conda-lock virtual-packages file, not an environment file");
}

TEST(EnvironmentYml, LoadsFromDiskWithRelativeChannels) {
  const fs::path dir = fs::temp_directory_path() / ("envlock-manifest-" + std::to_string(::getpid()));
  fs::create_directories(dir / "chan");
  {
    std::ofstream(dir / "environment.yml") << "channels: [./chan]\ndependencies: [zlib]\n";
  }
  auto m = load_manifest(dir / "environment.yml");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->channels[0].local_path(), (dir / "chan").lexically_normal());
  EXPECT_EQ(m->path, dir / "environment.yml");
  fs::remove_all(dir);
}

// ---- the manifest hash ---------------------------------------------------------------------

std::string hash_of(const std::string& text) {
  auto m = parse(text);
  EXPECT_TRUE(m.ok()) << (m ? "" : m.error().to_string());
  return m ? manifest_hash(*m) : "";
}

TEST(ManifestHash, IgnoresPresentationButNotSolveInputs) {
  const std::string base = "channels: [conda-forge, bioconda]\nplatforms: [linux-64, osx-64]\ndependencies: [numpy >=2, python 3.12.*]\n";
  const std::string h = hash_of(base);
  ASSERT_TRUE(h.starts_with("sha256:"));
  EXPECT_EQ(h.size(), 7u + 64u);
  // Same solve inputs, different presentation.
  EXPECT_EQ(h, hash_of("# a comment\nname: other\nplatforms: [osx-64, linux-64]\n"
                       "dependencies:\n  - python 3.12.*\n  - numpy >=2\nchannels: [conda-forge, bioconda]\n"
                       "reference: {command: x, metric: y}\n"));
  // Solve inputs.
  EXPECT_NE(h, hash_of("channels: [bioconda, conda-forge]\nplatforms: [linux-64, osx-64]\ndependencies: [numpy >=2, python 3.12.*]\n"));
  EXPECT_NE(h, hash_of("channels: [conda-forge, bioconda]\nplatforms: [linux-64]\ndependencies: [numpy >=2, python 3.12.*]\n"));
  EXPECT_NE(h, hash_of("channels: [conda-forge, bioconda]\nplatforms: [linux-64, osx-64]\ndependencies: [numpy >=2.1, python 3.12.*]\n"));
  EXPECT_NE(h, hash_of(base + "channel-priority: disabled\n"));
  EXPECT_NE(h, hash_of(base + "virtual-packages: {linux-64: [__cuda=12.4]}\n"));
  EXPECT_NE(hash_of(base + "virtual-packages: {linux-64: [__cuda=12.4]}\n"),
            hash_of(base + "virtual-packages: {linux-64: [__cuda=12.6]}\n"));
}

TEST(ManifestHash, CredentialsDoNotChangeIt) {
  EXPECT_EQ(hash_of("channels: [https://a:b@host.example/t/tok1/c]\ndependencies: [x]\n"),
            hash_of("channels: [https://host.example/t/tok2/c]\ndependencies: [x]\n"));
}

// A binary file given as the manifest is named as not text, with the first bad byte's place —
// not "the manifest is empty" (which is what yaml-cpp makes of it).
TEST(Manifest, BinaryBytesAreNotText) {
  const std::string bytes("PK\x03\x04\x14\x00\x00\x00", 8);
  auto m = parse_manifest(bytes, "envlock.yaml", "/p");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().where, "envlock.yaml:1:3");
  EXPECT_NE(m.error().message.find("is not a text (YAML) file"), std::string::npos) << m.error().to_string();
  EXPECT_NE(m.error().message.find("0x03"), std::string::npos);
  auto later = parse_manifest(std::string("channels: [c]\nde\x00p: x\n", 22), "e.yaml", "/p");
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.error().where, "e.yaml:2:3");
}

// A byte that is not UTF-8 is named at its place (the fuzz target `manifest` found that
// "c\xefnda-forge" reached the manifest hash's JSON and ended as "internal: ... invalid UTF-8").
TEST(Manifest, InvalidUtf8IsNamedAtItsPlace) {
  auto m = parse_manifest("channels:\n  - c\xefnda-forge\ndependencies: [python]\n", "envlock.yaml", "/p");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().to_string(),
            "envlock.yaml:2:6: is not UTF-8 text: the byte 0xEF is not part of a valid UTF-8 character\n"
            "hint: save the manifest as UTF-8 (YAML files are Unicode text)");
  // Latin-1 "é" on the first line; a truncated 4-byte sequence at the very end.
  auto latin1 = parse_manifest("name: caf\xe9\n", "e.yaml", "/p");
  ASSERT_FALSE(latin1.ok());
  EXPECT_EQ(latin1.error().where, "e.yaml:1:10");
  auto cut = parse_manifest("name: x\ndependencies: [python]\n# \xf0\x9f\x98", "e.yaml", "/p");
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().where, "e.yaml:3:3");
  // Valid UTF-8 everywhere (a comment, a name) is still read.
  EXPECT_TRUE(parse_manifest("name: caf\xc3\xa9 \xf0\x9f\x98\x80\ndependencies: [python]  # \xe2\x9c\x93\n", "e.yaml", "/p").ok());
}

// `https://` alone (no host) is refused where it is written, not later by the downloader.
TEST(Manifest, ChannelUrlWithoutHostIsRefusedAtItsPlace) {
  for (const char* url : {"https://", "http:///conda-forge", "https://user@", "file://"}) {
    auto m = parse_manifest(std::string("channels:\n  - \"") + url + "\"\ndependencies: [python]\n", "envlock.yaml", "/p");
    ASSERT_FALSE(m.ok()) << url;
    EXPECT_EQ(m.error().where, "envlock.yaml:2:5") << url << ": " << m.error().to_string();
    EXPECT_TRUE(m.error().message.find("has no host name") != std::string::npos ||
                m.error().message.find("has no path") != std::string::npos)
        << m.error().to_string();
  }
  EXPECT_TRUE(parse_manifest("channels: [\"https://conda.anaconda.org/conda-forge\"]\ndependencies: [python]\n",
                             "envlock.yaml", "/p").ok());
}

// Specs in a flow list are located at their first character, not at the `[` or `,` before them.
TEST(Manifest, FlowListSpecsAreLocatedAtTheirFirstCharacter) {
  auto m = parse_manifest("channels: [conda-forge]\nplatforms: [linux-64]\ndependencies: [does-not-exist, python]\n",
                          "envlock.yaml", "/p");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const auto& deps = m->environment("default")->dependencies;
  ASSERT_EQ(deps.size(), 2u);
  EXPECT_EQ(deps[0].location.to_string(), "envlock.yaml:3:16");
  EXPECT_EQ(deps[1].location.to_string(), "envlock.yaml:3:32");
}

}  // namespace
}  // namespace envlock

namespace envlock {
namespace {
// issue 20 point 1: `pypi-dependencies:` beside `dependencies:`, `pypi-indexes:` (first primary)
// and `find-links:` at the top level or per environment; index credentials are kept for fetching
// only (the written spelling is credential-free), a relative find-links folder is resolved
// against the manifest's folder and written as written; the manifest hash covers them.
TEST(PypiManifest, DependenciesIndexesAndFindLinks) {
  const std::string text =
      "channels: [conda-forge]\n"
      "pypi-indexes: [https://u:TOKEN@pypi.corp.example.com/simple, https://pypi.org/simple]\n"
      "dependencies: [python 3.11.*]\n"
      "pypi-dependencies: [\"requests>=2.31\", \"rich[jupyter]; python_version >= '3.9'\"]\n"
      "environments:\n"
      "  train:\n"
      "    dependencies: [python 3.11.*]\n"
      "    pypi-dependencies: [torch==2.4.1]\n"
      "    find-links: [./wheels]\n";
  auto m = parse_manifest(text, "envlock.yaml", "/proj");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const auto* def = m->environment("default");
  ASSERT_EQ(def->pypi_dependencies.size(), 2u);
  EXPECT_EQ(def->pypi_dependencies[1].text, "rich[jupyter]; python_version >= '3.9'");
  EXPECT_EQ(def->pypi_dependencies[0].location.to_string(), "envlock.yaml:4:21");
  const auto ix = m->pypi_indexes_for(*def);
  ASSERT_EQ(ix.size(), 2u);
  EXPECT_EQ(ix[0].url, "https://u:TOKEN@pypi.corp.example.com/simple");
  EXPECT_EQ(ix[0].written, "https://pypi.corp.example.com/simple");
  const auto* train = m->environment("train");
  EXPECT_EQ(m->find_links_for(*train), (std::vector<PypiLocation>{{"/proj/wheels", "./wheels"}}));
  EXPECT_EQ(m->pypi_indexes_for(*train).size(), 2u);  // the top level's
  auto rotated = parse_manifest(text.substr(0, text.find("TOKEN")) + "OTHER" + text.substr(text.find("TOKEN") + 5), "envlock.yaml", "/proj");
  EXPECT_EQ(manifest_hash(*m), manifest_hash(*rotated));
  auto bad = parse_manifest("channels: [c]\ndependencies: [python]\npypi-dependencies: [./local]\n", "envlock.yaml", "/proj");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().where, "envlock.yaml:3:21");
  auto http = parse_manifest("channels: [c]\ndependencies: [python]\npypi-indexes: [http://pypi.example.com/simple]\n", "envlock.yaml", "/proj");
  ASSERT_FALSE(http.ok());
  // User info on plain http is the reason named, not the host (attack 23, F5); the token is not echoed.
  auto userinfo = parse_manifest("channels: [c]\ndependencies: [python]\npypi-indexes: [\"http://user:s3cr3t@127.0.0.1:8/simple\"]\n",
                                 "envlock.yaml", "/proj");
  ASSERT_FALSE(userinfo.ok());
  EXPECT_EQ(userinfo.error().to_string(),
            "envlock.yaml:3:16: a PyPI index over plain http:// cannot carry user info (a name or token before "
            "`@`): it would be sent unencrypted\n"
            "  pypi-indexes: [\"http://127.0.0.1:8/simple\"]\n"
            "                 ^\n"
            "hint: use https:// for an index that needs credentials; plain http:// is allowed for 127.0.0.1 and "
            "localhost, without user info");
}

// Attack 22 A17: a control character written as a YAML escape in a double-quoted scalar (or a raw
// C1, or a block scalar's line break) passed the check that refuses raw control bytes, and went
// on into names, specs, lockfiles and terminals. Refused after unescaping, at file:line:col,
// naming the key path; the error quotes nothing raw.
TEST(Manifest, ControlCharactersWrittenAsEscapesAreRefusedNamingTheKey) {
  const std::string head = "channels: [conda-forge]\nplatforms: [linux-64]\n";
  struct Case {
    std::string text, error;
  };
  const std::vector<Case> cases = {
      {"name: \"ex\\x07ample\"\n" + head + "dependencies: [numpy]\n",
       "envlock.yaml:1:7: the value of `name` holds the control character U+0007 (character 3 of the value, as YAML "
       "reads it)\n  name: \"ex\\x07ample\"\n        ^"},
      {head + "dependencies: [numpy]\nenvironments:\n  gpu:\n    dependencies: [numpy, \"py\\ethon\"]\n",
       "envlock.yaml:6:27: the value of `environments.gpu.dependencies[1]` holds the control character U+001B "
       "(character 3 of the value, as YAML reads it)\n      dependencies: [numpy, \"py\\ethon\"]\n                  "
       "          ^"},
      {head + "dependencies: [\"numpy\\u0085\"]\n",
       "envlock.yaml:3:16: the value of `dependencies[0]` holds the control character U+0085 (character 6 of the "
       "value, as YAML reads it)\n  dependencies: [\"numpy\\u0085\"]\n                 ^"},
      {head + "dependencies: [numpy]\nvariables:\n  \"A\\u009bB\": \"1\"\n",
       "envlock.yaml:5:3: the key 'A\\xc2\\x9bB' of `variables` holds the control character U+009B (character 2 of "
       "the key, as YAML reads it)\n    \"A\\u009bB\": \"1\"\n    ^"},
      {head + "dependencies: [numpy]\nvariables:\n  A: \"x\\x1b]0;title\\x07\"\n",
       "envlock.yaml:5:6: the value of variable 'A' holds the control character U+001B (character 2 of the value, as "
       "YAML reads it)\n    A: \"x\\x1b]0;title\\x07\"\n       ^"},
      {"name: \"a\\nerror: forged\"\n" + head + "dependencies: [numpy]\n",
       "envlock.yaml:1:7: the value of `name` holds a newline\n  name: \"a\\nerror: forged\"\n        ^"},
  };
  for (const auto& c : cases) {
    auto m = parse(c.text);
    ASSERT_FALSE(m.ok()) << c.text;
    EXPECT_EQ(m.error().kind, ErrorKind::Parse);
    EXPECT_EQ(m.error().to_string(),
              c.error + "\nhint: manifest keys and values are printable text: remove the escape (\\a, \\e, \\n, \\x.., "
                        "\\u..) or the line break from the string")
        << c.text;
  }
  // A tab is text; a raw C1 byte pair is refused as its escape is.
  EXPECT_TRUE(parse(head + "name: \"a\\tb\"\ndependencies: [numpy]\n").ok());
  EXPECT_FALSE(parse(head + "name: \"a\xc2\x85" "b\"\ndependencies: [numpy]\n").ok());
}

// Attack 22 A8: an error quotes a value cut to a readable length (its start, `…`, its end), and an
// excerpt is a window around the caret: a 1 MB dependency was printed whole, three times.
TEST(Manifest, ALongValueIsQuotedCutInErrors) {
  const std::string big(1'000'000, '>');
  auto m = parse("channels: [conda-forge]\nplatforms: [linux-64]\ndependencies:\n  - \"numpy " + big + "\"\n");
  ASSERT_FALSE(m.ok());
  const std::string text = m.error().to_string();
  EXPECT_LT(text.size(), 1500u) << text.size();
  std::size_t longest = 0;
  for (std::size_t start = 0, end; start <= text.size(); start = end + 1) {
    end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    longest = std::max(longest, end - start);
  }
  EXPECT_LE(longest, 270u);  // file:line:col, then at most 240 bytes and an ellipsis
  const std::string g(135, '>'), t(13, '>'), w(234, '>');
  EXPECT_EQ(text, "envlock.yaml:4:5: invalid MatchSpec 'numpy " + g + "…" + t +
                      "' at character 1: invalid operator; use one of == != < <= > >= ~= =\n"
                      "    - \"numpy " + std::string(229, '>') + "…\n      ^\n"
                      "  numpy " + w + "…\n        ^\n"
                      "hint: a match spec looks like 'numpy >=1.26,<2', 'numpy=1.26=py312*', "
                      "'conda-forge::numpy 1.26.* py312*' or 'numpy[version=\">=1.26\"]'");
  // A long key far along its line: the window starts with `…` and the caret stays under it.
  auto k = parse("channels: [conda-forge]\n" + std::string(100'000, 'k') + ": 1\ndependencies: [x]\n");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().to_string().substr(k.error().to_string().find('\n') + 1),
            "  …" + std::string(80, 'k') + ": 1\n" + std::string(83, ' ') + "^\nhint: fix the YAML syntax at this place");
}

// Attack 22 A8: YAML nested 100,000 levels deep is a clear error, never a stack overflow
// (yaml-cpp 0.7 stops at 500 levels; the manifest's own walk of the tree keeps an explicit stack).
TEST(Manifest, DeeplyNestedYamlIsAClearError) {
  for (const std::string& text : {"name: x\nchannels: " + std::string(100'000, '[') + "\n",
                                  "name: x\nchannels: " + std::string(100'000, '{') + "\n",
                                  "name: x\nchannels: [" + std::string(3000, '[') + std::string(3000, ']') + "]\n"}) {
    auto m = parse(text);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.error().message, "invalid YAML: lists and maps nested more than 500 levels deep");
    EXPECT_EQ(m.error().hint, "no manifest, lockfile or snapshot nests this deep: is this the right file?");
    EXPECT_LE(m.error().to_string().size(), 800u);
  }
  // 400 levels are YAML yaml-cpp reads: refused by the manifest's rules, not by a crash.
  auto m = parse("name: x\nchannels: [conda-forge]\ndependencies: [numpy]\nvariables: " + std::string(400, '[') +
                 std::string(400, ']') + "\n");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message, "variables must be a map of name -> value, found a list");
}
}  // namespace
}  // namespace envlock
