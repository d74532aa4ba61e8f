// A fixed pool of worker threads for data-parallel kernels.
//
// run(fn) calls fn(ith, nth) once on each of the nth = n_threads() threads (the calling thread is
// ith 0) and returns when all calls have returned. Workers wait between runs by spinning briefly, then
// sleeping, so back-to-back small decode ops do not pay a futex round trip each.
// One run() at a time per pool: run() is not reentrant and must be called from one thread at a time.
// An exception thrown by fn on the calling thread (ith 0) is rethrown by run() once every worker has
// finished; fn must not throw on worker threads (that terminates the process).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace ignis {

class ThreadPool {
 public:
  // n_threads <= 0 picks the number of hardware threads.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  template <typename F>
  void run(F&& fn) {
    struct Thunk {
      static void call(void* ctx, int ith, int nth) { (*static_cast<F*>(ctx))(ith, nth); }
    };
    run_raw(&Thunk::call, &fn);
  }

  // Splits [0, n) into n_threads() contiguous chunks; chunk boundaries are multiples of `grain`.
  static void split(int64_t n, int ith, int nth, int64_t grain, int64_t* begin, int64_t* end);

 private:
  using RawFn = void (*)(void* ctx, int ith, int nth);
  void run_raw(RawFn fn, void* ctx);
  void worker(int ith);

  int n_threads_;
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  RawFn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int> sleepers_{0};
};

}  // namespace ignis
