// Implementation of measure.hpp (compiled once, linked into every C++ scenario).
#include "measure.hpp"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/saved_variable_hooks.h>

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace measure {

namespace {

constexpr int kMmapThreshold = 128 * 1024;

// Before main(): freed tensors of 128 KiB or more go back to the kernel at once, so that
// RSS does not report memory no tensor holds (measure.py does the same on import).
const bool kMallocTuned = [] {
  int ok = mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, kMmapThreshold);
  return ok == 1;
}();

double seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

void append_escaped(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void dump_to(const Value& v, std::string& out, int indent, int depth) {
  auto newline = [&](int d) {
    if (indent > 0) {
      out += '\n';
      out.append(static_cast<size_t>(indent * d), ' ');
    }
  };
  switch (v.kind) {
    case Value::Null: out += "null"; break;
    case Value::Bool: out += v.b ? "true" : "false"; break;
    case Value::Int: out += std::to_string(v.i); break;
    case Value::Num:
      if (std::isnan(v.n)) {
        out += "NaN";  // as Python's json writes it
      } else if (std::isinf(v.n)) {
        out += v.n > 0 ? "Infinity" : "-Infinity";
      } else {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.15g", v.n);  // the shortest that reads back, as Python
        if (std::strtod(buf, nullptr) != v.n) std::snprintf(buf, sizeof buf, "%.17g", v.n);
        out += buf;
        if (!std::strpbrk(buf, ".eE")) out += ".0";
      }
      break;
    case Value::Str: append_escaped(out, v.s); break;
    case Value::List:
      out += '[';
      for (size_t k = 0; k < v.items.size(); ++k) {
        if (k) out += ',';
        newline(depth + 1);
        dump_to(v.items[k], out, indent, depth + 1);
      }
      if (!v.items.empty()) newline(depth);
      out += ']';
      break;
    case Value::Object:
      out += '{';
      for (size_t k = 0; k < v.fields.size(); ++k) {
        if (k) out += ',';
        newline(depth + 1);
        append_escaped(out, v.fields[k].first);
        out += ": ";
        dump_to(v.fields[k].second, out, indent, depth + 1);
      }
      if (!v.fields.empty()) newline(depth);
      out += '}';
      break;
  }
}

Value* find_field(Extra& fields, const std::string& key) {
  for (auto& kv : fields)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

void put_field(Extra& fields, const std::string& key, Value value) {
  if (Value* v = find_field(fields, key)) {
    *v = std::move(value);
  } else {
    fields.emplace_back(key, std::move(value));
  }
}

std::map<std::string, int64_t> proc_status() {
  std::map<std::string, int64_t> out;
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Vm", 0) != 0 && line.rfind("Rss", 0) != 0) continue;
    auto colon = line.find(':');
    std::istringstream rest(line.substr(colon + 1));
    int64_t kb = 0;
    std::string unit;
    if (rest >> kb >> unit && unit == "kB") out[line.substr(0, colon)] = kb * 1024;
  }
  return out;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      auto start = line.find_first_not_of(" \t", colon + 1);
      return start == std::string::npos ? "" : line.substr(start);
    }
  }
  return "";
}

const void* storage_ptr(const torch::Tensor& t) { return t.storage().data(); }

}  // namespace

std::string Value::dump(int indent) const {
  std::string out;
  dump_to(*this, out, indent, 0);
  return out;
}

// ----------------------------------------------------------------------------- /proc

int64_t rss_bytes() { return proc_status()["VmRSS"]; }
int64_t hwm_bytes() { return proc_status()["VmHWM"]; }

bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

int64_t heap_live_bytes() {
  struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
}

std::map<std::string, int64_t> smaps_rollup(const std::string& pid) {
  std::map<std::string, int64_t> out;
  std::ifstream in("/proc/" + pid + "/smaps_rollup");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string key, unit;
    int64_t kb = 0;
    if (words >> key >> kb >> unit && unit == "kB" && key.size() > 1 && key.back() == ':')
      out[key.substr(0, key.size() - 1)] = kb * 1024;
  }
  return out;
}

