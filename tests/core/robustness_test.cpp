// Bad bytes never crash the parsers: a fixed-seed stream of strings built from the characters
// that matter to versions and specs (and some that do not) goes through every parser. Whatever
// parses must round-trip; whatever fails must fail with a Parse error that names the input.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "envlock/match_spec.hpp"
#include "envlock/version.hpp"

namespace envlock {
namespace {

std::string random_text(std::mt19937& rng, std::string_view alphabet, std::size_t max_len) {
  std::uniform_int_distribution<std::size_t> len(0, max_len);
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  std::string s(len(rng), ' ');
  for (char& c : s) c = alphabet[pick(rng)];
  return s;
}

TEST(Robustness, RandomVersionsAndConstraints) {
  std::mt19937 rng(20240611);
  const std::string_view alphabet = "0123456789..__--++!!**abcdeprvostABC ,|()=<>~^$@#\x01\xff";
  std::size_t parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string text = random_text(rng, alphabet, 14);
    if (auto v = Version::parse(text)) {
      ++parsed;
      auto back = Version::parse(v->to_string());
      ASSERT_TRUE(back) << text;
      EXPECT_EQ(*back, *v) << text;
    } else {
      EXPECT_EQ(v.error().kind, ErrorKind::Parse);
      EXPECT_NE(v.error().message.find("'" + text + "'"), std::string::npos) << v.error().message;
    }
    if (auto s = VersionSpec::parse(text)) {
      ++parsed;
      auto back = VersionSpec::parse(s->to_string());
      ASSERT_TRUE(back) << text << " -> " << s->to_string();
      EXPECT_EQ(*back, *s) << text << " -> " << s->to_string();
      (void)s->matches(Version());
    } else {
      EXPECT_EQ(s.error().kind, ErrorKind::Parse);
    }
  }
  EXPECT_GT(parsed, 1000u);  // the stream is not all garbage
}

TEST(Robustness, RandomMatchSpecs) {
  std::mt19937 rng(7);
  const std::string_view alphabet = "pkgnumy0123456789..__-*  ,|()=<>!~[]'\"::/#@^$ab+";
  std::size_t parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string text = random_text(rng, alphabet, 24);
    auto m = MatchSpec::parse(text);
    if (!m) {
      EXPECT_EQ(m.error().kind, ErrorKind::Parse) << text;
      continue;
    }
    ++parsed;
    const std::string canonical = m->to_string();
    auto back = MatchSpec::parse(canonical);
    ASSERT_TRUE(back) << text << " -> " << canonical << ": " << back.error().to_string();
    EXPECT_EQ(*back, *m) << text << " -> " << canonical;
  }
  EXPECT_GT(parsed, 500u);
}

}  // namespace
}  // namespace envlock
