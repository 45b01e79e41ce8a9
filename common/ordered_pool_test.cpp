// OrderedPool (common/ordered_pool.hpp). Built into runtime_tests, the threaded suite that CI's
// TSan job runs, so its locking is checked under ThreadSanitizer too.
#include "common/ordered_pool.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

using topocoll::OrderedPool;

TEST_CASE("OrderedPool: results in index order, on any number of workers") {
  for (int workers : {0, 1, 2, 3, 8}) {
    CAPTURE(workers);
    std::atomic<int> calls{0};
    // Later indices finish first (shorter sleeps), so an unordered hand-out would show.
    OrderedPool<std::string> pool(20, workers, [&](std::size_t i, int w) {
      ++calls;
      CHECK(w >= 0);
      CHECK(w < std::max(1, workers));
      std::this_thread::sleep_for(std::chrono::microseconds(200 * (20 - i)));
      return std::to_string(i * i);
    });
    for (std::size_t i = 0; i < 20; ++i) CHECK(pool.get(i) == std::to_string(i * i));
    CHECK(calls == 20);
  }
}

TEST_CASE("OrderedPool: a task's exception comes out of its own get, the others' results stay") {
  OrderedPool<int> pool(6, 3, [](std::size_t i, int) -> int {
    if (i == 2) throw std::runtime_error("task 2 failed");
    return static_cast<int>(i);
  });
  CHECK(pool.get(0) == 0);
  CHECK(pool.get(1) == 1);
  CHECK_THROWS_WITH_AS(pool.get(2), "task 2 failed", std::runtime_error);
  CHECK(pool.get(3) == 3);
}

TEST_CASE("OrderedPool: a caller that leaves early does not wait for the rest") {
  std::atomic<int> started{0};
  {
    OrderedPool<int> pool(1000, 2, [&](std::size_t i, int) {
      ++started;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      return static_cast<int>(i);
    });
    CHECK(pool.get(0) == 0);
  }  // destroyed: no more tasks start; the running ones finish
  // 1000 tasks of 2 ms on 2 threads take a second; the pool was gone after a few of them.
  CHECK(started < 1000);
}

TEST_CASE("OrderedPool: wait_for says whether a task has ended, without taking its result") {
  // A long task (a large point) keeps the caller's progress going: wait_for times out while it
  // runs and answers true once it has ended, an error included; without threads it is true.
  std::atomic<bool> release{false};
  OrderedPool<int> pool(2, 2, [&](std::size_t i, int) -> int {
    if (i == 1) throw std::runtime_error("task 1 failed");
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return 7;
  });
  CHECK_FALSE(pool.wait_for(0, std::chrono::milliseconds(20)));
  CHECK_FALSE(pool.wait_for(0, std::chrono::milliseconds(20)));
  release = true;
  while (!pool.wait_for(0, std::chrono::milliseconds(20))) {
  }
  CHECK(pool.get(0) == 7);
  while (!pool.wait_for(1, std::chrono::milliseconds(20))) {
  }
  CHECK_THROWS_WITH_AS(pool.get(1), "task 1 failed", std::runtime_error);

  OrderedPool<int> inline_pool(1, 1, [](std::size_t, int) { return 3; });
  CHECK(inline_pool.wait_for(0, std::chrono::milliseconds(0)));
  CHECK(inline_pool.get(0) == 3);
}
