// ThreadPool: workers wake on a generation counter. A worker spins (with pause) for a short while
// after each run, so a stream of small ops (decode) never pays a futex wake; after kSpin it sleeps
// on the condition variable, and run() only takes the mutex when someone is asleep.
//
// NOTE: after kPauseSpins pause iterations every waiter (workers and the caller in run()) yields the
// core between polls. On a dedicated machine yield returns at once (nothing else is runnable), so the
// wake latency stays in the microseconds; on an oversubscribed one (CI, shared dev boxes) a waiter no
// longer burns the time slice of the thread it is waiting for.
#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <exception>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define IGNIS_CPU_RELAX() _mm_pause()
#else
#define IGNIS_CPU_RELAX() std::this_thread::yield()
#endif

namespace ignis {
namespace {

constexpr auto kSpin = std::chrono::microseconds(200);
constexpr uint32_t kPauseSpins = 1024;

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n_threads_ = n_threads;
  threads_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  {
    std::lock_guard<std::mutex> lk(mu_);
    cv_.notify_all();
  }
  for (auto& t : threads_) t.join();
}

void ThreadPool::split(int64_t n, int ith, int nth, int64_t grain, int64_t* begin, int64_t* end) {
  if (grain < 1) grain = 1;
  const int64_t units = (n + grain - 1) / grain;
  const int64_t b = units * ith / nth;
  const int64_t e = units * (ith + 1) / nth;
  *begin = std::min(n, b * grain);
  *end = std::min(n, e * grain);
}

void ThreadPool::run_raw(RawFn fn, void* ctx) {
  if (n_threads_ == 1) {
    fn(ctx, 0, 1);
    return;
  }
  fn_ = fn;
  ctx_ = ctx;
  pending_.store(n_threads_ - 1);
  generation_.fetch_add(1);  // seq_cst: orders the store above before the sleepers_ load below
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lk(mu_);
    cv_.notify_all();
  }
  // The workers use fn / ctx (the caller's stack) until pending_ drops to 0: wait even if fn throws here.
  std::exception_ptr error;
  try {
    fn(ctx, 0, n_threads_);
  } catch (...) {
    error = std::current_exception();
  }
  uint32_t spins = 0;
  while (pending_.load(std::memory_order_acquire) != 0) {
    if (++spins < kPauseSpins) IGNIS_CPU_RELAX();
    else std::this_thread::yield();
  }
  if (error) std::rethrow_exception(error);
}

void ThreadPool::worker(int ith) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    if (gen == seen) {
      const auto deadline = std::chrono::steady_clock::now() + kSpin;
      uint32_t i = 0;
      while ((gen = generation_.load(std::memory_order_acquire)) == seen) {
        if (++i < kPauseSpins) {
          IGNIS_CPU_RELAX();
          continue;
        }
        std::this_thread::yield();
        if (std::chrono::steady_clock::now() > deadline) break;
      }
      if (gen == seen) {
        std::unique_lock<std::mutex> lk(mu_);
        sleepers_.fetch_add(1);  // seq_cst, pairs with run_raw's generation_ increment
        cv_.wait(lk, [&] { return generation_.load() != seen; });
        sleepers_.fetch_sub(1);
        gen = generation_.load();
      }
    }
    seen = gen;
    if (stop_.load()) return;
    fn_(ctx_, ith, n_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace ignis
