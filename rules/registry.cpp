// The rule catalog table and the text derived from the compiled-in doc pages.
#include "rules/registry.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <cstddef>
#include <utility>

namespace ll {

// Generated from docs/rules/*.md by cmake/embed_docs.cmake (id -> markdown).
extern const std::pair<std::string_view, std::string_view> kRuleDocs[];
extern const int kRuleDocCount;

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::Note: return "note";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "warning";
}

const std::vector<RuleInfo>& all_rules() {
  static const std::vector<RuleInfo> kRules = {
      {"LL101", "missing-no-grad", Severity::Warning, "Python, C++",
       "Model forward in an evaluation or inference loop runs with grad mode enabled", "unsafe"},
      {"LL102", "accumulated-autograd-history", Severity::Error, "Python, C++",
       "Tensor that carries autograd history accumulated across loop iterations", "unsafe"},
      {"LL103", "loop-carried-graph", Severity::Error, "Python, C++",
       "Forward output fed back into the next iteration without detach", ""},
      {"LL104", "grad-mode-not-called", Severity::Error, "Python",
       "Grad-mode context manager used without calling it", "safe"},
      {"LL105", "hook-registered-per-iteration", Severity::Error, "Python, C++",
       "Hook registered once per batch and never removed", ""},
      {"LL106", "activation-captured-in-module-state", Severity::Error, "Python, C++",
       "Forward or hook keeps tensors with autograd history in long-lived state", "unsafe"},
      {"LL201", "zero-grad-missing", Severity::Error, "Python, C++",
       "Training loop never resets gradients between optimizer steps", ""},
      {"LL202", "zero-grad-before-step", Severity::Error, "Python, C++",
       "Gradients reset between backward() and step(), so step() applies nothing", "unsafe"},
      {"LL203", "gradients-not-synchronized", Severity::Error, "Python",
       "Ranks of a process group step their optimizers without synchronising gradients", ""},
      {"LL205", "eval-mode-not-restored", Severity::Warning, "Python, C++",
       "Training continues in eval mode after validation put the model there", "unsafe"},
      {"LL206", "gradient-accumulation-unscaled", Severity::Warning, "Python, C++",
       "Gradients accumulated over N micro-batches from a loss not divided by N", "unsafe"},
      {"LL301", "model-switch-without-release", Severity::Warning, "Python",
       "Model replaced by a new one without releasing the previous one first", ""},
      {"LL302", "empty-cache-before-release", Severity::Warning, "Python, C++",
       "empty_cache() called while the memory it should free is still referenced", ""},
      {"LL303", "empty-cache-in-hot-loop", Severity::Note, "Python, C++",
       "empty_cache() called on every batch", ""},
      {"LL304", "oom-retry-in-except", Severity::Warning, "Python",
       "Out-of-memory retry inside the except clause that caught the error", ""},
      {"LL401", "dataloader-invalid-worker-options", Severity::Error, "Python",
       "DataLoader worker options that require num_workers > 0", ""},
      {"LL402", "dataloader-worker-memory", Severity::Warning, "Python, C++",
       "DataLoader worker setup multiplies host memory beyond the configured budget", ""},
      {"LL403", "dataloader-copy-on-access", Severity::Warning, "Python",
       "Dataset keeps Python objects that every forked worker copies on access", ""},
      {"LL404", "cuda-in-dataloader-worker", Severity::Error, "Python",
       "CUDA tensors created inside a DataLoader worker", ""},
      {"LL405", "distributed-without-sampler", Severity::Warning, "Python",
       "DataLoader of a distributed training loop without a DistributedSampler", ""},
      {"LL501", "fork-with-cuda", Severity::Error, "Python, C++",
       "Process started with fork in a program that uses CUDA", "unsafe"},
      {"LL502", "spawn-without-main-guard", Severity::Error, "Python",
       "Processes started at module level with spawn and no __main__ guard", ""},
  };
  return kRules;
}

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) !=
        std::toupper(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

// The first paragraph of the "## What it does" section, its lines joined by spaces and
// markdown links reduced to their text. Empty when the page has no such section.
std::string what_it_does_paragraph(std::string_view doc) {
  bool in_section = false;
  bool in_fence = false;
  std::string para;
  std::size_t pos = 0;
  while (pos <= doc.size()) {
    std::size_t nl = doc.find('\n', pos);
    if (nl == std::string_view::npos) nl = doc.size();
    const std::string_view line = trim(doc.substr(pos, nl - pos));
    pos = nl + 1;
    if (!in_section) {
      if (line.rfind("##", 0) == 0 && line.rfind("###", 0) != 0 &&
          iequals(trim(line.substr(2)), "What it does")) {
        in_section = true;
      }
      continue;
    }
    if (line.rfind("```", 0) == 0) {
      if (!para.empty()) break;
      in_fence = !in_fence;
      continue;
    }
    if (in_fence) continue;
    if (line.empty()) {
      if (para.empty()) continue;
      break;
    }
    if (line.front() == '#') break;
    if (!para.empty()) para += ' ';
    para.append(line);
  }
  // [text](url) -> text
  std::string out;
  out.reserve(para.size());
  for (std::size_t i = 0; i < para.size(); ++i) {
    if (para[i] == '[') {
      const std::size_t close = para.find(']', i);
      if (close != std::string::npos && close + 1 < para.size() && para[close + 1] == '(') {
        const std::size_t paren = para.find(')', close);
        if (paren != std::string::npos) {
          out.append(para, i + 1, close - i - 1);
          i = paren;
          continue;
        }
      }
    }
    out += para[i];
  }
  return out;
}

bool is_abbreviation_before(const std::string& s, std::size_t dot) {
  static constexpr std::string_view kAbbrev[] = {"e.g", "i.e", "etc", "vs", "cf", "approx"};
  std::size_t start = dot;
  while (start > 0 && std::isspace(static_cast<unsigned char>(s[start - 1])) == 0 &&
         s[start - 1] != '(') {
    --start;
  }
  const std::string_view word(s.data() + start, dot - start);
  return std::any_of(std::begin(kAbbrev), std::end(kAbbrev),
                     [&](std::string_view a) { return iequals(word, a); });
}

// Byte offsets one past the end of each sentence of `s` (ends outside code spans only).
std::vector<std::size_t> sentence_ends(const std::string& s) {
  std::vector<std::size_t> ends;
  bool in_code = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '`') {
      in_code = !in_code;
      continue;
    }
    if (in_code || (c != '.' && c != '!' && c != '?')) continue;
    const bool at_break =
        i + 1 == s.size() || std::isspace(static_cast<unsigned char>(s[i + 1])) != 0;
    if (!at_break) continue;
    if (c == '.' && is_abbreviation_before(s, i)) continue;
    ends.push_back(i + 1);
  }
  if (ends.empty() || ends.back() != s.size()) ends.push_back(s.size());
  return ends;
}

