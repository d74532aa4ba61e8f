#include "server/http_server.h"

#include <utility>
#include <optional>
#include <csignal>
#include <cstdio>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <deque>
#include <mutex>

#include "core/error.h"

namespace ignis::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

std::atomic<size_t> g_connections{0};

class Session;

// One request/response exchange on a session. Holds the session alive until it ends.
class ExchangeImpl final : public Exchange, public std::enable_shared_from_this<ExchangeImpl> {
 public:
  ExchangeImpl(std::shared_ptr<Session> s, bool keep_alive, unsigned version)
      : session_(std::move(s)), keep_alive_(keep_alive), version_(version) {}
  void respond(int status, const std::string& content_type, std::string body,
               const std::map<std::string, std::string>& extra) override;
  void start_stream(int status, const std::string& content_type) override;
  void send(std::string data) override;
  void end_stream(std::string last) override;
  void on_close(std::function<void()> fn) override {
    std::lock_guard<std::mutex> lk(mu_);
    on_close_ = std::move(fn);
  }
  void peer_closed();  // io thread
  bool ended() const { return ended_; }

 private:
  std::shared_ptr<Session> session_;
  bool keep_alive_;
  unsigned version_;
  std::mutex mu_;
  std::function<void()> on_close_;
  std::atomic<bool> ended_{false};
  bool closed_notified_ = false;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpOptions& opts, const Handler& handler)
      : stream_(std::move(socket)), opts_(opts), handler_(handler) {
    ++g_connections;
  }
  ~Session() { --g_connections; }

  void start() { read_request(); }
  asio::any_io_executor executor() { return stream_.get_executor(); }

  // Queue bytes for writing (io thread only). close_after: shut the connection once written.
  void write(std::shared_ptr<std::string> bytes, bool close_after) {
    queue_.push_back({std::move(bytes), close_after});
    if (!writing_) write_next();
  }
  void exchange_done(bool keep_alive) {  // io thread
    current_.reset();
    if (!keep_alive) {
      close_after_writes_ = true;
      if (!writing_) close();
      return;
    }
    // Stop watching for EOF (which served disconnect detection) and read the next request.
    read_request();
  }

 private:
  struct Out {
    std::shared_ptr<std::string> bytes;
    bool close_after;
  };

  void read_request() {
    parser_.emplace();
    parser_->body_limit(opts_.body_limit);
    parser_->header_limit(64 * 1024);
    stream_.expires_after(std::chrono::seconds(opts_.idle_timeout_s));
    auto self = shared_from_this();
    http::async_read(stream_, buffer_, *parser_, [self](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      auto res = std::make_shared<std::string>(
          "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nConnection: close\r\n"
          "Content-Length: ");
      std::string body = R"({"error":{"message":"request body is larger than the limit of )" +
                         std::to_string(opts_.body_limit) +
                         R"( bytes","type":"invalid_request_error","param":null,"code":"request_too_large"}})";
      *res += std::to_string(body.size()) + "\r\n\r\n" + body;
      write(res, false);
      linger_and_close();
      return;
    }
    if (ec) {
      if (current_) current_->peer_closed();
      close();
      return;
    }
    stream_.expires_never();
    auto& req = parser_->get();
    HttpRequest r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    r.path = r.target.substr(0, r.target.find('?'));
    for (const auto& f : req) {
      std::string name(f.name_string());
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      r.headers[name] = std::string(f.value());
    }
    r.body = std::move(req.body());
    current_ = std::make_shared<ExchangeImpl>(shared_from_this(), req.keep_alive(), req.version());
    watch_for_close();
    try {
      handler_(r, current_);
    } catch (const std::exception& e) {
      if (!current_->ended())
        current_->respond(500, "application/json",
                          R"({"error":{"message":"internal error","type":"server_error","param":null,"code":null}})", {});
    }
  }

  // While a response is pending, a read that completes with an error means the client went away.
  void watch_for_close() {
    auto self = shared_from_this();
    auto ex = current_;
    stream_.socket().async_wait(tcp::socket::wait_read, [self, ex](beast::error_code ec) {
      if (ec || ex->ended() || self->current_ != ex) return;
      // Readable while a response is pending: either EOF (peer gone) or a pipelined request.
      char c;
      beast::error_code pec;
      size_t n = self->stream_.socket().receive(asio::buffer(&c, 1), tcp::socket::message_peek, pec);
      if (pec || n == 0) {
        ex->peer_closed();
        return;
      }
      // Pipelined bytes: leave them for the next read; stop watching.
    });
  }

  void write_next() {
    if (queue_.empty()) {
      writing_ = false;
      if (close_after_writes_) close();
      return;
    }
    writing_ = true;
    auto out = queue_.front();
    queue_.pop_front();
    auto self = shared_from_this();
    asio::async_write(stream_.socket(), asio::buffer(*out.bytes), [self, out](beast::error_code ec, size_t) {
      if (ec) {
        if (self->current_) self->current_->peer_closed();
        self->queue_.clear();
        self->writing_ = false;
        self->close();
        return;
      }
      if (out.close_after) {
        self->queue_.clear();
        self->writing_ = false;
        self->close();
        return;
      }
      self->write_next();
    });
  }

  // NOTE: a client still sending a body we refused would see a reset instead of our answer if we
  // closed at once; so stop reading requests, half-close after the answer, and drain what arrives
  // (bounded in time and bytes) before closing.
  void linger_and_close() {
    close_after_writes_ = true;
    lingering_ = true;
    drain_budget_ = 256u << 20;
    stream_.expires_after(std::chrono::seconds(10));
    drain();
  }
  void drain() {
    auto self = shared_from_this();
    drain_buf_.resize(64 * 1024);
    stream_.async_read_some(asio::buffer(drain_buf_), [self](beast::error_code ec, size_t n) {
      if (ec || n >= self->drain_budget_) {
        self->lingering_ = false;
        if (!self->writing_) self->close();
        return;
      }
      self->drain_budget_ -= n;
      self->drain();
    });
  }

  void close() {
    if (lingering_) {
      beast::error_code ec;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
      return;
    }
    if (closed_) return;
    closed_ = true;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  const HttpOptions& opts_;
  const Handler& handler_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<ExchangeImpl> current_;
  std::deque<Out> queue_;
  bool writing_ = false;
  bool close_after_writes_ = false;
  bool closed_ = false;
  bool lingering_ = false;
  size_t drain_budget_ = 0;
  std::vector<char> drain_buf_;
  friend class ExchangeImpl;
};

