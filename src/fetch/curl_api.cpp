// curl_api.cpp — see curl_api.hpp.
#include "curl_api.hpp"

#include <dlfcn.h>

#include <mutex>

namespace envlock::detail {
namespace {

struct Loaded {
  CurlApi api{};
  bool ok = false;
  std::string why;
};

template <typename Fn>
bool bind(void* lib, const char* name, Fn*& out, std::string& why) {
  out = reinterpret_cast<Fn*>(::dlsym(lib, name));
  if (out == nullptr && why.empty()) why = std::string("libcurl has no symbol ") + name;
  return out != nullptr;
}

Loaded load() {
  Loaded l;
  // The process keeps the library until it exits (no dlclose): handles may outlive any owner.
  void* lib = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = ::dlerror();
    l.why = e != nullptr ? e : "dlopen(libcurl.so.4) failed";
    return l;
  }
  CurlApi& a = l.api;
  CURLcode (*global_init)(long) = nullptr;
  bool ok = bind(lib, "curl_global_init", global_init, l.why);
  ok = bind(lib, "curl_easy_init", a.easy_init, l.why) && ok;
  ok = bind(lib, "curl_easy_cleanup", a.easy_cleanup, l.why) && ok;
  ok = bind(lib, "curl_easy_reset", a.easy_reset, l.why) && ok;
  ok = bind(lib, "curl_easy_setopt", a.easy_setopt, l.why) && ok;
  ok = bind(lib, "curl_easy_getinfo", a.easy_getinfo, l.why) && ok;
  ok = bind(lib, "curl_easy_strerror", a.easy_strerror, l.why) && ok;
  ok = bind(lib, "curl_multi_init", a.multi_init, l.why) && ok;
  ok = bind(lib, "curl_multi_cleanup", a.multi_cleanup, l.why) && ok;
  ok = bind(lib, "curl_multi_setopt", a.multi_setopt, l.why) && ok;
  ok = bind(lib, "curl_multi_add_handle", a.multi_add_handle, l.why) && ok;
  ok = bind(lib, "curl_multi_remove_handle", a.multi_remove_handle, l.why) && ok;
  ok = bind(lib, "curl_multi_perform", a.multi_perform, l.why) && ok;
  ok = bind(lib, "curl_multi_poll", a.multi_poll, l.why) && ok;
  ok = bind(lib, "curl_multi_info_read", a.multi_info_read, l.why) && ok;
  ok = bind(lib, "curl_share_init", a.share_init, l.why) && ok;
  ok = bind(lib, "curl_share_setopt", a.share_setopt, l.why) && ok;
  ok = bind(lib, "curl_share_cleanup", a.share_cleanup, l.why) && ok;
  ok = bind(lib, "curl_slist_append", a.slist_append, l.why) && ok;
  ok = bind(lib, "curl_slist_free_all", a.slist_free_all, l.why) && ok;
  if (!ok) return l;
  if (const CURLcode rc = global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK) {
    l.why = "curl_global_init failed (CURLcode " + std::to_string(static_cast<int>(rc)) + ")";
    return l;
  }
  l.ok = true;
  return l;
}

}  // namespace

const CurlApi* curl_api(std::string* why) {
  static const Loaded loaded = load();  // thread-safe initialisation (C++11 magic statics)
  if (!loaded.ok) {
    if (why != nullptr) *why = loaded.why;
    return nullptr;
  }
  return &loaded.api;
}

}  // namespace envlock::detail
