// The one YAML emitter (src/yaml/emit.hpp): every string it writes reads back as the same string
// under yaml-cpp (YAML 1.2), envlock's one-pass block reader, and PyYAML (YAML 1.1, the library
// conda-lock reads and writes its lockfiles with), in block and flow context, as a value and as a
// key; and BlockWriter's layout, compared whole.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "block_yaml.hpp"
#include "emit.hpp"

namespace envlock::yaml {
namespace {

/// Strings a careless emitter gets wrong: YAML 1.1 and 1.2 numbers, booleans and nulls in
/// their spellings, indicators, comments, map separators, white space, escapes, non-ASCII
/// text, the characters YAML 1.1 reads as line breaks (NEL, LS, PS) and C1 controls.
std::vector<std::string> tricky_strings() {
  std::vector<std::string> v = {
      "", " ", "  lead", "trail ", "1", "1.10", "2", "-1", "+1", ".5", "1e3", "0x1f", "0o17", "017", "1_000",
      "12:30:00", "1:20", ".inf", "-.inf", ".NaN", "y", "Y", "n", "N", "yes", "Yes", "YES", "no", "No", "on",
      "On", "off", "OFF", "true", "True", "false", "FALSE", "null", "Null", "NULL", "~", "<<", "=", "-", "--",
      "---", "...", "- a", "? a", ": a", "a: b", "a:b", "a:", "a #b", "a#b", "#a", "&a", "*a", "!a", "!!str",
      "|", ">", "%a", "@a", "`a", "'a'", "\"a\"", "a'b", "a\"b", "a\\b", "[a]", "{a}", "a, b", "a,b", "a]",
      "a}", "a\nb", "a\n", "\n", "a\tb", "a\rb", "a\x01z", "\x7f", "\x1b[2J", "caf\xc3\xa9", "\xe6\x97\xa5",
      "a\xc2\x85z", "a\xe2\x80\xa8z", "a\xe2\x80\xa9z", "a\xc2\x9bz", "\xef\xbb\xbf" "a", "numpy >=1.26,<2",
      "python 3.12.*", "https://conda.anaconda.org/conda-forge/linux-64/numpy-1.26.4-py312h_0.conda",
      "lib/python3.12/site-packages/a b/c.py", "__glibc=2.28=0", "sha256:abc", "./chan", "~/x", "/abs/path",
      "C:\\Windows", "BSD-3-Clause AND \"quoted\" \\ back: slash #1",
  };
  for (int c = 1; c < 0x80; ++c) {
    v.push_back(std::string(1, static_cast<char>(c)));
    v.push_back("a" + std::string(1, static_cast<char>(c)) + "b");
  }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

/// The documents each string is written into: a block value, a block key, a flow list item.
std::vector<std::string> documents(const std::string& s) {
  return {"k: " + scalar(s) + "\n", scalar(s) + ": v\n", "k: [" + scalar(s, Context::Flow) + ", x]\n"};
}

std::string read_back_yaml_cpp(const YAML::Node& root, int form) {
  if (form == 0) return root["k"].as<std::string>();
  if (form == 1) return root.begin()->first.as<std::string>();
  return root["k"][0].as<std::string>();
}

TEST(YamlEmit, EveryStringReadsBackUnderYamlCppAndTheBlockReader) {
  for (const auto& s : tricky_strings()) {
    const auto docs = documents(s);
    for (int form = 0; form < 3; ++form) {
      const std::string& text = docs[static_cast<std::size_t>(form)];
      YAML::Node root;
      ASSERT_NO_THROW(root = YAML::Load(text)) << text;
      EXPECT_EQ(read_back_yaml_cpp(root, form), s) << text;
      if (form == 2) continue;  // the block reader takes flow lists back to yaml-cpp
      auto fast = block_yaml::parse_block_yaml(text);
      ASSERT_TRUE(fast.has_value()) << text;
      const auto [key, value] = *fast->root().entries().begin();
      const auto node = form == 0 ? value : key;
      EXPECT_EQ(std::string(node.Scalar()), s) << text;
    }
  }
}

// PyYAML (YAML 1.1) is the reader conda-lock users have: `1.10` is a float there, `yes` and `on`
// booleans, `12:30` a sexagesimal integer, NEL/LS/PS line breaks, C1 controls refused outright.
TEST(YamlEmit, EveryStringReadsBackUnderPyYaml) {
  if (std::system("/usr/bin/python3 -c 'import yaml' 2>/dev/null") != 0)
    GTEST_SKIP() << "Debian's PyYAML (python3-yaml, installed by scripts/setup) is absent: /usr/bin/python3 -c 'import yaml' failed";
  const auto strings = tricky_strings();
  std::string text;
  for (std::size_t i = 0; i < strings.size(); ++i) {
    text += "v" + std::to_string(i) + ": " + scalar(strings[i]) + "\n";
    text += "f" + std::to_string(i) + ": [" + scalar(strings[i], Context::Flow) + "]\n";
    text += scalar(strings[i]) + ": key" + std::to_string(i) + "\n";
  }
  const auto dir = std::filesystem::temp_directory_path() / ("envlock-emit-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "in.yaml", std::ios::binary) << text;
  }
  // Every scalar as JSON with \u escapes (ensure_ascii), so bytes compare exactly.
  const std::string cmd = "/usr/bin/python3 -c 'import json,sys,yaml; d=yaml.safe_load(open(sys.argv[1],\"rb\"));"
                          "json.dump({str(k): v for k, v in d.items()}, open(sys.argv[2],\"w\"))' " +
                          (dir / "in.yaml").string() + " " + (dir / "out.json").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "PyYAML could not read what envlock wrote";
  std::ifstream in(dir / "out.json");
  const auto j = nlohmann::json::parse(in);
  std::filesystem::remove_all(dir);
  for (std::size_t i = 0; i < strings.size(); ++i) {
    const auto& s = strings[i];
    const auto v = j.at("v" + std::to_string(i));
    ASSERT_TRUE(v.is_string()) << scalar(s) << " read as " << v.dump();
    EXPECT_EQ(v.get<std::string>(), s) << scalar(s);
    const auto f = j.at("f" + std::to_string(i));
    ASSERT_TRUE(f.is_array() && f.size() == 1 && f[0].is_string()) << scalar(s, Context::Flow) << " read as " << f.dump();
    EXPECT_EQ(f[0].get<std::string>(), s) << scalar(s, Context::Flow);
    ASSERT_TRUE(j.contains(s)) << scalar(s) << " as a key was not read back as that string";
    EXPECT_EQ(j.at(s), "key" + std::to_string(i));
  }
}

TEST(YamlEmit, QuotingPolicy) {
  EXPECT_EQ(scalar("numpy"), "numpy");
  EXPECT_EQ(scalar("numpy >=1.26,<2"), "numpy >=1.26,<2");
  EXPECT_EQ(scalar("numpy >=1.26,<2", Context::Flow), "\"numpy >=1.26,<2\"");
  EXPECT_EQ(scalar("1.26.4"), "\"1.26.4\"");
  EXPECT_EQ(scalar("Yes"), "\"Yes\"");
  EXPECT_EQ(scalar("a\x01\"\\\n\t\r\x7f" "b"), "\"a\\x01\\\"\\\\\\n\\t\\r\\x7fb\"");
  EXPECT_EQ(scalar("a\xe2\x80\xa8z\xc2\x85"), "\"a\\u2028z\\u0085\"");
  EXPECT_EQ(scalar("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(single_quoted("it's"), "'it''s'");
  EXPECT_EQ(single_quoted("a\nb"), "\"a\\nb\"");
}

TEST(YamlEmit, BlockWriterLayout) {
  BlockWriter w;
  w.comment("written by a test");
  w.kv_num("version", std::uint64_t{1});
  w.kv("name", "1.0");
  w.kv_nonempty("skipped", "");
  w.open("map");
  w.kv_bool("flag", true);
  w.open("empty", true, "{}");
  w.close();
  w.list("none", {});
  w.list("items", {"a", "yes"});
  w.open("records");
  w.begin_item_map();
  w.kv("name", "x");
  w.kv_raw("size", "12");
  w.end_item_map();
  w.begin_item();
  w.raw("[");
  w.flow_scalar("a,b");
  w.raw(", ~]");
  w.end_line();
  w.close();
  w.close();
  w.begin_value("last");
  w.raw("{a: 1}");
  w.end_line();
  EXPECT_EQ(w.take(),
            "# written by a test\n"
            "version: 1\n"
            "name: \"1.0\"\n"
            "map:\n"
            "  flag: true\n"
            "  empty: {}\n"
            "  none: []\n"
            "  items:\n"
            "    - a\n"
            "    - \"yes\"\n"
            "  records:\n"
            "    - name: x\n"
            "      size: 12\n"
            "    - [\"a,b\", ~]\n"
            "last: {a: 1}\n");
}

}  // namespace
}  // namespace envlock::yaml