std::string status_line(unsigned version, int status) {
  auto reason = http::obsolete_reason(static_cast<http::status>(status));
  return std::string(version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ") + std::to_string(status) + " " +
         std::string(reason) + "\r\n";
}

void ExchangeImpl::respond(int status, const std::string& content_type, std::string body,
                           const std::map<std::string, std::string>& extra) {
  if (ended_.exchange(true)) return;
  auto bytes = std::make_shared<std::string>(status_line(version_, status));
  *bytes += "Content-Type: " + content_type + "\r\n";
  *bytes += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  for (const auto& [k, v] : extra) *bytes += k + ": " + v + "\r\n";
  *bytes += keep_alive_ ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  *bytes += body;
  auto s = session_;
  bool ka = keep_alive_;
  asio::post(s->executor(), [s, bytes, ka]() {
    s->write(bytes, false);
    s->exchange_done(ka);
  });
}

void ExchangeImpl::start_stream(int status, const std::string& content_type) {
  auto bytes = std::make_shared<std::string>(status_line(version_, status));
  *bytes += "Content-Type: " + content_type + "\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n";
  *bytes += keep_alive_ ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  auto s = session_;
  // NOTE: dispatch, not post: start_stream is called from the request handler on the io thread, and a
  // post from inside a running handler may be queued behind posts other threads make meanwhile (the
  // engine's first chunks); dispatch queues the headers on the session at once.
  asio::dispatch(s->executor(), [s, bytes]() { s->write(bytes, false); });
}

void ExchangeImpl::send(std::string data) {
  if (ended_ || data.empty()) return;
  char hex[32];
  std::snprintf(hex, sizeof hex, "%zx\r\n", data.size());
  auto bytes = std::make_shared<std::string>(hex);
  *bytes += data;
  *bytes += "\r\n";
  auto s = session_;
  asio::post(s->executor(), [s, bytes]() { s->write(bytes, false); });
}

void ExchangeImpl::end_stream(std::string last) {
  if (ended_.exchange(true)) return;
  auto bytes = std::make_shared<std::string>();
  if (!last.empty()) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "%zx\r\n", last.size());
    *bytes += hex;
    *bytes += last;
    *bytes += "\r\n";
  }
  *bytes += "0\r\n\r\n";
  auto s = session_;
  bool ka = keep_alive_;
  asio::post(s->executor(), [s, bytes, ka]() {
    s->write(bytes, false);
    s->exchange_done(ka);
  });
}

void ExchangeImpl::peer_closed() {
  std::function<void()> fn;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (closed_notified_ || ended_) return;
    closed_notified_ = true;
    fn = on_close_;
  }
  ended_ = true;
  if (fn) fn();
}

}  // namespace

struct HttpServer::Impl {
  HttpOptions opts;
  Handler handler;
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  asio::signal_set signals{io, SIGINT, SIGTERM};
  std::function<void(int)> on_signal;

  void accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec) {
        beast::error_code nd;
        socket.set_option(tcp::no_delay(true), nd);
        std::make_shared<Session>(std::move(socket), opts, handler)->start();
      }
      accept();
    });
  }
  void wait_signal() {
    signals.async_wait([this](beast::error_code ec, int sig) {
      if (ec) return;
      if (on_signal) on_signal(sig);
      wait_signal();
    });
  }
};

HttpServer::HttpServer(const HttpOptions& opts, Handler handler) : impl_(std::make_unique<Impl>()) {
  impl_->opts = opts;
  impl_->handler = std::move(handler);
}

HttpServer::~HttpServer() = default;

uint16_t HttpServer::listen() {
  beast::error_code ec;
  auto addr = asio::ip::make_address(impl_->opts.host, ec);
  if (ec) fail("--host: '{}' is not an IP address", impl_->opts.host);
  tcp::endpoint ep(addr, impl_->opts.port);
  impl_->acceptor.open(ep.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(ep, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) fail("cannot listen on {}:{}: {}", impl_->opts.host, impl_->opts.port, ec.message());
  impl_->accept();
  impl_->wait_signal();
  return impl_->acceptor.local_endpoint().port();
}

void HttpServer::run() { impl_->io.run(); }

void HttpServer::stop_accepting() {
  asio::post(impl_->io, [this]() {
    beast::error_code ec;
    impl_->acceptor.close(ec);
  });
}

void HttpServer::stop() { impl_->io.stop(); }

void HttpServer::on_signal(std::function<void(int)> fn) { impl_->on_signal = std::move(fn); }

size_t HttpServer::n_connections() const { return g_connections.load(); }

}  // namespace ignis::server
