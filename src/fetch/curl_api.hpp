// curl_api.hpp — libcurl, opened the first time envlock transfers something (private to fetch/).
//
// Why: libcurl and the libraries it needs (TLS, HTTP/2, SSH, Kerberos, LDAP, IDN, ...) are ~35
// shared objects whose loading and initialisers cost every envlock process ~5 ms (measured:
// an empty program linked with -lcurl starts in 9.0 ms against 4.3 ms without), while most
// commands (diff, show, snapshot capture, lock on a warm cache, list, verify) never transfer
// anything. git keeps libcurl out of its main binary for the same reason (git-remote-https).
// The API is libcurl's own, compiled against its headers; only the binding is deferred.
#pragma once

#include <curl/curl.h>

#include <string>

namespace envlock::detail {

/// The libcurl entry points fetch.cpp uses, bound by dlopen(3)/dlsym(3) of libcurl's ABI soname
/// (libcurl.so.4, unchanged since 2006) and curl_global_init(CURL_GLOBAL_DEFAULT)ed once.
struct CurlApi {
  CURL* (*easy_init)();
  void (*easy_cleanup)(CURL*);
  void (*easy_reset)(CURL*);
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  const char* (*easy_strerror)(CURLcode);
  CURLM* (*multi_init)();
  CURLMcode (*multi_cleanup)(CURLM*);
  CURLMcode (*multi_setopt)(CURLM*, CURLMoption, ...);
  CURLMcode (*multi_add_handle)(CURLM*, CURL*);
  CURLMcode (*multi_remove_handle)(CURLM*, CURL*);
  CURLMcode (*multi_perform)(CURLM*, int*);
  CURLMcode (*multi_poll)(CURLM*, struct curl_waitfd[], unsigned int, int, int*);
  CURLMsg* (*multi_info_read)(CURLM*, int*);
  CURLSH* (*share_init)();
  CURLSHcode (*share_setopt)(CURLSH*, CURLSHoption, ...);
  CURLSHcode (*share_cleanup)(CURLSH*);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
};

/// The bound API, loaded on the first call (thread-safe); nullptr when libcurl cannot be loaded
/// or initialised, with the reason in `*why` (dlerror(3)'s text, or curl_global_init's code).
const CurlApi* curl_api(std::string* why);

}  // namespace envlock::detail
