// A small event-driven HTTP/1.1 server on Boost.Asio/Beast: one io thread serves every connection
// (no thread per connection), keep-alive, a request body limit, and Server-Sent Events streams.
//
// The application sees each request once, through a Handler, and answers through the Exchange it is
// given: either one complete response (respond) or a stream (start_stream, send_event..., end_stream).
// Exchange methods are thread-safe: they may be called from any thread (e.g. the engine thread); writes
// are posted to the connection's io executor. on_close fires once if the peer goes away before the
// exchange ends, so the application can cancel work.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace ignis::server {

struct HttpRequest {
  std::string method;
  std::string target;   // path and query
  std::string path;     // without the query
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual void respond(int status, const std::string& content_type, std::string body,
                       const std::map<std::string, std::string>& extra_headers = {}) = 0;
  virtual void start_stream(int status, const std::string& content_type) = 0;
  virtual void send(std::string data) = 0;  // raw bytes of the stream (e.g. "data: {...}\n\n")
  // Ends the stream; `last` (if any) is sent in the same write as the terminating chunk, so a client
  // that stops reading at its last event never leaves the terminator in flight on a reused connection.
  virtual void end_stream(std::string last = {}) = 0;
  // Called once, on the io thread, if the client disconnects before the exchange ends.
  virtual void on_close(std::function<void()> fn) = 0;
};

using Handler = std::function<void(const HttpRequest&, std::shared_ptr<Exchange>)>;

struct HttpOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  size_t body_limit = 8u << 20;  // bytes; larger bodies get 413
  int idle_timeout_s = 600;      // keep-alive connections idle longer are closed
};

class HttpServer {
 public:
  HttpServer(const HttpOptions& opts, Handler handler);
  ~HttpServer();
  // Binds and listens (throws ignis::Error naming host:port on failure); returns the bound port.
  uint16_t listen();
  // Runs the io loop on the calling thread until stop().
  void run();
  // Stops accepting new connections; existing ones continue.
  void stop_accepting();
  // Stops the io loop (run() returns).
  void stop();
  // Calls fn on SIGINT / SIGTERM (on the io thread).
  void on_signal(std::function<void(int)> fn);
  size_t n_connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ignis::server
