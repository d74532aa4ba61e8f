// LlmEngine: the implementation of the public ignis::Engine (include/ignis/engine.h).
//
// One engine thread owns the model's thread pool, the scheduler, the paged KV store and every request's
// sampling state. Other threads talk to it through an inbox (new requests, cancellations) guarded by a
// mutex; results leave through the requests' callbacks, which run on the engine thread.
#pragma once

#include <memory>

#include "ignis/engine.h"

namespace ignis::engine {

std::unique_ptr<ignis::Engine> make_engine(const ignis::EngineOptions& opts);

}  // namespace ignis::engine
