// The per-file work budget: one deadline for the whole analysis of a file (parse,
// lowering, facts, checks), and a count of the work done on this thread.
//
// The frontend and the checks call tick() in their inner loops. The count is what the
// scaling tests measure (deterministic, unlike time); every few thousand ticks the clock
// is read, and past the deadline tick() throws Exceeded, which the engine turns into a
// per-file `timeout` diagnostic. Without an armed Scope (leaklint-cpp, unit tests) tick()
// only counts. The clock is this thread's CPU time: analysis never waits, so CPU time is
// what a hostile file can consume, and a loaded machine (parallel CI jobs, sanitizers)
// does not turn a normal file into a timeout.
#pragma once

#include <time.h>

#include <cstdint>

namespace ll::budget {

struct Exceeded {};

struct State {
  uint64_t steps = 0;
  int64_t until_poll = 0;
  bool armed = false;
  int64_t deadline_ns = 0;  // in thread CPU time
  uint64_t step_limit = UINT64_MAX;  // steps value past which tick() throws (armed only)
};

inline thread_local State t_state;

constexpr int64_t kPollEvery = 4096;

// CPU time of the calling thread, in nanoseconds.
inline int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline void poll() {
  t_state.until_poll = kPollEvery;
  if (t_state.armed &&
      (t_state.steps >= t_state.step_limit || thread_cpu_ns() >= t_state.deadline_ns))
    throw Exceeded{};
}

// Records `n` units of work (one inner-loop iteration each).
inline void tick(uint64_t n = 1) {
  t_state.steps += n;
  t_state.until_poll -= static_cast<int64_t>(n);
  if (t_state.until_poll <= 0) poll();
}

// Work done on this thread so far.
inline uint64_t steps() { return t_state.steps; }

// Arms a deadline `ms` of CPU time from now for this thread (restoring the previous one on
// exit), and optionally a cap of `max_steps` units of work (0: none), exact on any machine.
class Scope {
 public:
  explicit Scope(uint64_t ms, uint64_t max_steps = 0) : saved_(t_state) {
    t_state.armed = true;
    t_state.deadline_ns = thread_cpu_ns() + static_cast<int64_t>(ms > 1'000'000'000 ? 1'000'000'000 : ms) * 1'000'000;
    t_state.step_limit = max_steps ? t_state.steps + max_steps : UINT64_MAX;
    t_state.until_poll = kPollEvery;
  }
  ~Scope() {
    const uint64_t steps = t_state.steps;
    t_state = saved_;
    t_state.steps = steps;
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  State saved_;
};

}  // namespace ll::budget
