#include "checks/dataloader.hpp"

#include <cerrno>
#include <cstdlib>
#include <set>

#include "checks/common.hpp"
#include "checks/flow.hpp"

namespace ll {

namespace {

// pycocotools' annotation index: `COCO(annotation_file)` holds a dict per image, per
// annotation and per category (860k annotation dicts for COCO train2017).
bool coco_index(const Facts& f, Id v) {
  return f.e(v).kind == ExprKind::Call && f.callee_qual(v) == "pycocotools.coco.COCO"sv;
}

// Is the value a container of Python objects (not numpy/tensor/bytes/table)? (`func`: where it
// is bound, for the objects a method is called on.)
// `df.to_dict("records")` / `"index"` (also by `orient=`): one Python dict for every row of
// a table, the dataset's content.
static bool table_rows(const Facts& f, Id v) {
  const Id o = f.arg(v, 0, "orient");
  return o != kNone && f.e(o).kind == ExprKind::Literal && f.e(o).lit == LitKind::String &&
         (f.e(o).text.find("records") != std::string::npos || f.e(o).text.find("index") != std::string::npos);
}

std::string python_container(const Facts& f, Id v, Id func) {
  const Expr& e = f.e(v);
  if (e.kind == ExprKind::Comprehension && (e.text == "list"sv || e.text == "dict"sv)) {
    // `[self.img_size for _ in range(n)]`: n references to one object, which an access
    // touches once; only an element that reads the loop's names or builds something is new
    // each time.
    std::set<std::string> targets;
    for (const CompFor& c : e.fors)
      for_each_expr(f.m, c.target, [&](Id x) {
        if (f.e(x).kind == ExprKind::Name) targets.insert(f.e(x).text);
        return true;
      });
    bool distinct = false;
    for_each_expr(f.m, e.kids[0], [&](Id x) {
      const Expr& k = f.e(x);
      if (k.kind == ExprKind::Call || k.kind == ExprKind::Sequence || k.kind == ExprKind::Comprehension ||
          (k.kind == ExprKind::Name && targets.count(k.text)))
        distinct = true;
      return !distinct;
    });
    if (e.text == "list"sv && !distinct) return "";
    // A dict of arrays (`{label: np.where(labels == label)[0] for label in labels_set}`): its
    // memory is the arrays' buffers, which reference counts never touch; a worker copies the
    // pages of a few entries, not the container.
    if (e.text == "dict"sv && !e.kids.empty() && f.e(e.kids[0]).kind == ExprKind::Sequence &&
        f.e(e.kids[0]).kids.size() == 2) {
      Id v = f.e(e.kids[0]).kids[1];
      while (f.e(v).kind == ExprKind::Subscript && !f.e(v).kids.empty()) v = f.e(v).kids[0];
      if (f.e(v).kind == ExprKind::Call && (starts_with(f.callee_qual(v), "numpy.") || f.callee_attr(v) == "numpy"sv))
        return "";
    }
    return "a " + e.text + " comprehension";
  }
  if (e.kind != ExprKind::Call) return "";
  const std::string& q = f.callee_qual(v);
  const std::string& a = f.callee_attr(v);
  const Expr& callee = f.e(e.kids[0]);
  if (q == "json.load"sv || q == "json.loads"sv || q == "pickle.load"sv || q == "pickle.loads"sv || q == "yaml.safe_load"sv ||
      q == "yaml.load"sv || q == "ujson.load"sv || q == "orjson.loads"sv)
    return "`" + q + "(...)`";
  if (a == "tolist"sv) return "`.tolist()`";
  // A table's rows as Python dicts (`df.to_dict("index")`, `"records"`).
  if (a == "to_dict"sv && table_rows(f, v)) return "`.to_dict(...)`, a Python dict for every row";
  if (coco_index(f, v)) return "a COCO annotation index, `COCO(...)`: a dict per image and per annotation";
  // The ids a COCO index lists (`self.ids = self.coco.getImgIds()`): a list of every image's.
  if (in(a, {"getImgIds", "getAnnIds", "getCatIds", "loadAnns", "loadImgs"})) {
    const std::string& r = f.dotted(f.callee_receiver(v));
    const std::vector<Id> built = r.empty() ? std::vector<Id>{} : f.bindings(func, r);
    if (!built.empty() && std::all_of(built.begin(), built.end(), [&](Id b) { return coco_index(f, b); }))
      return "`" + r + "." + a + "()`, a list of the COCO index's records";
  }
  if (callee.kind == ExprKind::Name && q.empty() && in(callee.text, {"list", "dict", "sorted"})) {
    return "`" + callee.text + "(...)`";
  }
  return "";
}

// (Also in the methods of its class it calls on `self`, two calls deep: `__getitem__` calling
// `self.load_image(idx)`, which reads `self.coco`.)
bool reads_attr(const Facts& f, Id func, const std::string& d, int depth = 0) {
  bool hit = false;
  const Id cls = f.m.funcs[func].cls;
  std::vector<Id> work(f.m.funcs[func].body.begin(), f.m.funcs[func].body.end());
  for (size_t i = 0; i < work.size() && !hit; ++i) {
    const Stmt& s = f.m.s(work[i]);
    auto scan = [&](Id x) {
      for_each_expr(f.m, x, [&](Id y) {
        if (f.dotted(y) == d) hit = true;
        const Expr& c = f.e(y);
        if (!hit && depth < 2 && cls != kNone && c.kind == ExprKind::Call && !c.kids.empty() &&
            f.e(c.kids[0]).kind == ExprKind::Attribute && f.dotted(f.e(c.kids[0]).kids[0]) == "self"sv)
          for (Id g : f.m.classes[cls].methods)
            if (g != func && f.m.funcs[g].name == f.e(c.kids[0]).text && reads_attr(f, g, d, depth + 1)) hit = true;
        return !hit;
      });
    };
    scan(s.value);
    for (Id t : s.targets) scan(t);
    for (Id it : s.items) scan(it);
    for (Id b : s.body) work.push_back(b);
    for (Id b : s.orelse) work.push_back(b);
    for (Id b : s.finalbody) work.push_back(b);
    for (const auto& h : s.handlers)
      for (Id b : h.body) work.push_back(b);
  }
  return hit;
}

}  // namespace


bool is_dataloader_call(const Facts& f, Id call) {
  const std::string& q = f.callee_qual(call);
  return q == "torch.utils.data.DataLoader"sv || q == "torch.utils.data.dataloader.DataLoader"sv;
}

namespace {

// The one value `x` holds where it is read in `func` (the one binding of a name that reaches
// it, there or at module level; a dict display's entry for a literal key,
// `data_transforms["train"]`), kNone when not one.
Id single_value(const Facts& f, Id func, Id x, int depth = 0) {
  if (x == kNone || depth > 4) return kNone;
  const Expr& e = f.e(x);
  if (e.kind == ExprKind::Name) {
    std::vector<Id> vs = f.bindings_at(func, e.text, x);
    if (vs.empty() && func != kNone) vs = f.bindings(kNone, e.text);
    return vs.size() == 1 ? single_value(f, func, vs[0], depth + 1) : kNone;
  }
  if (e.kind == ExprKind::Subscript && e.kids.size() == 2 && f.e(e.kids[1]).kind == ExprKind::Literal &&
      f.e(e.kids[1]).lit == LitKind::String) {
    const Id d = single_value(f, func, e.kids[0], depth + 1);
    if (d == kNone || f.e(d).kind != ExprKind::Sequence || f.e(d).text != "dict"sv) return kNone;
    const Expr& dict = f.e(d);
    for (size_t k = 0; k + 1 < dict.kids.size(); k += 2)
      if (f.e(dict.kids[k]).kind == ExprKind::Literal && f.e(dict.kids[k]).text == f.e(e.kids[1]).text)
        return single_value(f, func, dict.kids[k + 1], depth + 1);
    return kNone;
  }
  return x;
}

// A literal size `k` or `(h, w)`: {h, w}, or {-1, -1}.
std::pair<long, long> literal_size(const Facts& f, Id x) {
  if (x == kNone) return {-1, -1};
  const Expr& e = f.e(x);
  if (e.kind == ExprKind::Literal) {
    const long k = int_literal_value(e);
    return {k > 0 ? k : -1, k > 0 ? k : -1};
  }
  if (e.kind == ExprKind::Sequence && (e.text == "tuple"sv || e.text == "list"sv) && e.kids.size() == 2) {
    const long h = int_literal_value(f.e(e.kids[0])), w = int_literal_value(f.e(e.kids[1]));
    if (h > 0 && w > 0) return {h, w};
  }
  return {-1, -1};
}

}  // namespace

std::optional<SampleShape> sample_shape(const Facts& f, const CallSite& loader) {
  if (f.m.lang != Lang::Python) return std::nullopt;
  Id named = f.arg(loader.call, 0, "dataset");
  // A part of a dataset (`train_data, val_data = random_split(full_data, [55000, 5000])`,
  // `Subset(full_data, idx)`) has the samples of the whole.
  auto splits = [&](Id v) {
    return v != kNone && f.e(v).kind == ExprKind::Call &&
           in(f.callee_qual(v), {"torch.utils.data.random_split", "torch.utils.data.Subset",
                                 "torch.utils.data.dataset.random_split", "torch.utils.data.dataset.Subset"});
  };
  auto unpacked_split = [&](Id x) -> Id {  // the one split call a tuple unpacking `x` from reaches
    if (x == kNone || f.e(x).kind != ExprKind::Name || f.stmt_of(x) == kNone) return kNone;
    bool outside = false;
    const std::vector<Def> defs = f.flow().reaching(f.stmt_of(x), f.e(x).text, &outside);
    if (outside || defs.size() != 1 || defs[0].kind != DefKind::Unpacked || !splits(defs[0].value)) return kNone;
    return defs[0].value;
  };
  Id ds = single_value(f, loader.func, named);
  for (int hops = 0; hops < 3; ++hops) {
    Id part = splits(ds) ? ds : ds == kNone ? unpacked_split(named) : kNone;
    if (part == kNone) break;
    named = f.arg(part, 0, "dataset");
    ds = single_value(f, loader.func, named);
  }
  if (ds == kNone || f.e(ds).kind != ExprKind::Call) return std::nullopt;
  const std::string& q = f.callee_qual(ds);
  if (q.rfind("torchvision.datasets.", 0) != 0) return std::nullopt;
  const std::string_view name = f.last_component(q);
  // An image folder's size is the transform's; the others have their own.
  const bool folder = in(name, {"ImageFolder"sv, "DatasetFolder"sv});
  SampleShape s;
  if (in(name, {"MNIST"sv, "FashionMNIST"sv, "KMNIST"sv, "EMNIST"sv, "QMNIST"sv})) s = {1, 28, 28};
  else if (in(name, {"CIFAR10"sv, "CIFAR100"sv, "SVHN"sv})) s = {3, 32, 32};
  else if (name == "STL10"sv) s = {3, 96, 96};
  else if (folder) s = {3, 0, 0};
  else return std::nullopt;
  // Its transform by keyword (ImageFolder's second argument by position): a dataset handed
  // more arguments by position (`CIFAR10(root, True, tf)`), or whose `.transform` the file
  // assigns later, has a transform this does not follow.
  {
    const Expr& call = f.e(ds);
    if (call.kids.size() - 1 > call.kw.size() + 2) return std::nullopt;  // more than (root, train) by position
    const std::string& dname = f.dotted(named);
    if (dname.empty()) return std::nullopt;
    for (const StmtSite& ss : f.stmt_sites) {
      const Stmt& st = f.m.s(ss.stmt);
      if (st.kind != StmtKind::Assign && st.kind != StmtKind::AugAssign) continue;
      for (Id t : st.targets)
        if (in(f.dotted(t), {dname + ".transform", dname + ".transforms", dname + ".dataset.transform"}))
          return std::nullopt;
    }
  }
  const Id tf_arg = f.arg(ds, folder ? 1 : static_cast<size_t>(-1), "transform");
  const Id tf = single_value(f, loader.func, tf_arg);
  // A transform whose value is not one visible call: not followed.
  if (tf_arg != kNone && (tf == kNone || f.e(tf).kind != ExprKind::Call)) return std::nullopt;
  if (tf != kNone) {
    const std::string& tq = f.callee_qual(tf);
    if (tq.rfind("torchvision.transforms", 0) != 0) return std::nullopt;
    // One step (`transform=transforms.ToTensor()`), or the steps of a Compose.
    std::vector<Id> step_list{tf};
    if (f.last_component(tq) == "Compose"sv) {
      const Id steps = single_value(f, loader.func, f.arg(tf, 0, "transforms"));
      if (steps == kNone || f.e(steps).kind != ExprKind::Sequence) return std::nullopt;
      step_list = f.e(steps).kids;
    }
    for (Id t : step_list) {
      if (f.e(t).kind != ExprKind::Call) return std::nullopt;  // a name, `*extra`
      const std::string& sq = f.callee_qual(t);
      if (sq.rfind("torchvision.transforms", 0) != 0) return std::nullopt;  // the project's own step
      const std::string_view step = f.last_component(sq);
      if (in(step, {"Resize"sv, "CenterCrop"sv, "RandomCrop"sv, "RandomResizedCrop"sv, "Scale"sv})) {
        const auto [h, w] = literal_size(f, f.arg(t, 0, "size"));
        if (h < 0) return std::nullopt;
        s.h = h;
        s.w = w;
      } else if (step == "Grayscale"sv) {
        const Id n = f.arg(t, 0, "num_output_channels");
        s.c = n == kNone ? 1 : int_literal_value(f.e(n)) == 3 ? 3 : 1;
      } else if (in(step, {"Pad"sv, "FiveCrop"sv, "TenCrop"sv, "Lambda"sv, "RandomApply"sv, "RandomChoice"sv})) {
        return std::nullopt;  // changes the shape in ways not followed here
      }
    }
  }
  if (s.h == 0) return std::nullopt;  // an image folder that no transform sizes
  return s;
}

long workers_of(const Facts& f, const CallSite& c) {
  Id nw = f.arg(c.call, 5, "num_workers");
  // Through a dict of keyword arguments (`DataLoader(ds, **params)`, `params = {...,
  // "num_workers": opt.num_workers}` or `dict(num_workers=8, ...)`) bound in the scope.
  const Expr& call = f.e(c.call);
  for (size_t k = 0; nw == kNone && k < call.kw.size(); ++k) {
    if (call.kw[k] != "**") continue;
    const Id splat = call.kids[call.kids.size() - call.kw.size() + k];
    const Id given = f.e(splat).kind == ExprKind::Starred && !f.e(splat).kids.empty() ? f.e(splat).kids[0] : splat;
    std::vector<Id> values{given};
    if (f.e(given).kind == ExprKind::Name) values = f.bindings_at(c.func, f.e(given).text, given);
    if (values.size() != 1) continue;
    const Expr& d = f.e(values[0]);
    if (d.kind == ExprKind::Sequence && d.text == "dict"sv && d.kids.size() % 2 == 0) {
      for (size_t i = 0; i + 1 < d.kids.size(); i += 2)
        if (f.e(d.kids[i]).kind == ExprKind::Literal && f.e(d.kids[i]).lit == LitKind::String &&
            f.e(d.kids[i]).text == "num_workers"sv)
          nw = d.kids[i + 1];
    } else if (d.kind == ExprKind::Call && python_builtin_call(f, values[0]) && f.e(d.kids[0]).text == "dict"sv) {
      nw = f.arg(values[0], static_cast<size_t>(-1), "num_workers");
    }
  }
  if (nw == kNone) return 0;
  const Expr* lit = f.literal_of(nw, c.func);
  if (lit && lit->lit == LitKind::Int) {
    // `16`, `0x10`, C++ `16u`. A count beyond a billion is no worker count anyone runs, and
    // bounding it keeps the products the checks form (workers x prefetch x batch) in range.
    errno = 0;
    const long v = std::strtol(lit->text.c_str(), nullptr, 0);
    return errno == ERANGE || v < 0 || v > 1000000000L ? -1 : v;
  }
  return -1;
}

namespace {

bool instance_of(const Facts& f, Id func, Id x, Id cls, int depth = 0) {
  if (x == kNone || depth > 4) return false;
  const Expr& e = f.e(x);
  if (e.kind == ExprKind::Call) {
    const Expr& callee = f.e(e.kids[0]);
    return callee.kind == ExprKind::Name && callee.text == f.m.classes[cls].name;
  }
  const std::string& d = f.dotted(x);
  if (d.empty()) return false;
  for (Id v : f.bindings(func, d))
    if (instance_of(f, func, v, cls, depth + 1)) return true;
  return false;
}

}  // namespace

// The call sites that construct a DataLoader, found once per file: every Dataset class asks.
const std::vector<int>& dataloader_sites(const Facts& f) {
  std::optional<std::vector<int>>& memo = f.dataloader_sites_memo_;
  if (!memo) {
    memo.emplace();
    for (size_t i = 0; i < f.calls.size(); ++i)
      if (is_dataloader_call(f, f.calls[i].call)) memo->push_back(static_cast<int>(i));
  }
  return *memo;
}

std::vector<int> loaders_of_class(const Facts& f, Id cls) {
  std::vector<int> out;
  for (int i : dataloader_sites(f)) {
    const CallSite& c = f.calls[i];
    if (instance_of(f, c.func, f.arg(c.call, 0, "dataset"), cls)) out.push_back(i);
  }
  return out;
}

std::vector<std::pair<Id, int>> worker_functions(const Facts& f) {
  std::vector<std::pair<Id, int>> out;
  for (size_t i = 0; i < f.calls.size(); ++i) {
    const CallSite& c = f.calls[i];
    if (!is_dataloader_call(f, c.call)) continue;
    if (workers_of(f, c) == 0 && !f.cfg.assume_dataloader_workers) continue;
    for (auto [pos, kw] : {std::pair<size_t, const char*>{6, "collate_fn"}, {10, "worker_init_fn"}}) {
      Id a = f.arg(c.call, pos, kw);
      if (a == kNone || f.e(a).kind != ExprKind::Name) continue;
      for (Id fn = 0; fn < f.m.funcs.size(); ++fn)
        if (f.m.funcs[fn].name == f.e(a).text && f.m.funcs[fn].cls == kNone) out.emplace_back(fn, static_cast<int>(i));
    }
  }
  return out;
}

bool is_cuda_device(const Facts& f, Id func, Id x) {
  for (int depth = 0; x != kNone && depth < 6; ++depth) {
    const Expr& e = f.e(x);
    if (e.kind == ExprKind::Literal) return e.lit == LitKind::String && e.text.rfind("cuda", 0) == 0;
    if (e.kind == ExprKind::Call) {
      const std::string& q = f.callee_qual(x);
      if (q == "torch.device"sv) {
        Id a = f.arg(x, 0, "type");
        return a != kNone && f.e(a).kind == ExprKind::Literal && f.e(a).text.rfind("cuda", 0) == 0;
      }
      return false;
    }
    const std::string& d = f.dotted(x);
    if (d.empty()) return false;
    auto vals = f.bindings(func, d);
    if (vals.empty()) return false;
    x = vals.front();
  }
  return false;
}

bool is_cuda_call(const Facts& f, const CallSite& c) {
  const std::string& q = f.callee_qual(c.call);
  const std::string& a = f.callee_attr(c.call);
  if (q.rfind("torch.cuda.", 0) == 0) {
    // Queries, and the calls torch queues until CUDA starts (`_lazy_call`: seeding and RNG
    // state) or skips when it has not (empty_cache): none of them initialises CUDA.
    static constexpr std::string_view harmless[] = {"torch.cuda.is_available", "torch.cuda.device_count", "torch.cuda.is_initialized",
                                     "torch.cuda.amp.autocast", "torch.cuda.amp.GradScaler", "torch.cuda.manual_seed",
                                     "torch.cuda.manual_seed_all", "torch.cuda.seed", "torch.cuda.seed_all",
                                     "torch.cuda.set_rng_state", "torch.cuda.set_rng_state_all",
                                     "torch.cuda.empty_cache"};
    for (std::string_view h : harmless)
      if (q == h) return false;
    return true;
  }
  if (q.empty() && a == "cuda"sv) return true;  // tensor.cuda(), model.cuda()
  if (q.empty() && a == "to"sv) {
    Id d = f.arg(c.call, 0, "device");
    if (d != kNone && is_cuda_device(f, c.func, d)) return true;
  }
  for (const char* kw : {"device", "map_location"}) {
    Id dev = f.arg(c.call, static_cast<size_t>(-1), kw);
    if (dev != kNone && is_cuda_device(f, c.func, dev) && q != "torch.device"sv) return true;
  }
  return false;
}

// Is `d` one element per sample: `__len__` returns len(d), or `__getitem__` subscripts it
// with its index parameter (`self.items[idx]`, `self.items[idx][0]`)?
static bool per_sample(const Facts& f, Id cls, Id getitem, const std::string& d) {
  auto mentions_len_of = [&](Id x) {
    bool hit = false;
    for_each_expr(f.m, x, [&](Id y) {
      const Expr& e = f.e(y);
      if (e.kind == ExprKind::Call && f.e(e.kids[0]).kind == ExprKind::Name && f.e(e.kids[0]).text == "len"sv &&
          e.kids.size() > 1 && f.dotted(e.kids[1]) == d)
        hit = true;
      return !hit;
    });
    return hit;
  };
  for (Id fn : f.m.classes[cls].methods) {
    if (f.m.funcs[fn].name != "__len__"sv) continue;
    for (const StmtSite& site : f.stmt_sites)
      if (site.func == fn && f.m.s(site.stmt).kind == StmtKind::Return && mentions_len_of(f.m.s(site.stmt).value))
        return true;
  }
  const Function& gi = f.m.funcs[getitem];
  if (gi.params.size() < 2) return false;
  const std::string& index = gi.params[1];
  bool hit = false;
  for (const StmtSite& site : f.stmt_sites) {
    if (site.func != getitem || hit) continue;
    const Stmt& s = f.m.s(site.stmt);
    for (Id root : {s.value, s.targets.empty() ? kNone : s.targets[0]})
      for_each_expr(f.m, root, [&](Id y) {
        const Expr& e = f.e(y);
        if (e.kind == ExprKind::Subscript && e.kids.size() > 1 && f.dotted(e.kids[0]) == d) {
          // The index mentions the sample index: `[idx]`, `[idx % n]`, `[self.order[idx]]`.
          // (Not through a field of the sample's record, `self.classes[self.datapath[idx][0]]`,
          // `self.vocab[self.items[idx].label]`: a key shared by many samples, a category.)
          auto mentions_index = [&](Id x) {
            bool m = false;
            for_each_expr(f.m, x, [&](Id z) {
              if (f.e(z).kind == ExprKind::Name && f.e(z).text == index) m = true;
              return !m;
            });
            return m;
          };
          bool field = false;
          for_each_expr(f.m, e.kids[1], [&](Id z) {
            const Expr& k = f.e(z);
            if ((k.kind == ExprKind::Subscript || k.kind == ExprKind::Attribute) && !k.kids.empty() &&
                f.e(k.kids[0]).kind == ExprKind::Subscript && mentions_index(k.kids[0]))
              field = true;
            return !field;
          });
          if (!field && mentions_index(e.kids[1])) hit = true;
        }
        return !hit;
      });
  }
  return hit;
}

// A record parsed from text: `json.loads(line)`, `eval(line)`, `ast.literal_eval(line)`, also
// through a name the statement before binds (`item = json.loads(line); data.append(item)`).
static bool parsed_record(const Facts& f, Id func, Id x, int depth = 0) {
  if (x == kNone || depth > 2) return false;
  const Expr& e = f.e(x);
  if (e.kind == ExprKind::Name) {
    const std::vector<Id> vs = f.bindings_at(func, e.text, x);
    return !vs.empty() && std::all_of(vs.begin(), vs.end(), [&](Id v) { return parsed_record(f, func, v, depth + 1); });
  }
  if (e.kind != ExprKind::Call || e.kids.empty()) return false;
  const std::string& q = f.callee_qual(x);
  if (in(q, {"json.loads", "ast.literal_eval", "ujson.loads", "orjson.loads", "simplejson.loads"})) return true;
  const Expr& callee = f.e(e.kids[0]);
  // (The builtin `eval`: no function or binding of that name where it is called.)
  return callee.kind == ExprKind::Name && callee.text == "eval"sv && callee.qname.empty() &&
         !f.is_function_name(func, "eval") && f.bindings(func, "eval").empty();
}

// Are the container's elements records parsed from the data's text (CopySite::records)?
// (`builders`: the functions that build the dataset, whose appends grow it.)
static bool parsed_records(const Facts& f, Id init, const std::vector<Id>& builders, const std::string& d, Id value) {
  const Expr& v = f.e(value);
  if (v.kind == ExprKind::Call && f.callee_attr(value) == "to_dict"sv && table_rows(f, value)) return true;
  if (v.kind == ExprKind::Comprehension && v.text == "list"sv && !v.kids.empty()) return parsed_record(f, init, v.kids[0]);
  if (v.kind != ExprKind::Sequence || !v.kids.empty()) return false;
  bool any = false;
  for (const CallSite& c : f.calls) {
    if (std::find(builders.begin(), builders.end(), c.func) == builders.end() || c.loop < 0 ||
        f.callee_attr(c.call) != "append"sv || f.dotted(f.callee_receiver(c.call)) != d)
      continue;
    if (!parsed_record(f, c.func, f.arg(c.call, 0))) return false;
    any = true;
  }
  return any;
}

std::vector<CopySite> copy_on_access_sites(const Facts& f, Id cls) {
  std::vector<CopySite> out;
  if (!f.class_derives(cls, {"Dataset"})) return out;
  Id init = kNone, getitem = kNone;
  for (Id fn : f.m.classes[cls].methods) {
    if (f.m.funcs[fn].name == "__init__"sv) init = fn;
    if (f.m.funcs[fn].name == "__getitem__"sv) getitem = fn;
  }
  if (init == kNone || getitem == kNone) return out;
  // Where the dataset is built: __init__, and the methods of the class it calls on `self` to
  // load the data (`self.load()` reading a JSON corpus), two calls deep, unless
  // `__getitem__` calls them too (a lazy load per sample builds no shared container).
  std::vector<Id> builders{init};
  for (size_t i = 0; i < builders.size() && builders.size() < 8; ++i)
    for (int ci : f.calls_in(builders[i])) {
      const Id g = f.calls[ci].target_func;
      if (g == kNone || g == getitem || f.class_of(g) != cls || i >= 2 ||
          std::find(builders.begin(), builders.end(), g) != builders.end() ||
          f.dotted(f.callee_receiver(f.calls[ci].call)) != "self"sv)
        continue;
      bool lazy = false;
      for (int cj : f.calls_in(getitem)) lazy = lazy || f.calls[cj].target_func == g;
      if (!lazy) builders.push_back(g);
    }
  // Containers assigned there; `self.x = []` grown by appends in a loop counts too.
  for (const StmtSite& site : f.stmt_sites) {
    if (std::find(builders.begin(), builders.end(), site.func) == builders.end()) continue;
    const Id builder = site.func;
    const Stmt& s = f.m.s(site.stmt);
    if (s.kind != StmtKind::Assign || s.value == kNone) continue;
    for (Id t : s.targets) {
      const std::string& d = f.dotted(t);
      if (d.rfind("self.", 0) != 0 || !reads_attr(f, getitem, d)) continue;
      std::string what = python_container(f, s.value, builder);
      const Expr& v = f.e(s.value);
      if (what.empty() && v.kind == ExprKind::Sequence && v.kids.empty() && (v.text == "list"sv || v.text == "dict"sv)) {
        // Grown later by appends in a loop, there or in another builder.
        for (const CallSite& c : f.calls)
          if (std::find(builders.begin(), builders.end(), c.func) != builders.end() && c.loop >= 0 &&
              (f.callee_attr(c.call) == "append"sv || f.callee_attr(c.call) == "extend"sv) &&
              f.dotted(f.callee_receiver(c.call)) == d)
            what = "appends in a loop";
        // ... or by item assignments in a loop (`self.masks[key] = rle`).
        for (size_t i = 0; what.empty() && i < f.loops.size(); ++i) {
          if (std::find(builders.begin(), builders.end(), f.loops[i].func) == builders.end()) continue;
          for (Id sid : f.loops[i].stmts) {
            const Stmt& ls = f.m.s(sid);
            if (ls.kind != StmtKind::Assign) continue;
            for (Id lt : ls.targets)
              if (f.e(lt).kind == ExprKind::Subscript && !f.e(lt).kids.empty() && f.dotted(f.e(lt).kids[0]) == d)
                what = "item assignments in a loop";
          }
        }
      }
      if (what.empty()) continue;
      // Turned into an array before __init__ ends (`self.pts = np.vstack(self.pts)`,
      // `self.rays = torch.cat(self.rays)`): workers read one buffer, no per-element objects.
      // (A statement of the builder's own body, or of __init__'s after it, not under an `if`; a
      // stacking or array call whose dtype is not `object`, which would keep the Python objects.)
      bool packed = false;
      std::vector<Id> later = f.m.funcs[builder].body;
      const size_t own = later.size();
      if (builder != init) later.insert(later.end(), f.m.funcs[init].body.begin(), f.m.funcs[init].body.end());
      for (size_t j = 0; j < later.size(); ++j) {
        const Stmt& ls = f.m.s(later[j]);
        if (ls.kind != StmtKind::Assign || ls.value == kNone || (j < own && ls.range.begin <= s.range.begin) ||
            f.e(ls.value).kind != ExprKind::Call)
          continue;
        const std::string& q = f.callee_qual(ls.value);
        if (!in(q, {"numpy.stack", "numpy.vstack", "numpy.hstack", "numpy.concatenate", "numpy.array", "numpy.asarray",
                    "numpy.stack", "torch.cat", "torch.stack", "torch.tensor", "torch.as_tensor", "torch.from_numpy",
                    "torch.concat", "torch.vstack"}))
          continue;
        const Id dt = f.arg(ls.value, static_cast<size_t>(-1), "dtype");
        if (dt != kNone && (f.dotted(dt) == "object" || f.e(dt).text == "object" || f.qual(dt) == "numpy.object_"))
          continue;
        for (Id lt : ls.targets) packed = packed || f.dotted(lt) == d;
      }
      if (packed) continue;
      out.push_back({site.stmt, d, what, per_sample(f, cls, getitem, d), coco_index(f, s.value),
                     parsed_records(f, builder, builders, d, s.value)});
    }
  }
  return out;
}

}  // namespace ll
