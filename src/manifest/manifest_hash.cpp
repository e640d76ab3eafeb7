// manifest_hash: SHA-256 (OpenSSL EVP) over a canonical JSON of the inputs that change a solve.
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "envlock/encoding.hpp"
#include "envlock/manifest.hpp"
#include "envlock/url.hpp"

namespace envlock {
namespace {

std::string sha256_hex(const std::string& data) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), md.data(), &len) != 1)
    throw std::runtime_error("OpenSSL SHA-256 failed");  // broken invariant: EVP always has sha256
  return hex_encode(std::string_view(reinterpret_cast<const char*>(md.data()), len));
}

/// The channel as it enters the hash: a relative directory by its spelling (so moving the
/// checkout does not make the lock stale), everything else by its credential-free URL.
/// A `{url, name, subdirs}` channel adds what it declares (a manifest without them hashes as
/// before).
std::string channel_key(const Channel& ch) {
  std::string key = ch.relative_directory() ? "dir:" + ch.spelling : ch.public_url();
  if (!ch.name.empty()) key += " name=" + ch.name;
  if (!ch.subdirs.empty()) {
    key += " subdirs=";
    for (const auto& s : ch.subdirs) key += s + ",";
  }
  return key;
}

nlohmann::json channel_list(const std::vector<Channel>& channels) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& ch : channels) out.push_back(channel_key(ch));
  return out;
}

}  // namespace

std::string manifest_hash(const Manifest& m) {
  nlohmann::json j;
  j["format"] = 1;  // bump when the canonical form below changes
  j["channels"] = channel_list(m.channels);
  j["channel-priority"] = std::string(to_string(m.channel_priority));
  std::vector<std::string> platforms = m.platforms;
  std::sort(platforms.begin(), platforms.end());
  j["platforms"] = platforms;
  nlohmann::json vps = nlohmann::json::object();
  for (const auto& [platform, list] : m.virtual_packages) {
    std::vector<std::string> v;
    for (const auto& vp : list) v.push_back(vp.to_string());
    std::sort(v.begin(), v.end());
    vps[platform] = v;
  }
  j["virtual-packages"] = vps;
  nlohmann::json envs = nlohmann::json::object();
  for (const auto& [name, env] : m.environments) {
    nlohmann::json e;
    std::vector<std::string> specs;
    for (const auto& rs : env.dependencies)
      specs.push_back(rs.spec.to_string() + (rs.selector.empty() ? "" : "  # [" + rs.selector + "]"));
    std::sort(specs.begin(), specs.end());
    e["dependencies"] = specs;
    e["base"] = env.base;
    if (env.base_lockfile)  // only then: the hashes of manifests without one are unchanged
      // credential-free, as the lockfile records it: a rotated token is no change of input
      e["base-lockfile"] = {{"lockfile", redact_url(env.base_lockfile->lockfile)},
                            {"environment", env.base_lockfile->environment},
                            {"sha256", env.base_lockfile->sha256}};
    if (env.channels) e["channels"] = channel_list(*env.channels);
    if (env.platforms) {
      std::vector<std::string> p = *env.platforms;
      std::sort(p.begin(), p.end());
      e["platforms"] = p;
    }
    std::vector<std::string> pip;
    for (const auto& p : env.pip) pip.push_back(p.requirement);
    std::sort(pip.begin(), pip.end());
    e["pip"] = pip;
    // PyPI inputs (issue 20) only when there are some: the hashes of other manifests are unchanged.
    std::vector<std::string> pypi;
    for (const auto& r : env.pypi_dependencies) pypi.push_back(r.text);
    std::sort(pypi.begin(), pypi.end());
    if (!pypi.empty()) e["pypi-dependencies"] = pypi;
    auto written = [](const std::vector<PypiLocation>& v) {
      std::vector<std::string> out;
      for (const auto& l : v) out.push_back(l.written);
      return out;
    };
    if (!pypi.empty() || !env.pip.empty()) {
      if (auto ix = written(m.pypi_indexes_for(env)); !ix.empty()) e["pypi-indexes"] = ix;
      if (auto fl = written(m.find_links_for(env)); !fl.empty()) e["find-links"] = fl;
    }
    envs[name] = e;
  }
  j["environments"] = envs;
  return "sha256:" + sha256_hex(j.dump());
}

}  // namespace envlock
