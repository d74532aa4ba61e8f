// Test helpers: fake hub repos on disk, the fake hub server (tests/hub_server/hub_server.py) on a
// free port, stopped (SIGTERM to its own pid) when the object dies, and FakeHubTest, a fixture around
// it. Not thread-safe.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hub/hub.h"

extern char** environ;

namespace hub_test {

namespace fs = std::filesystem;

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const fs::path& p, const std::string& data) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << data;
}

// `n` pseudo-random bytes (fixed seed per name, so each fake file differs).
inline std::string random_bytes(size_t n, const std::string& seed_name) {
  std::seed_seq seq(seed_name.begin(), seed_name.end());
  std::mt19937 rng(seq);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xFF);
  return s;
}

// A TCP port nobody listens on (bound, then closed).
inline int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

class HubServer {
 public:
  HubServer(const fs::path& root, const fs::path& work, const std::vector<std::string>& extra) {
    port_file_ = work / "port";
    log_ = work / "server_log.jsonl";
    fs::remove(port_file_);
    std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    std::vector<std::string> args = {python, std::string(IGNIS_SOURCE_DIR) + "/tests/hub_server/hub_server.py",
                                     "--root", root.string(), "--port-file", port_file_.string(),
                                     "--log", log_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawnp(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
      throw std::runtime_error("cannot start " + python);
    for (int i = 0; i < 200 && !fs::exists(port_file_); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    if (!fs::exists(port_file_)) throw std::runtime_error("the fake hub server did not start");
    port_ = std::stoi(read_file(port_file_));
  }
  ~HubServer() {
    ::kill(pid_, SIGTERM);
    int st = 0;
    ::waitpid(pid_, &st, 0);
  }
  HubServer(const HubServer&) = delete;
  HubServer& operator=(const HubServer&) = delete;

  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // One JSON object per request: method, path, range, auth, host.
  std::vector<nlohmann::json> log() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    return out;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  fs::path port_file_, log_;
};

// A test fixture around a fresh fake hub: a per-test work folder holding the repos' files (root_), the
// server (start()), hub options pointing at it, and queries of its request log. Derived fixtures add
// their repos' files in SetUp() after calling FakeHubTest::SetUp().
class FakeHubTest : public ::testing::Test {
 protected:
  explicit FakeHubTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / (prefix_ + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    root_ = dir_ / "root";
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }

  void add(const std::string& repo, const std::string& file, const std::string& data) {
    write_file(root_ / repo / file, data);
  }
  std::string source(const std::string& repo, const std::string& file) { return read_file(root_ / repo / file); }
  void start(const std::vector<std::string>& extra = {}) {
    server_.reset();
    server_ = std::make_unique<HubServer>(root_, dir_, extra);
  }
  ignis::hub::HubOptions opts() const {
    ignis::hub::HubOptions o;
    o.endpoint = server_ ? server_->endpoint() : "http://127.0.0.1:" + std::to_string(closed_port());
    o.cache_dir = (dir_ / "cache").string();
    o.progress = false;
    return o;
  }
  fs::path repo_dir(const std::string& repo) const { return fs::path(ignis::hub::repo_cache_dir(repo, opts())); }
  // The requests for file bodies (the CDN redirects' targets).
  std::vector<nlohmann::json> cdn_gets() const {
    std::vector<nlohmann::json> out;
    for (const auto& e : server_->log())
      if (e["method"] == "GET" && e["path"].get<std::string>().rfind("/cdn/", 0) == 0) out.push_back(e);
    return out;
  }

  std::string prefix_;
  fs::path dir_, root_;
  std::unique_ptr<HubServer> server_;
};

}  // namespace hub_test
