// install_order (dependencies first, deterministic) and conda's @EXPLICIT export.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "envlock/lockfile.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"

namespace envlock {
namespace {

/// The package name a `depends` entry names: the text before the first space or operator,
/// after any `channel::` prefix, lower-cased (conda names are lower case).
std::string depends_name(std::string_view dep) {
  if (auto colons = dep.find("::"); colons != std::string_view::npos) dep.remove_prefix(colons + 2);
  std::size_t end = dep.find_first_of(" =<>!~[");
  return ascii_lower(std::string(dep.substr(0, end)));
}

}  // namespace

std::vector<const LockedPackage*> install_order(const LockedPlatform& platform) {
  std::map<std::string, const LockedPackage*> by_name;
  for (const auto& p : platform.packages) by_name.emplace(p.name, &p);
  // waiting[name] = dependencies of name not yet placed; users[dep] = packages waiting on dep.
  std::map<std::string, std::set<std::string>> waiting;
  std::map<std::string, std::set<std::string>> users;
  for (const auto& [name, p] : by_name) {
    auto& w = waiting[name];
    for (const auto& dep : p->depends) {
      std::string d = depends_name(dep);
      if (d != name && by_name.count(d)) {
        w.insert(d);
        users[d].insert(name);
      }
    }
  }
  std::set<std::string> ready;
  for (const auto& [name, deps] : waiting)
    if (deps.empty()) ready.insert(name);
  std::vector<const LockedPackage*> out;
  std::set<std::string> placed;
  while (out.size() < by_name.size()) {
    std::string next;
    if (!ready.empty()) {
      next = *ready.begin();
      ready.erase(ready.begin());
    } else {  // a cycle: break it at the first name still waiting
      for (const auto& [name, deps] : waiting)
        if (!placed.count(name)) {
          next = name;
          break;
        }
    }
    placed.insert(next);
    out.push_back(by_name[next]);
    for (const auto& user : users[next]) {
      auto& w = waiting[user];
      if (w.erase(next) && w.empty() && !placed.count(user)) ready.insert(user);
    }
  }
  return out;
}

Result<std::string> to_explicit(const LockedPlatform& platform) {
  std::string out;
  out += "# This file may be used to create an environment using:\n";
  out += "# $ conda create --name <env> --file <this file>\n";
  out += "# platform: " + platform.platform + "\n";
  out += "@EXPLICIT\n";
  for (const LockedPackage* p : install_order(platform)) {
    if (p->url.empty())
      return Error{ErrorKind::Integrity, p->name, "the locked record " + p->dist_name() + " has no url", "",
                   "re-create the lockfile with `envlock lock`"};
    out += redact_url(p->url);
    if (!p->sha256.empty()) out += "#sha256:" + p->sha256;
    else if (!p->md5.empty()) out += "#" + p->md5;
    out += "\n";
  }
  return out;
}

}  // namespace envlock