std::map<std::string, int64_t> meminfo() {
  std::map<std::string, int64_t> out;
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string key;
    int64_t kb = 0;
    if (words >> key >> kb && key.size() > 1) out[key.substr(0, key.size() - 1)] = kb * 1024;
  }
  return out;
}

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

// ----------------------------------------------------------------------------- tensors

int64_t tensor_bytes(const std::vector<torch::Tensor>& tensors) {
  std::set<const void*> seen;
  int64_t total = 0;
  for (const auto& t : tensors) {
    if (!t.defined()) continue;
    if (seen.insert(storage_ptr(t)).second) total += static_cast<int64_t>(t.storage().nbytes());
  }
  return total;
}

int64_t graph_nodes(const torch::Tensor& t) {
  auto fn = t.grad_fn();
  if (!fn) return 0;
  std::unordered_set<torch::autograd::Node*> seen{fn.get()};
  std::vector<torch::autograd::Node*> stack{fn.get()};
  while (!stack.empty()) {
    auto* node = stack.back();
    stack.pop_back();
    for (const auto& edge : node->next_edges()) {
      auto* next = edge.function.get();
      if (next && seen.insert(next).second) stack.push_back(next);
    }
  }
  return static_cast<int64_t>(seen.size());
}

// ----------------------------------------------------------------------------- meter

struct SavedTensorMeter::State {
  std::mutex mu;
  std::unordered_map<const void*, std::pair<int64_t, int64_t>> live;  // ptr -> (refs, bytes)
  std::unordered_set<const void*> ignored;
  int64_t bytes = 0, peak = 0, packed = 0;

  const void* pack(const torch::Tensor& t) {
    std::lock_guard<std::mutex> lock(mu);
    ++packed;
    const void* key = storage_ptr(t);
    if (ignored.count(key)) return nullptr;
    auto it = live.find(key);
    if (it == live.end()) {
      int64_t n = static_cast<int64_t>(t.storage().nbytes());
      live.emplace(key, std::make_pair(int64_t{1}, n));
      bytes += n;
      if (bytes > peak) peak = bytes;
    } else {
      ++it->second.first;
    }
    return key;
  }

  void release(const void* key) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = live.find(key);
    if (it == live.end()) return;
    if (--it->second.first == 0) {
      bytes -= it->second.second;
      live.erase(it);
    }
  }
};

namespace {

// The meter that counts right now (set by SavedTensorMeter::Scope).
std::atomic<SavedTensorMeter::State*> g_active{nullptr};

// What autograd stores instead of the saved tensor while a meter is on: a detached alias
// (it shares the version counter, so the unpack hook can repeat autograd's check).
class CountingHooks final : public torch::autograd::SavedVariableHooks {
 public:
  explicit CountingHooks(std::shared_ptr<SavedTensorMeter::State> state) : state_(std::move(state)) {}
  ~CountingHooks() override {
    if (key_) state_->release(key_);
  }
  void call_pack_hook(const at::Tensor& tensor) override {
    held_ = tensor.detach();
    version_ = held_._version();
    key_ = state_->pack(tensor);
  }
  at::Tensor call_unpack_hook() override {
    if (held_._version() != version_) {
      std::ostringstream msg;
      msg << "one of the variables needed for gradient computation has been modified by an "
             "inplace operation: ["
          << held_.toString() << " " << held_.sizes() << "] is at version " << held_._version()
          << "; expected version " << version_
          << " instead. (Raised by the saved-tensor meter of the verification suite, which "
             "repeats the check that autograd skips for tensors packed by saved-variable hooks.)";
      TORCH_CHECK(false, msg.str());
    }
    return held_;
  }

