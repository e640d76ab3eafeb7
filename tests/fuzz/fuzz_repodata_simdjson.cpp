// repodata.json through simdjson: the eager parser (parse_repodata) and the lazy index with the
// generic on-demand pass (RepodataIndexOptions::generic_scan).
#include "envlock/repodata.hpp"
#include "envlock/repodata_index.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = envlock::fuzz::text_of(data, size);
  (void)envlock::parse_repodata(text, "repodata.json", "https://conda.anaconda.org/fuzz", "linux-64");
  envlock::RepodataIndexOptions o;
  o.source = "repodata.json";
  o.channel_url = "https://conda.anaconda.org/fuzz";
  o.subdir = "noarch";
  o.generic_scan = true;
  auto index = envlock::RepodataIndex::from_text(text, o);
  if (index) (void)(*index)->all_records();
  return 0;
}
