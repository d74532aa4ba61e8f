#include "hub/http.h"

#include <curl/curl.h>

#include <chrono>
#include <mutex>

namespace ignis::hub {
namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

struct Ctx {
  HttpResponse* resp;
  const BodySink* sink;
  int stall_s;
  curl_off_t last_bytes = -1;
  std::chrono::steady_clock::time_point last_change = std::chrono::steady_clock::now();
  bool stalled = false;
};

// NOTE: libcurl's low-speed check averages over a window of several seconds, so a transfer that stops
// dead after a burst is noticed late; this aborts once no byte has arrived for `stall_s` seconds.
int on_progress(void* user, curl_off_t, curl_off_t dlnow, curl_off_t, curl_off_t) {
  auto* ctx = static_cast<Ctx*>(user);
  auto now = std::chrono::steady_clock::now();
  if (dlnow != ctx->last_bytes) {
    ctx->last_bytes = dlnow;
    ctx->last_change = now;
    return 0;
  }
  if (now - ctx->last_change > std::chrono::seconds(ctx->stall_s)) {
    ctx->stalled = true;
    return 1;
  }
  return 0;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* ctx = static_cast<Ctx*>(user);
  std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a redirect or a 100 Continue)
    ctx->resp->headers.clear();
    auto sp = line.find(' ');
    if (sp != std::string::npos) ctx->resp->status = std::strtol(line.c_str() + sp + 1, nullptr, 10);
    return size * n;
  }
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ctx->resp->headers[name] = trim(line.substr(colon + 1));
  }
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* ctx = static_cast<Ctx*>(user);
  if (!*ctx->sink) return size * n;
  if (!(*ctx->sink)(*ctx->resp, data, size * n)) {
    ctx->resp->aborted_by_sink = true;
    return 0;  // makes libcurl fail the transfer with CURLE_WRITE_ERROR
  }
  return size * n;
}

}  // namespace

bool HttpResponse::unreachable() const {
  switch (curl_code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      return true;
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
      return status == 0;
    default:
      return false;
  }
}

HttpResponse http_request(const HttpRequest& req, const BodySink& sink) {
  global_init();
  HttpResponse resp;
  CURL* h = curl_easy_init();
  if (!h) {
    resp.curl_code = CURLE_FAILED_INIT;
    resp.curl_error = "curl_easy_init failed";
    return resp;
  }
  char errbuf[CURL_ERROR_SIZE] = {0};
  Ctx ctx{&resp, &sink, req.low_speed_time_s};
  curl_slist* hdrs = nullptr;
  for (const auto& x : req.headers) hdrs = curl_slist_append(hdrs, x.c_str());
  curl_easy_setopt(h, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "ignis/0.1 (hub client; like huggingface_hub)");
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &ctx);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &ctx);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, static_cast<long>(req.connect_timeout_s));
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(req.low_speed_time_s));
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &ctx);
  if (req.head) curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  if (req.follow_redirects) {
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
  }
  CURLcode rc = curl_easy_perform(h);
  resp.curl_code = rc;
  if (rc != CURLE_OK) resp.curl_error = errbuf[0] ? errbuf : curl_easy_strerror(rc);
  if (ctx.stalled) resp.curl_error = "no data received for " + std::to_string(req.low_speed_time_s) + " s";
  long code = 0;
  if (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK && code) resp.status = code;
  char* eff = nullptr;
  if (curl_easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &eff) == CURLE_OK && eff) resp.effective_url = eff;
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(h);
  return resp;
}

std::string url_host(const std::string& url) {
  auto p = url.find("://");
  if (p == std::string::npos) return {};
  std::string rest = url.substr(p + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  auto at = rest.rfind('@');
  if (at != std::string::npos) rest = rest.substr(at + 1);
  if (!rest.empty() && rest[0] == '[') {
    rest = rest.substr(0, rest.find(']') + 1);
  } else {
    rest = rest.substr(0, rest.find(':'));
  }
  for (char& c : rest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return rest;
}

std::string resolve_location(const std::string& base, const std::string& location) {
  if (location.find("://") != std::string::npos) return location;
  auto p = base.find("://");
  std::string scheme = base.substr(0, p);
  if (location.rfind("//", 0) == 0) return scheme + ":" + location;
  size_t path_start = base.find('/', p + 3);
  std::string origin = path_start == std::string::npos ? base : base.substr(0, path_start);
  if (!location.empty() && location[0] == '/') return origin + location;
  // Relative to the base's folder.
  std::string path = path_start == std::string::npos ? "/" : base.substr(path_start);
  path = path.substr(0, path.find_first_of("?#"));
  return origin + path.substr(0, path.rfind('/') + 1) + location;
}

}  // namespace ignis::hub
