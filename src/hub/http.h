// A small blocking HTTP client over libcurl for the hub: one request per call, response headers kept,
// the body streamed to a callback.
//
// No redirect is followed unless HttpRequest::follow_redirects; then libcurl drops custom headers
// (Authorization) when a redirect leaves the original host. Every request has a connect timeout and a
// low-speed limit, so nothing waits forever. Thread-safe: each call uses its own curl handle
// (curl_global_init runs once, guarded by a static).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ignis::hub {

struct HttpRequest {
  std::string url;
  bool head = false;               // HEAD instead of GET
  bool follow_redirects = false;
  std::vector<std::string> headers;  // "Name: value"
  int connect_timeout_s = 5;
  int low_speed_time_s = 30;       // abort when < 1 KB/s, or nothing at all arrives, for this long
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // of the last response; names in lower case
  std::string effective_url;
  int curl_code = 0;               // CURLcode; 0 = the transfer completed (whatever the status)
  std::string curl_error;          // libcurl's message when curl_code != 0
  bool aborted_by_sink = false;    // the body callback returned false

  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
  // Failed before any response arrived (DNS, refused, TLS, connect timeout).
  bool unreachable() const;
};

// Called with body bytes once the final response's headers are in `resp`; return false to abort.
using BodySink = std::function<bool(const HttpResponse& resp, const char* data, size_t n)>;

HttpResponse http_request(const HttpRequest& req, const BodySink& sink = nullptr);

// "https://user@host:443/x" -> "host" (lower case); "" when it is not a URL.
std::string url_host(const std::string& url);

// Resolves a Location header against the URL it came from (absolute, scheme-relative or relative).
std::string resolve_location(const std::string& base, const std::string& location);

}  // namespace ignis::hub
