// Requests to the hub with the hub's conventions: the token only to the endpoint's host, and failures
// turned into one-line ignis::Errors that name the host, the URL and the way out.
//
// Thread-safe: stateless helpers over http.h.
#pragma once

#include <string>

#include "hub/hub.h"
#include "hub/http.h"

namespace ignis::hub {

// A request for `url` with the options' timeouts and, when `url` is on the endpoint's host and a token
// is set, "Authorization: Bearer <token>".
HttpRequest hub_request(const HubOptions& opts, const std::string& url);

// Throws when the request failed before any response:
// "cannot reach HOST (URL): WHY; to use a local file pass -m FILE.gguf, or --offline to use the cache".
// `what`, when given, names what was being fetched ("Qwen/X:Q4_K_M") and is added after the host.
void check_reachable(const HttpResponse& resp, const std::string& url, const std::string& what = "");

// Throws for a non-2xx/3xx status with a message fit for it (401 token, 403 gated, 404 repo/file).
// `what` names the thing asked for ("repo Qwen/X" or "Qwen/X/model.gguf").
void check_status(const HttpResponse& resp, const std::string& url, const HubOptions& opts,
                  const std::string& what);

}  // namespace ignis::hub
