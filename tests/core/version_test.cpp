// Version and VersionSpec against conda's own test tables (tests/models/test_version.py).
#include <gtest/gtest.h>

#include "envlock/match_spec.hpp"
#include "envlock/version.hpp"

namespace envlock {
namespace {

Version V(const char* s) {
  auto v = Version::parse(s);
  EXPECT_TRUE(v) << s << ": " << (v ? "" : v.error().to_string());
  return v ? *v : Version{};
}

TEST(Version, CondaOrderingTable) {
  // conda test_version.py: each line is greater than the one before, or equal when marked "==".
  const std::vector<std::pair<bool, const char*>> table = {
      {false, "0.4"},        {true, "0.4.0"},      {false, "0.4.1.rc"},  {true, "0.4.1.RC"},
      {false, "0.4.1"},      {false, "0.5a1"},     {false, "0.5b3"},     {false, "0.5C1"},
      {false, "0.5z"},       {false, "0.5za"},     {false, "0.5"},       {false, "0.5_5"},
      {true, "0.5-5"},       {false, "0.9.6"},     {false, "0.960923"},  {false, "1.0"},
      {false, "1.1dev1"},    {false, "1.1_"},      {false, "1.1a1"},     {false, "1.1.0dev1"},
      {true, "1.1.dev1"},    {false, "1.1.a1"},    {false, "1.1.0rc1"},  {true, "1.1.rc1"},
      {false, "1.1.0"},      {true, "1.1"},        {false, "1.1.0post1"}, {true, "1.1.post1"},
      {false, "1.1post1"},   {false, "1996.07.12"}, {false, "1!0.4.1"},  {false, "1!3.1.1.6"},
      {false, "2!0.4.1"}};
  for (std::size_t i = 1; i < table.size(); ++i) {
    Version prev = V(table[i - 1].second), cur = V(table[i].second);
    if (table[i].first) {
      EXPECT_EQ(prev, cur) << table[i - 1].second << " == " << table[i].second;
    } else {
      EXPECT_LT(prev, cur) << table[i - 1].second << " < " << table[i].second;
    }
  }
}

TEST(Version, KeepsSpellingComparesByValue) {
  Version a = V("1.00"), b = V("1.0");
  EXPECT_EQ(a.to_string(), "1.00");
  EXPECT_EQ(a, b);
  EXPECT_EQ(V("1.0"), V("1.0.0"));
  EXPECT_LT(V("1.1"), V("1.1.1"));
  EXPECT_LT(V("1.0dev"), V("1.0a"));
  EXPECT_LT(V("1.0a"), V("1.0b"));
  EXPECT_LT(V("1.0b"), V("1.0rc"));
  EXPECT_LT(V("1.0rc1"), V("1.0"));
  EXPECT_LT(V("1.0"), V("1.0post1"));
  EXPECT_LT(V("1.0.*"), V("1.0.dev"));  // '*' sorts before every other string
  EXPECT_EQ(V("1.0A"), V("1.0a"));
  EXPECT_EQ(V("1_2"), V("1.2"));
  EXPECT_EQ(V("1-2"), V("1.2"));
  EXPECT_LT(V("1.2+1"), V("1.2+2"));
  EXPECT_LT(V("1.2"), V("1.2+1"));
  EXPECT_LT(V("1.2+abc"), V("1.2"));  // conda: a string local part sorts below the empty one
  EXPECT_LT(V("9.9"), V("1!0.1"));
  EXPECT_LT(V("20231231"), V("123456789012345678901234567890"));  // beyond 64 bits
  EXPECT_EQ(V(" 1.2 ").to_string(), "1.2");
  // conda's trailing '_' rule, including an empty last piece.
  EXPECT_EQ(V("1._").release().size(), 2u);
  EXPECT_EQ(V("1._"), V("1.0_"));
  EXPECT_EQ(V("_").release().size(), 1u);
  EXPECT_LT(V("1.0_"), V("1.0"));
  EXPECT_EQ(V("1.0-"), V("1.0_"));
  EXPECT_EQ(V("2!1.2+local.7").epoch(), 2u);
  EXPECT_EQ(V("2!1.2+local.7").local().size(), 2u);
}

TEST(Version, ParseErrorsNameInputPositionAndRule) {
  struct Bad {
    const char* text;
    std::size_t column;  // 1-based, as printed
    const char* rule;
  };
  for (const Bad& b : std::vector<Bad>{{"", 1, "empty version string"},
                                      {"1.2 3", 4, "invalid character ' '"},
                                      {"1.2-3_4", 4, "invalid character '-'"},
                                      {"1.2@3", 4, "invalid character '@'"},
                                      {"a!1.2", 1, "epoch must be an integer"},
                                      {"1!2!3", 4, "duplicated epoch separator"},
                                      {"1.2+a+b", 6, "duplicated local version separator"},
                                      {"+1.2", 1, "missing version before local"},
                                      {"1..2", 3, "empty version component"},
                                      {"1.2.", 5, "empty version component"},
                                      {"1.2+", 5, "empty version component"}}) {
    auto v = Version::parse(b.text);
    ASSERT_FALSE(v) << b.text;
    EXPECT_EQ(v.error().kind, ErrorKind::Parse);
    const std::string msg = v.error().message;
    EXPECT_NE(msg.find(std::string("'") + b.text + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("at character " + std::to_string(b.column)), std::string::npos) << msg;
    EXPECT_NE(msg.find(b.rule), std::string::npos) << msg;
  }
}

TEST(Version, StartsWithAndCompatible) {
  EXPECT_TRUE(V("1.2.3").starts_with(V("1.2")));
  EXPECT_TRUE(V("1.2").starts_with(V("1.2")));
  EXPECT_FALSE(V("1.20").starts_with(V("1.2")));
  EXPECT_TRUE(V("1.2a1").starts_with(V("1.2a")));
  EXPECT_TRUE(V("1.2a1").starts_with(V("1.2")));
  EXPECT_FALSE(V("1!1.2").starts_with(V("1.2")));
  EXPECT_TRUE(V("1.2+3.4").starts_with(V("1.2+3")));
  EXPECT_TRUE(V("1.7.1").compatible_with(V("1.7")));
  EXPECT_TRUE(V("1.9").compatible_with(V("1.7")));
  EXPECT_FALSE(V("2.0").compatible_with(V("1.7")));
  EXPECT_FALSE(V("1.6").compatible_with(V("1.7")));
  EXPECT_TRUE(V("1.7.9").compatible_with(V("1.7.1")));
  EXPECT_FALSE(V("1.8.0").compatible_with(V("1.7.1")));
  EXPECT_FALSE(V("3").compatible_with(V("1")));  // `~=1` has nothing to keep; conda fails it
}

bool M(const char* spec, const char* version) {
  auto s = VersionSpec::parse(spec);
  EXPECT_TRUE(s) << spec << ": " << (s ? "" : s.error().to_string());
  return s && s->matches(V(version));
}

TEST(VersionSpec, CondaMatchTable) {
  // conda test_version.py::test_match, version 1.7.1
  const std::vector<std::pair<const char*, bool>> table = {
      {"1.7*", true},        {"1.7.1", true},          {"1.7.0", false},        {"1.7", false},
      {"1.5*", false},       {">=1.5", true},          {"!=1.5", true},         {"!=1.7.1", false},
      {"==1.7.1", true},     {"==1.7", false},         {"==1.7.2", false},      {"==1.7.1.0", true},
      {"1.7*|1.8*", true},   {"1.8*|1.9*", false},     {">1.7,<1.8", true},     {">1.7.1,<1.8", false},
      {"^1.7.1$", true},     {"^1\\.7\\.1$", true},    {"^1\\.7\\.[0-9]+$", true}, {"^1\\.8.*$", false},
      {"^1\\.[5-8]\\.1$", true}, {"^[^1].*$", false},  {"^$", false},           {"^.*$", true},
      {"1.7.*|^0.*$", true}, {"1.6.*|^0.*$", false},   {"1.6.*|^0.*$|1.7.1", true}, {"^0.*$|1.7.1", true},
      {"*", true},           {"1.*.1", true},          {"1.5.*|>1.7,<1.8", true}, {"1.5.*|>1.7.1,<1.8", false},
      {"1.7.1rc1", false},   {"=1.7", true},           {"=1.7.1", true},        {"=1.7.2", false},
      {"~=1.7", true},       {"~=1.6", true},          {"~=1.7.2", false},      {"~=1.7.1", true},
      {"!=1.7.*", false},    {"!=1.6.*", true},        {">=1.7.*", true},       {"(1.6|1.7.1),>1", true},
      {"(1.6|1.7.0),>1", false}, {"< 1.8", true},      {">= 1.7.1 , < 2", true}};
  for (const auto& [spec, expected] : table) EXPECT_EQ(M(spec, "1.7.1"), expected) << spec;
}

TEST(VersionSpec, RoundTripAndNormalForm) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"1.2", "==1.2"},          {"1.2.*", "1.2.*"},         {"1.2*", "1.2.*"},
      {"=1.2", "1.2.*"},         {">= 1.2 , <2", ">=1.2,<2"}, {">1|<0,>=3", ">1|<0,>=3"},
      {"(>1|<0),>=3", "(>1|<0),>=3"}, {"((1.2))", "==1.2"},  {"!=1.2.*", "!=1.2.*"},
      {"~=1.2", "~=1.2"},        {"*", "*"},                 {"1.*.1", "1.*.1"},
      {"^1\\.2.*$", "^1\\.2.*$"}, {">=1,<2,!=1.5", ">=1,<2,!=1.5"}, {"1|2|3", "==1|==2|==3"}};
  for (const auto& [in, out] : cases) {
    auto s = VersionSpec::parse(in);
    ASSERT_TRUE(s) << in << ": " << s.error().to_string();
    EXPECT_EQ(s->to_string(), out) << in;
    auto back = VersionSpec::parse(s->to_string());
    ASSERT_TRUE(back) << s->to_string();
    EXPECT_EQ(*back, *s) << in;
  }
  EXPECT_EQ(VersionSpec::parse(">=1,<2")->op(), VersionSpec::Op::And);
  EXPECT_EQ(VersionSpec::parse(">=1,<2|3")->op(), VersionSpec::Op::Or);
  EXPECT_NE(*VersionSpec::parse(">=1"), *VersionSpec::parse(">1"));
  EXPECT_EQ(*VersionSpec::parse("==1.0"), *VersionSpec::parse("1.0.0"));
}

