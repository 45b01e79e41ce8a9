#include "runtime/progress_thread.hpp"

#include <fmt/format.h>

#include "common/errors.hpp"

namespace topocoll::runtime {

ProgressThread::ProgressThread() : thread_([this] { loop(); }) {}

ProgressThread::~ProgressThread() {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return plan_ == nullptr; });
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ProgressThread::drive(Plan& plan) {
  if (!plan.running())
    throw InputError(
        fmt::format("progress thread: {} on rank {} is not started (Plan::start first)", plan.name(), plan.rank()));
  {
    std::lock_guard lock(mu_);
    if (plan_ != nullptr)
      throw InputError(fmt::format("progress thread: still driving {} on rank {}; wait() for it before handing over {}",
                                   plan_->name(), plan_->rank(), plan.name()));
    plan_ = &plan;
    failure_ = nullptr;
  }
  cv_.notify_all();
}

bool ProgressThread::done() {
  std::lock_guard lock(mu_);
  return plan_ == nullptr;
}

void ProgressThread::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return plan_ == nullptr; });
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

void ProgressThread::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || plan_ != nullptr; });
    if (plan_ == nullptr) return;  // stop_
    Plan* p = plan_;
    lock.unlock();
    std::exception_ptr failure;
    try {
      p->wait();
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    failure_ = failure;
    plan_ = nullptr;
    cv_.notify_all();
  }
}

}  // namespace topocoll::runtime
