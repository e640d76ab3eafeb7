// repodata.json through the dedicated scanner (src/channel/repodata_scan.hpp) and the lazy
// index built on it: every name's records parsed. The scanner reads exactly up to the text's
// size, so the input is copied into a buffer of exactly that size (ASan sees any overread).
#include <memory>
#include <vector>

#include "envlock/repodata_index.hpp"
#include "fuzz_util.hpp"
#include "repodata_scan.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::unique_ptr<char[]> exact(new char[size == 0 ? 1 : size]);
  std::copy(data, data + size, exact.get());
  std::vector<envlock::RepodataSpan> spans;
  std::vector<std::uint32_t> names;
  std::string base_url;
  (void)envlock::scan_repodata_fast(std::string_view(exact.get(), size), spans, names, base_url);

  envlock::RepodataIndexOptions o;
  o.source = "repodata.json";
  o.channel_url = "https://conda.anaconda.org/fuzz";
  o.subdir = "linux-64";
  auto index = envlock::RepodataIndex::from_text(envlock::fuzz::text_of(data, size), o);
  if (index) {
    for (auto name : (*index)->names()) (void)(*index)->records(name);
    (void)(*index)->all_records();
  }
  return 0;
}
