// What a package index serves (envlock/pypi_index.hpp): a PEP 503 HTML page, a PEP 691 JSON page
// and a core metadata file (PEP 566/643 METADATA, PEP 658 `.metadata`). The first input byte
// chooses the reader. Contracts checked: every listed file has a file name and an absolute URL
// (relative hrefs resolved against the page URL: a scheme, then `:`), and a metadata file that
// parsed has its Name and Version.
#include "envlock/pypi_index.hpp"
#include "fuzz_util.hpp"

namespace {

void check_files(const std::vector<envlock::PypiFile>& files) {
  for (const auto& f : files) {
    if (f.filename.empty()) __builtin_trap();
    const auto colon = f.url.find(':');
    if (colon == std::string::npos || colon == 0) __builtin_trap();
    for (std::size_t i = 0; i < colon; ++i) {
      const char c = f.url[i];
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (i > 0 && ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'));
      if (!ok) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 65536) return 0;
  const std::string text = envlock::fuzz::text_of(data + 1, size - 1);
  const std::string page = "https://index.example/simple/demo/";
  switch (data[0] % 3) {
    case 0:
      check_files(envlock::parse_simple_html(text, page));
      break;
    case 1:
      if (auto files = envlock::parse_simple_json(text, page)) check_files(*files);
      break;
    default:
      if (auto m = envlock::parse_core_metadata(text, "demo-1.0.dist-info/METADATA"))
        if (m->name.empty() || m->version.empty()) __builtin_trap();
      break;
  }
  return 0;
}
