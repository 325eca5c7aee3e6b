// A progress line on stderr for runs longer than a second, only when stderr is a
// terminal and the report is human text; cleared before the report is written.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

namespace ll {

class Progress {
 public:
  explicit Progress(bool active) : active_(active), start_(std::chrono::steady_clock::now()) {
    if (active_) ticker_ = std::thread([this] { run(); });
  }
  ~Progress() { finish(); }
  void update(size_t done, size_t total) {
    done_.store(done, std::memory_order_relaxed);
    total_.store(total, std::memory_order_relaxed);
  }
  void finish() {
    if (!ticker_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    ticker_.join();
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; })) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      if (s < 1.0) continue;
      std::fprintf(stderr, "\r\033[Kleaklint: %zu/%zu files (%.1fs)", done_.load(), total_.load(), s);
      std::fflush(stderr);
      shown_ = true;
    }
  }
  bool active_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<size_t> done_{0}, total_{0};
  std::thread ticker_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false, shown_ = false;
};

}  // namespace ll
