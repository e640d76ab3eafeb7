#pragma once
// tests/support/http_server.hpp — starts tests/support/http_server.py (python3) for a test and
// stops it in the destructor. See the script's docstring for the fault switches.
//
//   envlock::testing::HttpServer server(root_dir, {"--fail", "/x.conda=500:2"});
//   ASSERT_TRUE(server.ok()) << server.error();
//   std::string url = server.url("/linux-64/x.conda");
//   int n = server.request_count("/linux-64/x.conda");

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace envlock::testing {

class HttpServer {
 public:
  HttpServer(const std::filesystem::path& root, std::vector<std::string> switches = {}) {
    const std::string script = std::string(ENVLOCK_SOURCE_DIR) + "/tests/support/http_server.py";
    std::vector<std::string> args{"python3", script, "--root", root.string()};
    args.insert(args.end(), switches.begin(), switches.end());
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) {
      error_ = "pipe failed";
      return;
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execvp("python3", argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    std::string line;
    char c = 0;
    while (::read(out[0], &c, 1) == 1 && c != '\n') line.push_back(c);
    ::close(out[0]);
    if (line.rfind("PORT ", 0) != 0) {
      error_ = "http_server.py did not start (python3 missing?): '" + line + "'";
      return;
    }
    port_ = std::stoi(line.substr(5));
  }
  ~HttpServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  [[nodiscard]] bool ok() const { return port_ > 0; }
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] int port() const { return port_; }
  /// "http://127.0.0.1:<port><path>"; `path` starts with '/'.
  [[nodiscard]] std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  /// Requests the server has seen for `path` (from GET /__stats, fetched with python's urllib so
  /// the count does not depend on the code under test).
  [[nodiscard]] int request_count(const std::string& path) const {
    auto all = request_counts();
    return all.contains(path) ? all[path].get<int>() : 0;
  }
  /// Every path's request count, as one JSON object {"<path>": n}.
  [[nodiscard]] nlohmann::json request_counts() const {
    auto j = nlohmann::json::parse(get("/__stats"), nullptr, false);
    return j.is_discarded() ? nlohmann::json::object() : j;
  }
  /// Connections that have asked the server for a file (not for these counts) so far.
  [[nodiscard]] int connection_count() const {
    const std::string text = get("/__connections");
    return text.empty() ? -1 : std::stoi(text);
  }

 private:
  /// The body of GET `path`, fetched with python's urllib (independent of the code under test).
  [[nodiscard]] std::string get(const std::string& path) const {
    const std::string cmd = "python3 -c \"import urllib.request;print(urllib.request.urlopen('" +
                            url(path) + "').read().decode())\"";
    std::string text;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[4096];
      size_t n = 0;
      while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
      ::pclose(p);
    }
    return text;
  }

  pid_t pid_ = -1;
  int port_ = 0;
  std::string error_;
};

}  // namespace envlock::testing
