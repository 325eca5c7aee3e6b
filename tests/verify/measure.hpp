// Measuring helpers shared by the LibTorch (C++) verification scenarios.
//
// The C++ twin of measure.py: every `<ID>/leaky.cpp` / `fixed.cpp` keeps the pattern that
// leaklint is meant to flag in its own file and uses this header only to observe what the
// pattern does, and writes the same JSON document as its Python twin, so that the same
// verdict function (verdicts.py) judges both:
//
//   {"rule", "variant", "device", "iters", "env", "series": {phase: {key: [...]}},
//    "scalars", "errors": {phase: {"type", "message", "where"}}, "error", "skipped",
//    "notes", "wall_s", "peak_rss_mib"}
//
// * SavedTensorMeter counts the bytes of tensors that autograd keeps for a backward pass,
//   through autograd's saved-variable hooks: LibTorch asks its default engine for the
//   hooks of every SavedVariable, and Run installs an engine that hands out counting
//   hooks while a Scope is alive. Each saved storage is counted once while any graph
//   still holds it. As in Python, hooks switch off autograd's "modified by an inplace
//   operation" check; the unpack hook repeats it.
// * rss/hwm (/proc/self/status), heap_live_bytes (glibc mallinfo2), smaps_rollup.
// * graph_nodes, GradProbe, ParamProbe as in measure.py.
//
// glibc's mmap threshold is fixed at 128 KiB before main(), as measure.py does on import.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace measure {

constexpr double MiB = 1024.0 * 1024.0;
constexpr double KiB = 1024.0;

// A JSON value: null, bool, integer, number, string, list or object (keys in order).
struct Value {
  enum Kind { Null, Bool, Int, Num, Str, List, Object } kind = Null;
  bool b = false;
  int64_t i = 0;
  double n = 0.0;
  std::string s;
  std::vector<Value> items;
  std::vector<std::pair<std::string, Value>> fields;

  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool v) : kind(Bool), b(v) {}
  Value(int v) : kind(Int), i(v) {}
  Value(long v) : kind(Int), i(v) {}
  Value(long long v) : kind(Int), i(v) {}
  Value(unsigned long v) : kind(Int), i(static_cast<int64_t>(v)) {}
  Value(double v) : kind(Num), n(v) {}
  Value(const char* v) : kind(Str), s(v) {}
  Value(std::string v) : kind(Str), s(std::move(v)) {}
  Value(std::vector<Value> v) : kind(List), items(std::move(v)) {}
  static Value object(std::vector<std::pair<std::string, Value>> f) {
    Value v;
    v.kind = Object;
    v.fields = std::move(f);
    return v;
  }
  std::string dump(int indent = 0) const;
};

using Extra = std::vector<std::pair<std::string, Value>>;

// /proc and malloc readings, in bytes.
int64_t rss_bytes();
int64_t hwm_bytes();
bool reset_peak_rss();
int64_t heap_live_bytes();
std::map<std::string, int64_t> smaps_rollup(const std::string& pid = "self");
std::map<std::string, int64_t> meminfo();

// CPU time of the calling thread, in milliseconds. LibTorch runs a CPU backward pass on the
// thread that calls backward(), and Run sets one intra-op thread, so this is the work done,
// unlike wall time not inflated by other programs on a shared machine.
double thread_cpu_ms();

// Bytes of the storages behind `tensors`, each storage counted once.
int64_t tensor_bytes(const std::vector<torch::Tensor>& tensors);
// Autograd nodes reachable from t.grad_fn() (0 without history).
int64_t graph_nodes(const torch::Tensor& t);

class SavedTensorMeter {
 public:
  // Do not count these storages (parameters, which live on anyway).
  SavedTensorMeter& ignore(const std::vector<torch::Tensor>& tensors);
  void reset_peak();
  int64_t bytes() const;
  int64_t peak() const;
  int64_t packed() const;

  struct State;

  // Counting is on while a Scope is alive (Python: `with run.meter:`).
  class Scope {
   public:
    explicit Scope(SavedTensorMeter& meter);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    State* previous_;
  };

  SavedTensorMeter();
  ~SavedTensorMeter();

 private:
  std::shared_ptr<State> state_;
};

// Separates the gradient of the current batch from what .grad holds (measure.GradProbe).
class GradProbe {
 public:
  explicit GradProbe(std::vector<torch::Tensor> params);
  int64_t grads_alive_bytes() const;
  void before();
  struct Result {
    double fresh, applied;
    int64_t batches, grad_bytes;
    bool same_buffers;
  };
  Result after();

 private:
  std::vector<torch::Tensor> params_, prev_;
  std::vector<const void*> ptrs_;
  bool have_ptrs_ = false;
  int64_t batches_ = 0;
};

// Norm of the parameter change since the previous call (measure.ParamProbe).
class ParamProbe {
 public:
  explicit ParamProbe(std::vector<torch::Tensor> params);
  double delta();

 private:
  std::vector<torch::Tensor> params_, last_;
};

// Thrown by a scenario that cannot measure anything on this device.
struct Skip : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Run {
 public:
  Run(const std::string& rule, const std::string& variant, int iters, int argc, char** argv);

  int iters;
  // --device cuda: CUDA (skipped where LibTorch sees none); cpu and auto: the CPU.
  torch::Device device{torch::kCPU};
  bool cuda = false;
  SavedTensorMeter meter;

  // Memory of this process on the CPU (measure.Mem): RSS now / peak since reset_peak.
  int64_t mem_now() const { return rss_bytes(); }
  int64_t mem_peak() const { return hwm_bytes(); }
  bool mem_reset_peak() const { return reset_peak_rss(); }

  void record(const std::string& phase, const Extra& values);
  // The standard memory sample (MiB) plus `extra`.
  void sample(int64_t step, const std::string& phase = "main", const Extra& extra = {});
  void set(const std::string& key, Value value);
  void note(const std::string& text);
  void require_cuda(const std::string& why) const;
  // Runs fn; an exception is recorded under `name` and the run goes on.
  void phase(const std::string& name, const std::function<void()>& fn);
  double now_s() const;

  // Runs the scenario and writes the JSON document; the exit status is 0 unless it threw.
  int finish(const std::function<void(Run&)>& scenario);

 private:
  std::string rule_, variant_, json_path_, device_name_;
  int64_t seed_ = 0;
  std::vector<std::pair<std::string, Extra>> series_;  // phase -> key -> values (in order)
  Extra scalars_;
  Extra errors_;
  std::vector<Value> notes_;
  double t0_;
};

Value describe_error(const std::exception& e);

// main() of a scenario: measure::main(argc, argv, "LL101", "leaky", 16, scenario).
int main(int argc, char** argv, const std::string& rule, const std::string& variant, int iters,
         const std::function<void(Run&)>& scenario);

}  // namespace measure