 private:
  std::shared_ptr<SavedTensorMeter::State> state_;
  at::Tensor held_;
  int64_t version_ = 0;
  const void* key_ = nullptr;
};

std::shared_ptr<SavedTensorMeter::State> lock_active();

// LibTorch's default engine, except that it hands out counting hooks for every saved
// variable while a meter is on. (The Python bindings install their engine the same way.)
class MeteringEngine final : public torch::autograd::Engine {
 public:
  std::unique_ptr<torch::autograd::SavedVariableHooks> get_default_saved_variable_hooks() override {
    auto state = lock_active();
    if (!state) return nullptr;
    return std::make_unique<CountingHooks>(std::move(state));
  }
  static Engine& get() {
    static MeteringEngine* engine = new MeteringEngine();  // lives as long as the process
    return *engine;
  }
};

// Owners of the states that Scope activates (a state outlives the hooks that use it).
std::mutex g_states_mu;
std::unordered_map<SavedTensorMeter::State*, std::weak_ptr<SavedTensorMeter::State>> g_states;

std::shared_ptr<SavedTensorMeter::State> lock_active() {
  SavedTensorMeter::State* raw = g_active.load();
  if (!raw) return nullptr;
  std::lock_guard<std::mutex> lock(g_states_mu);
  auto it = g_states.find(raw);
  return it == g_states.end() ? nullptr : it->second.lock();
}

const bool kEngineInstalled = [] {
  torch::autograd::set_default_engine_stub(&MeteringEngine::get);
  return true;
}();

}  // namespace

SavedTensorMeter::SavedTensorMeter() : state_(std::make_shared<State>()) {
  std::lock_guard<std::mutex> lock(g_states_mu);
  g_states[state_.get()] = state_;
}

SavedTensorMeter::~SavedTensorMeter() {
  std::lock_guard<std::mutex> lock(g_states_mu);
  g_states.erase(state_.get());
}

SavedTensorMeter& SavedTensorMeter::ignore(const std::vector<torch::Tensor>& tensors) {
  std::lock_guard<std::mutex> lock(state_->mu);
  for (const auto& t : tensors) state_->ignored.insert(storage_ptr(t));
  return *this;
}

void SavedTensorMeter::reset_peak() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->peak = state_->bytes;
}

int64_t SavedTensorMeter::bytes() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->bytes;
}

int64_t SavedTensorMeter::peak() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->peak;
}

int64_t SavedTensorMeter::packed() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->packed;
}

SavedTensorMeter::Scope::Scope(SavedTensorMeter& meter) {
  (void)kEngineInstalled;
  previous_ = g_active.exchange(meter.state_.get());
}

SavedTensorMeter::Scope::~Scope() { g_active.store(previous_); }

// ----------------------------------------------------------------------------- probes

namespace {

double norm(const std::vector<torch::Tensor>& tensors) {
  double total = 0.0;
  for (const auto& t : tensors)
    if (t.defined()) total += t.detach().to(torch::kDouble).pow(2).sum().item<double>();
  return std::sqrt(total);
}

std::vector<torch::Tensor> grads(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params) out.push_back(p.grad());
  return out;
}

}  // namespace

GradProbe::GradProbe(std::vector<torch::Tensor> params) : params_(std::move(params)) {}

int64_t GradProbe::grads_alive_bytes() const { return tensor_bytes(grads(params_)); }

void GradProbe::before() {
  torch::NoGradGuard no_grad;
  prev_.clear();
  bool all_empty = true;
  for (const auto& p : params_) {
    const auto& g = p.grad();
    prev_.push_back(g.defined() ? g.detach().clone() : torch::Tensor());
    if (g.defined() && g.any().item<bool>()) all_empty = false;
  }
  if (all_empty) batches_ = 0;
}

