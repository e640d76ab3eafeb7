// Version and VersionSpec (conda's version ordering, envlock/version.hpp): parse, compare, and
// the round trip parse(v.to_string()) == v.
#include "envlock/version.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = envlock::fuzz::text_of(data, size);
  if (auto v = envlock::Version::parse(text)) {
    auto again = envlock::Version::parse(v->to_string());
    if (!again || !(*again == *v)) __builtin_trap();
    auto one = envlock::Version::parse("1.0");
    (void)(*v < *one);
  }
  if (auto s = envlock::VersionSpec::parse(text)) {
    auto one = envlock::Version::parse("1.2.3");
    (void)s->matches(*one);
    (void)s->to_string();
  }
  return 0;
}
