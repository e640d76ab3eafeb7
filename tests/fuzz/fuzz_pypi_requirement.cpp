// PEP 440 versions and specifier sets, PEP 508 requirements and markers (envlock/pypi_version.hpp),
// as a pyproject, a `pip:` list or a wheel's Requires-Dist hands them over. Contracts checked:
// a parsed version's normalised spelling parses back to an equal version and is its own normal
// form; a requirement's to_string() parses back to the same to_string(); a marker that parsed
// evaluates without failing.
#include "envlock/pypi_version.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;  // the parsers' work is linear; longer inputs only slow the run
  const std::string text = envlock::fuzz::text_of(data, size);
  if (auto v = envlock::Pep440Version::parse(text)) {
    const std::string normal = v->to_string();
    auto again = envlock::Pep440Version::parse(normal);
    if (!again || !(*again == *v) || again->to_string() != normal) __builtin_trap();
    (void)v->public_version();
    (void)v->base_version();
  }
  if (auto s = envlock::Pep440SpecifierSet::parse(text)) {
    auto one = envlock::Pep440Version::parse("1.2.3rc1");
    (void)s->contains(*one);
    (void)s->contains(*one, true);
    (void)s->to_string();
  }
  if (auto r = envlock::Pep508Requirement::parse(text)) {
    const std::string shown = r->to_string();
    auto again = envlock::Pep508Requirement::parse(shown);
    if (!again || again->to_string() != shown) __builtin_trap();
    const envlock::MarkerEnvironment env{{"python_version", "3.11"}, {"python_full_version", "3.11.4"},
                                         {"sys_platform", "linux"}, {"platform_machine", "x86_64"},
                                         {"os_name", "posix"}, {"implementation_name", "cpython"}};
    (void)r->applies(env);
    (void)r->applies(env, "test");
  }
  if (auto m = envlock::Marker::parse(text)) {
    (void)m->evaluate({}, "");
    (void)m->mentions_extra();
  }
  return 0;
}