GradProbe::Result GradProbe::after() {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> fresh;
  for (size_t k = 0; k < params_.size(); ++k) {
    const auto& g = params_[k].grad();
    if (!g.defined()) continue;
    fresh.push_back(prev_[k].defined() ? g - prev_[k] : g);
  }
  ++batches_;
  std::vector<const void*> ptrs;
  for (const auto& p : params_) ptrs.push_back(p.grad().defined() ? p.grad().data_ptr() : nullptr);
  bool same = !have_ptrs_ || ptrs == ptrs_;
  if (!have_ptrs_) {
    ptrs_ = ptrs;
    have_ptrs_ = true;
  }
  return {norm(fresh), norm(grads(params_)), batches_, grads_alive_bytes(), same};
}

ParamProbe::ParamProbe(std::vector<torch::Tensor> params) : params_(std::move(params)) {
  for (const auto& p : params_) last_.push_back(p.detach().clone());
}

double ParamProbe::delta() {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> diff;
  for (size_t k = 0; k < params_.size(); ++k) diff.push_back(params_[k].detach() - last_[k]);
  double d = norm(diff);
  for (size_t k = 0; k < params_.size(); ++k) last_[k] = params_[k].detach().clone();
  return d;
}

// ----------------------------------------------------------------------------- run

Value describe_error(const std::exception& e) {
  // The Python bindings raise c10 errors as these Python exceptions.
  std::string type = "RuntimeError";
  std::string message = e.what();
  if (const auto* c10e = dynamic_cast<const c10::Error*>(&e)) {
    message = c10e->what_without_backtrace();
    if (dynamic_cast<const c10::IndexError*>(&e)) type = "IndexError";
    else if (dynamic_cast<const c10::ValueError*>(&e)) type = "ValueError";
    else if (dynamic_cast<const c10::TypeError*>(&e)) type = "TypeError";
    else if (dynamic_cast<const c10::NotImplementedError*>(&e)) type = "NotImplementedError";
  } else if (dynamic_cast<const std::bad_alloc*>(&e)) {
    type = "MemoryError";
  }
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  if (message.size() > 4000) message.resize(4000);
  return Value::object({{"type", type}, {"message", message}, {"where", nullptr}});
}

Run::Run(const std::string& rule, const std::string& variant, int default_iters, int argc, char** argv)
    : iters(default_iters), rule_(rule), variant_(variant), device_name_("auto"), t0_(seconds()) {
  (void)kMallocTuned;
  // --device {auto,cpu,cuda} --iters N --json OUT --seed S; other flags are ignored (the
  // Python scenarios parse with parse_known_args, too).
  for (int k = 1; k < argc; ++k) {
    std::string arg = argv[k];
    std::string value;
    auto eq = arg.find('=');
    bool inline_value = arg.rfind("--", 0) == 0 && eq != std::string::npos;
    std::string flag = inline_value ? arg.substr(0, eq) : arg;
    auto take = [&]() -> std::string {
      if (inline_value) return arg.substr(eq + 1);
      if (k + 1 < argc) return argv[++k];
      throw std::invalid_argument(flag + " needs a value");
    };
    if (flag == "--iters") {
      iters = std::stoi(take());
    } else if (flag == "--json") {
      json_path_ = take();
    } else if (flag == "--device") {
      device_name_ = take();
      if (device_name_ != "auto" && device_name_ != "cpu" && device_name_ != "cuda")
        throw std::invalid_argument("--device must be auto, cpu or cuda");
    } else if (flag == "--seed") {
      seed_ = std::stoll(take());
    } else if (flag == "-h" || flag == "--help") {
      std::cout << "usage: " << argv[0] << " [--device {auto,cpu,cuda}] [--iters N] [--json OUT] [--seed S]\n";
      std::exit(0);
    }
  }
  // The meters read host memory (this build links no CUDA allocator statistics), so the
  // scenarios run on the CPU unless --device cuda asks for it (LL501 needs CUDA to fail).
  cuda = device_name_ == "cuda";
  device = cuda ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  torch::manual_seed(static_cast<uint64_t>(seed_));
  // One intra-op thread: on a shared machine, OpenMP workers waiting for a descheduled
  // sibling would add other programs' load to the timings (LL103's backward time).
  torch::set_num_threads(1);
}

