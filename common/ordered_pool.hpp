// OrderedPool: n tasks run ahead on a few threads, their results taken in index order. For a
// sweep whose points are independent and whose output must come out in order (`topocoll sim`):
// the printing loop calls get(0), get(1), ... and each call waits for that point only.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/errors.hpp"

namespace topocoll {

template <class Result>
class OrderedPool {
 public:
  // task(index, worker): worker is 0 .. workers-1 (0 on the caller's thread when workers <= 1),
  // for per-worker state such as an engine. Tasks start in index order.
  using Task = std::function<Result(std::size_t index, int worker)>;

  // workers <= 1: no thread; get(i) runs task i on the caller's thread.
  OrderedPool(std::size_t n, int workers, Task task) : task_(std::move(task)), results_(n), errors_(n) {
    if (workers <= 1) return;
    for (int w = 0; w < workers && static_cast<std::size_t>(w) < n; ++w) threads_.emplace_back([this, w] { work(w); });
  }
  OrderedPool(const OrderedPool&) = delete;
  OrderedPool& operator=(const OrderedPool&) = delete;

  // Starts no more tasks, waits for the running ones (a caller that leaves early, e.g. on an
  // error, does not wait for the rest of the sweep).
  ~OrderedPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    for (std::thread& t : threads_) t.join();
  }

  // Whether task i has ended (get(i) then returns at once), waiting at most `timeout` for it:
  // the caller's loop can show progress while a long task runs. Without threads, true (get runs
  // the task).
  bool wait_for(std::size_t i, std::chrono::milliseconds timeout) {
    TOPOCOLL_ASSERT(i < results_.size(), "OrderedPool::wait_for: index out of range");
    if (threads_.empty()) return true;
    std::unique_lock<std::mutex> lock(mutex_);
    return done_.wait_for(lock, timeout, [&] { return results_[i].has_value() || errors_[i] != nullptr; });
  }

  // Task i's result (its exception rethrown). Call once per index, in increasing order.
  Result get(std::size_t i) {
    TOPOCOLL_ASSERT(i < results_.size(), "OrderedPool::get: index out of range");
    if (threads_.empty()) return task_(i, 0);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return results_[i].has_value() || errors_[i] != nullptr; });
    if (errors_[i]) std::rethrow_exception(errors_[i]);
    Result r = std::move(*results_[i]);
    results_[i].reset();
    return r;
  }

 private:
  void work(int worker) {
    for (;;) {
      std::size_t i = 0;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stop_ || next_ >= results_.size()) return;
        i = next_++;
      }
      std::optional<Result> r;
      std::exception_ptr e;
      try {
        r.emplace(task_(i, worker));
      } catch (...) {
        e = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (e)
          errors_[i] = e;
        else
          results_[i] = std::move(r);
      }
      done_.notify_all();
    }
  }

  Task task_;
  std::mutex mutex_;
  std::condition_variable done_;
  std::vector<std::optional<Result>> results_;
  std::vector<std::exception_ptr> errors_;
  std::size_t next_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace topocoll