// A new-user attack (session 9): a spec nested 10,000 parentheses deep (in a manifest, or
// 200,000 in a repodata record's depends) crashed envlock with a stack overflow.
TEST(VersionSpec, NestingPastTheCapIsAParseErrorNotACrash) {
  const std::size_t cap = VersionSpec::kMaxNesting;
  auto nested = [](std::size_t n) { return std::string(n, '(') + ">=1" + std::string(n, ')'); };
  EXPECT_TRUE(VersionSpec::parse(nested(cap)).ok());
  auto deep = VersionSpec::parse(nested(cap + 1));
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().kind, ErrorKind::Parse);
  EXPECT_NE(deep.error().to_string().find("parentheses nested deeper than 64"), std::string::npos)
      << deep.error().to_string();
  EXPECT_FALSE(VersionSpec::parse(nested(100000)).ok());
  EXPECT_FALSE(MatchSpec::parse("lib " + nested(100000)).ok());
  EXPECT_EQ(VersionSpec::nesting(nested(7)), 7u);
  EXPECT_EQ(VersionSpec::nesting("(>=1,<2)|(>=3,(<4))"), 2u);
  EXPECT_EQ(VersionSpec::nesting(">=1"), 0u);
}

TEST(VersionSpec, ParseErrors) {
  struct Bad {
    const char* text;
    std::size_t column;
    const char* rule;
  };
  for (const Bad& b : std::vector<Bad>{{"", 1, "empty version constraint"},
                                      {">=1,", 5, "expected a version"},
                                      {"(>=1", 1, "unbalanced '('"},
                                      {">=1)", 4, "unbalanced ')'"},
                                      {"=>1", 1, "invalid operator"},
                                      {"!1.2", 1, "invalid operator"},
                                      {"~=1.2.*", 6, "'~=' cannot be combined with '.*'"},
                                      {">=1..2", 3, "empty version component"},
                                      {"1.2 3", 4, "a space inside a version"},
                                      {"^1.2", 1, "a regex must start with '^' and end with '$'"},
                                      {">=", 3, "missing version"}}) {
    auto s = VersionSpec::parse(b.text);
    ASSERT_FALSE(s) << b.text;
    const std::string msg = s.error().message;
    EXPECT_NE(msg.find(std::string("'") + b.text + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("at character " + std::to_string(b.column)), std::string::npos) << msg;
    EXPECT_NE(msg.find(b.rule), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace envlock
