// A fixed-size thread pool returning futures (used for parallel NVRTC compilation).
#pragma once

#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace dgt {

class ThreadPool {
 public:
  /// `threads` <= 0 means std::thread::hardware_concurrency().
  explicit ThreadPool(int threads);
  /// Runs the queued tasks to completion, then joins.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }

  /// Drops every task not started yet (their futures report std::future_error broken_promise); running
  /// tasks finish. For a stopping sweep, whose destructor would otherwise wait for the whole queue.
  void discard_queued();

  /// Queues `fn`; its result or exception arrives through the future. Tasks start in FIFO order.
  template <class Fn>
  auto submit(Fn fn) -> std::future<decltype(fn())> {
    using R = decltype(fn());
    auto task = std::make_shared<std::packaged_task<R()>>(std::move(fn));
    std::future<R> fut = task->get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.emplace([task] { (*task)(); });
    }
    cv_.notify_one();
    return fut;
  }

 private:
  void worker();

  std::vector<std::thread> workers_;
  std::queue<std::function<void()>> tasks_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

}  // namespace dgt