constexpr std::size_t kMaxDescription = 1024;

}  // namespace

const RuleInfo* find_rule(std::string_view id_or_slug) {
  for (const RuleInfo& r : all_rules()) {
    if (iequals(r.id, id_or_slug) || r.slug == id_or_slug) return &r;
  }
  return nullptr;
}

std::string_view rule_doc(std::string_view id) {
  for (int i = 0; i < kRuleDocCount; ++i) {
    if (kRuleDocs[i].first == id) return kRuleDocs[i].second;
  }
  return {};
}

std::string rule_short_description(std::string_view id) {
  const std::string para = what_it_does_paragraph(rule_doc(id));
  if (!para.empty()) {
    std::string first = para.substr(0, sentence_ends(para).front());
    if (first.size() <= kMaxDescription) return first;
  }
  const RuleInfo* r = find_rule(id);
  return r != nullptr ? std::string(r->summary) : std::string();
}

std::string rule_full_description(std::string_view id) {
  std::string para = what_it_does_paragraph(rule_doc(id));
  if (para.empty()) {
    const RuleInfo* r = find_rule(id);
    return r != nullptr ? std::string(r->summary) : std::string();
  }
  if (para.size() <= kMaxDescription) return para;
  std::size_t cut = 0;
  for (const std::size_t end : sentence_ends(para)) {
    if (end > kMaxDescription) break;
    cut = end;
  }
  if (cut > 0) return std::string(trim(std::string_view(para).substr(0, cut)));
  // One sentence longer than the limit: cut at a word boundary.
  constexpr std::string_view kEllipsis = "...";
  std::size_t space = para.rfind(' ', kMaxDescription - kEllipsis.size());
  if (space == std::string::npos || space == 0) {
    space = kMaxDescription - kEllipsis.size();
    // Do not split a UTF-8 sequence.
    while (space > 0 && (static_cast<unsigned char>(para[space]) & 0xC0U) == 0x80U) --space;
  }
  return para.substr(0, space) + std::string(kEllipsis);
}

std::string rule_help_uri(std::string_view id) {
  std::string uri = "https://github.com/leaklint/leaklint/blob/main/docs/rules/";
  const RuleInfo* r = find_rule(id);
  if (r == nullptr) return uri;
  uri.append(r->id);
  uri += '-';
  uri.append(r->slug);
  uri += ".md";
  return uri;
}

}  // namespace ll
