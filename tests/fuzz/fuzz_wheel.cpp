// Wheels (src/wheel): the input is either a raw ZIP (first byte 'P') or lines `<kind><name>\t<data>`
// (kind f file, x executable file, l symlink, u a file RECORD leaves out, b a file whose RECORD row
// is wrong; `\n` in data is a newline) that this target writes as a wheel demo-1.0-py3-none-any.whl
// with a WHEEL (unless a line names demo-1.0.dist-info/WHEEL) and a RECORD of every other member.
// install_wheel() installs it into a prefix; nothing may appear beside the prefix, and no staging
// folder may stay in it, whether the install succeeds or fails (a break is a trap).
#include <filesystem>
#include <sstream>

#include "envlock/encoding.hpp"
#include "envlock/hash.hpp"
#include "envlock/wheel.hpp"
#include "fuzz_util.hpp"
#include "wheel/zip_writer.hpp"

namespace {

namespace fs = std::filesystem;

std::string wheel_from_lines(const std::string& text) {
  std::vector<envlock::testing::ZipEntry> entries;
  std::string record;
  bool has_wheel = false;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line) && n++ < 64) {
    if (line.size() < 2) continue;
    const char kind = line[0];
    std::string name = line.substr(1), data;
    if (auto tab = name.find('\t'); tab != std::string::npos) {
      data = name.substr(tab + 1);
      name.resize(tab);
    }
    for (std::size_t at = 0; (at = data.find("\\n", at)) != std::string::npos;) data.replace(at, 2, "\n");
    envlock::testing::ZipEntry e{name, data, kind == 'x' ? 0100755u : kind == 'l' ? 0120777u : 0100644u, std::nullopt};
    if (name == "demo-1.0.dist-info/WHEEL") has_wheel = true;
    const std::string hash = "sha256=" + envlock::base64_encode(*envlock::hex_decode(envlock::hash_bytes(kind == 'b' ? data + "x" : data,
                                                                                                          envlock::HashAlgorithm::Sha256)),
                                                                envlock::Base64Alphabet::UrlSafe, envlock::Base64Padding::No);
    if (kind != 'u') record += name + "," + hash + "," + std::to_string(data.size()) + "\n";
    entries.push_back(std::move(e));
  }
  if (!has_wheel) {
    const std::string w = "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n";
    entries.push_back({"demo-1.0.dist-info/WHEEL", w});
    record += "demo-1.0.dist-info/WHEEL,sha256=" +
              envlock::base64_encode(*envlock::hex_decode(envlock::hash_bytes(w, envlock::HashAlgorithm::Sha256)),
                                     envlock::Base64Alphabet::UrlSafe, envlock::Base64Padding::No) +
              "," + std::to_string(w.size()) + "\n";
  }
  entries.push_back({"demo-1.0.dist-info/RECORD", record + "demo-1.0.dist-info/RECORD,,\n"});
  return envlock::testing::zip_bytes(entries);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input = envlock::fuzz::text_of(data, size);
  const fs::path& dir = envlock::fuzz::scratch();
  const fs::path wheel = dir / "demo-1.0-py3-none-any.whl";
  envlock::fuzz::write_file(wheel, !input.empty() && input[0] == 'P' ? input : wheel_from_lines(input));
  const fs::path prefix = dir / "prefix";
  fs::create_directories(prefix / "lib/python3.11/site-packages");
  envlock::WheelInstallOptions options;
  options.limits.max_total_bytes = 16 << 20;
  options.limits.max_entries = 4096;
  (void)envlock::install_wheel(wheel, prefix, options);
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name != "prefix" && name != wheel.filename().string()) __builtin_trap();  // written beside the prefix
  }
  for (const auto& e : fs::directory_iterator(prefix)) {
    if (e.path().filename().string().starts_with(".envlock-wheel")) __builtin_trap();  // staging left behind
  }
  return 0;
}
