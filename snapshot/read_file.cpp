// read_regular_file (text_util.hpp): snapshot's name for the one reader of host files,
// read_host_file_as() of envlock/host.hpp (src/host/host.cpp), with snapshot's 64 MiB cap refused.
#include <utility>

#include "envlock/host.hpp"
#include "text_util.hpp"

namespace envlock {

namespace fs = std::filesystem;

namespace snapshot_detail {

FileRead read_regular_file(const fs::path& p, ReadAs how) {
  HostFileOptions options;
  options.max_bytes = kMaxReadFile;
  options.refuse_larger = true;
  options.follow_last_link = how == ReadAs::HostFile;
  HostFileRead r = read_host_file_as(p, options);
  return FileRead{std::move(r.text), std::move(r.refused)};
}

}  // namespace snapshot_detail

}  // namespace envlock
