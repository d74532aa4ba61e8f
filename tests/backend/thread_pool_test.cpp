// ThreadPool: every thread runs each job exactly once, runs do not overlap, split() covers [0, n).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace ignis {
namespace {

TEST(ThreadPool, EachThreadRunsOncePerJob) {
  for (int n : {1, 2, 3, 5}) {
    ThreadPool pool(n);
    ASSERT_EQ(pool.n_threads(), n);
    for (int rep = 0; rep < 200; ++rep) {
      std::vector<std::atomic<int>> hits(n);
      pool.run([&](int ith, int nth) {
        EXPECT_EQ(nth, n);
        hits[ith].fetch_add(1);
      });
      for (int i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " rep=" << rep << " ith=" << i;
    }
  }
}

TEST(ThreadPool, RunWaitsForAllWorkersIncludingSleepers) {
  ThreadPool pool(3);
  std::atomic<int> done{0};
  for (int rep = 0; rep < 5; ++rep) {
    // Long enough idle gaps that workers go from spinning to sleeping.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    pool.run([&](int ith, int) {
      if (ith != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      done.fetch_add(1);
    });
    ASSERT_EQ(done.load(), 3 * (rep + 1));
  }
}

TEST(ThreadPool, SplitCoversRangeWithGrain) {
  for (int64_t n : {0, 1, 15, 16, 17, 1000}) {
    for (int nth : {1, 2, 3, 7}) {
      int64_t expect_begin = 0;
      for (int ith = 0; ith < nth; ++ith) {
        int64_t b, e;
        ThreadPool::split(n, ith, nth, 16, &b, &e);
        EXPECT_EQ(b, expect_begin);
        EXPECT_LE(b, e);
        if (e < n) {
          EXPECT_EQ(e % 16, 0);
        }
        expect_begin = e;
      }
      EXPECT_EQ(expect_begin, n) << "n=" << n << " nth=" << nth;
    }
  }
}

TEST(ThreadPool, ExceptionOnCallerThreadWaitsForWorkersThenPropagates) {
  ThreadPool pool(3);
  std::atomic<int> finished{0};
  EXPECT_THROW(pool.run([&](int ith, int) {
    if (ith == 0) throw std::runtime_error("boom");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    finished.fetch_add(1);
  }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 2);  // both workers completed before run() returned
  std::atomic<int> hits{0};
  pool.run([&](int, int) { hits.fetch_add(1); });
  EXPECT_EQ(hits.load(), 3);
}

TEST(ThreadPool, DefaultUsesHardwareThreads) {
  ThreadPool pool(0);
  EXPECT_GE(pool.n_threads(), 1);
}

}  // namespace
}  // namespace ignis
