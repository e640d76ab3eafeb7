// MatchSpec (conda's MatchSpec grammar, envlock/match_spec.hpp): parse, and for what parses the
// round trip the header promises (parse(to_string()) parses again) and a match against a record.
#include "envlock/match_spec.hpp"
#include "envlock/package_record.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = envlock::fuzz::text_of(data, size);
  auto spec = envlock::MatchSpec::parse(text);
  if (!spec) return 0;
  const std::string again = spec->to_string();
  auto reparsed = envlock::MatchSpec::parse(again);
  if (!reparsed) __builtin_trap();  // to_string() of a parsed spec must parse
  envlock::PackageRecord r;
  r.name = "numpy";
  r.build = "py311h64a7726_0";
  (void)spec->matches(r);
  return 0;
}