void Run::record(const std::string& phase, const Extra& values) {
  Extra* bucket = nullptr;
  for (auto& p : series_)
    if (p.first == phase) bucket = &p.second;
  if (!bucket) {
    series_.emplace_back(phase, Extra{});
    bucket = &series_.back().second;
  }
  for (const auto& kv : values) {
    Value* list = find_field(*bucket, kv.first);
    if (!list) {
      bucket->emplace_back(kv.first, Value(std::vector<Value>{}));
      list = &bucket->back().second;
    }
    list->items.push_back(kv.second);
  }
}

void Run::sample(int64_t step, const std::string& phase, const Extra& extra) {
  Extra values{{"step", step},
               {"saved_mib", meter.bytes() / MiB},
               {"saved_peak_mib", meter.peak() / MiB},
               {"rss_mib", rss_bytes() / MiB},
               {"heap_mib", heap_live_bytes() / MiB}};
  for (const auto& kv : extra) put_field(values, kv.first, kv.second);
  record(phase, values);
}

void Run::set(const std::string& key, Value value) { put_field(scalars_, key, std::move(value)); }

void Run::note(const std::string& text) { notes_.emplace_back(text); }

void Run::require_cuda(const std::string& why) const {
  if (!cuda) throw Skip(why);
}

void Run::phase(const std::string& name, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Skip&) {
    throw;
  } catch (const std::exception& e) {
    put_field(errors_, name, describe_error(e));
  }
}

double Run::now_s() const { return seconds() - t0_; }

int Run::finish(const std::function<void(Run&)>& scenario) {
  int status = 0;
  Value error, skipped;
  try {
    if (cuda && !torch::cuda::is_available()) throw Skip("--device cuda: LibTorch sees no CUDA device");
    scenario(*this);
  } catch (const Skip& s) {
    skipped = Value(std::string(s.what()));
  } catch (const std::exception& e) {
    error = describe_error(e);
    std::cerr << "error: " << e.what() << "\n";
    status = 1;
  }
  auto series = Value::object({});
  for (const auto& p : series_) series.fields.emplace_back(p.first, Value::object(p.second));
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  Value doc = Value::object({
      {"rule", rule_},
      {"variant", variant_},
      {"device", cuda ? "cuda" : "cpu"},
      {"iters", iters},
      {"env", Value::object({{"torch", TORCH_VERSION},
                             {"python", nullptr},
                             {"cpu", cpu_model()},
                             {"cores", static_cast<int64_t>(std::thread::hardware_concurrency())},
                             {"cuda_device", nullptr},
                             {"malloc_mmap_threshold", kMallocTuned ? Value(kMmapThreshold) : Value()}})},
      {"series", series},
      {"scalars", Value::object(scalars_)},
      {"errors", Value::object(errors_)},
      {"error", error},
      {"skipped", skipped},
      {"notes", Value(notes_)},
      {"wall_s", std::round(now_s() * 1000.0) / 1000.0},
      {"peak_rss_mib", usage.ru_maxrss * 1024.0 / MiB},
  });
  std::string text = doc.dump(1);
  if (json_path_.empty()) {
    std::cout << text << "\n";
  } else {
    std::ofstream out(json_path_);
    out << text;
    if (!out) {
      std::cerr << "cannot write " << json_path_ << "\n";
      return 1;
    }
  }
  std::cout.flush();
  return status;
}

int main(int argc, char** argv, const std::string& rule, const std::string& variant, int iters,
         const std::function<void(Run&)>& scenario) {
  try {
    Run run(rule, variant, iters, argc, argv);
    return run.finish(scenario);
  } catch (const std::invalid_argument& e) {
    std::cerr << argv[0] << ": " << e.what() << "\n";
    return 2;
  }
}

}  // namespace measure
