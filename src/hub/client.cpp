#include "hub/client.h"

#include "core/error.h"

namespace ignis::hub {

HttpRequest hub_request(const HubOptions& opts, const std::string& url) {
  HttpRequest r;
  r.url = url;
  r.connect_timeout_s = opts.connect_timeout_s;
  r.low_speed_time_s = opts.low_speed_time_s;
  if (!opts.token.empty() && url_host(url) == url_host(opts.endpoint))
    r.headers.push_back("Authorization: Bearer " + opts.token);
  return r;
}

void check_reachable(const HttpResponse& resp, const std::string& url, const std::string& what) {
  if (!resp.unreachable()) return;
  std::string host = url_host(url);
  fail("cannot reach {}{} ({}): {}; to use a local file pass -m FILE.gguf, or --offline to use the cache",
       host.empty() ? url : host, what.empty() ? "" : " to download " + what, url, resp.curl_error);
}

void check_status(const HttpResponse& resp, const std::string& url, const HubOptions& opts,
                  const std::string& what) {
  long s = resp.status;
  if (s >= 200 && s < 400) return;
  std::string code = resp.header("x-error-code");
  std::string msg = resp.header("x-error-message");
  std::string detail = msg.empty() ? "" : " (" + msg + ")";
  if (s == 401) {
    if (opts.token.empty())
      fail("{}: HTTP 401 from {}{}: {} is private, gated or does not exist; set HF_TOKEN to a token "
           "with access", url, url_host(url), detail, what);
    fail("{}: HTTP 401 from {}{}: the token in HF_TOKEN was refused for {}", url, url_host(url), detail, what);
  }
  if (s == 403)
    fail("{}: HTTP 403 from {}{}: no access to {}; it may be gated (accept its terms on the hub with the "
         "account of HF_TOKEN)", url, url_host(url), detail, what);
  if (s == 404) {
    if (code == "RevisionNotFound") fail("{}: HTTP 404: revision not found for {}{}", url, what, detail);
    fail("{}: HTTP 404: {} not found on {}{}", url, what, url_host(url), detail);
  }
  fail("{}: HTTP {} from {} for {}{}", url, s, url_host(url), what, detail);
}

}  // namespace ignis::hub
