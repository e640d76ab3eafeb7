// Archive member names and link targets (src/extract): the input is either a raw tar (first
// byte odd) or lines `<kind><name>[\t<target>]` (kind f file, d directory, l symlink, h hard
// link) that this target writes as a pax tar with libarchive. The tar is extracted with
// extract_tar_zst_into (libarchive reads an uncompressed tar through the same reader), and
// nothing may appear beside the destination folder: a write outside it is a crash.
#include <archive.h>
#include <archive_entry.h>

#include <filesystem>
#include <sstream>

#include "envlock/extract.hpp"
#include "fuzz_util.hpp"

namespace {

std::string tar_from_lines(const std::string& text) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  std::string out(1 << 20, '\0');
  size_t used = 0;
  archive_write_open_memory(a, out.data(), out.size(), &used);
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line) && n++ < 64) {
    if (line.empty()) continue;
    const char kind = line[0];
    std::string name = line.substr(1);
    std::string target;
    if (auto tab = name.find('\t'); tab != std::string::npos) {
      target = name.substr(tab + 1);
      name.resize(tab);
    }
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_perm(e, 0755);
    archive_entry_set_mtime(e, 1700000000, 0);
    const std::string content = "content of " + name;
    switch (kind) {
      case 'd': archive_entry_set_filetype(e, AE_IFDIR); break;
      case 'l':
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_symlink(e, target.c_str());
        break;
      case 'h':
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_hardlink(e, target.c_str());
        break;
      default:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, static_cast<la_int64_t>(content.size()));
    }
    if (archive_write_header(a, e) == ARCHIVE_OK && kind != 'd' && kind != 'l' && kind != 'h') {
      archive_write_data(a, content.data(), content.size());
    }
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  out.resize(used);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string body = envlock::fuzz::text_of(data + 1, size - 1);
  const auto& dir = envlock::fuzz::scratch();
  const auto tar = dir / "member.tar.zst";
  envlock::fuzz::write_file(tar, data[0] % 2 == 1 ? body : tar_from_lines(body));
  const auto into = dir / "into";
  std::filesystem::create_directories(into);
  envlock::ExtractLimits limits;
  limits.max_total_bytes = 1 << 20;
  limits.max_entries = 256;
  (void)envlock::extract_tar_zst_into(tar, into, limits);
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path() != tar && e.path() != into) __builtin_trap();  // written outside the destination
  }
  return 0;
}
