// LL403 dataloader-copy-on-access: a Dataset keeps a large container of Python objects
// that __getitem__ reads; forked workers touch the refcounts and copy the pages.
#include "checks/common.hpp"
#include "checks/dataloader.hpp"

namespace ll {

void check_LL403(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  for (Id cls = 0; cls < f.m.classes.size(); ++cls) {
    long workers = 0;
    bool used = f.cfg.assume_dataloader_workers || f.used_with_workers_elsewhere(cls);
    for (int li : loaders_of_class(f, cls)) {
      long w = workers_of(f, f.calls[li]);
      if (w != 0) { used = true; workers = w; }
    }
    if (!used) continue;
    for (const auto& site : copy_on_access_sites(f, cls)) {
      const std::string wk = workers == 1 ? "the worker ends up"
                             : workers > 1 ? "each of the " + std::to_string(workers) + " workers ends up"
                                           : "every worker ends up";
      std::string msg = "`" + site.attr + "` is a Python container (" + site.what +
                        ") that `__getitem__` reads: in forked DataLoader workers, reading Python objects updates "
                        "their reference counts, which copies the pages, so " + wk +
                        " with a private copy of it in host RAM (pytorch issue 13246); store it as a numpy array or "
                        "a serialized buffer instead";
      // Impact: the copy matters in proportion to the container's size, which the code does
      // not show: one element per sample grows with the dataset (a LUNA candidate list, 550k
      // tuples) but a tutorial's 1 MB corpus costs a few MB; anything else may be a handful of
      // entries. Both are weak (docs/impact.md, "Container size").
      // An index of every record a library builds (pycocotools' COCO) is large by what it is.
      // So is a corpus held as records parsed from the data's text (a dict of tokens and fields
      // for every sentence of a data file, however `__len__` counts samples: sentences or the
      // bags that group them): the dataset's content, not an index of its files.
      if (site.large || site.records)
        ctx.report("LL403", f.m.s(site.stmt).range, std::move(msg));
      else if (site.per_sample)
        ctx.report_weak("LL403", f.m.s(site.stmt).range, std::move(msg),
                        "one element per sample, but the dataset's size is not visible here; the copies matter "
                        "when it holds many thousands of Python objects");
      else
        ctx.report_weak("LL403", f.m.s(site.stmt).range, std::move(msg),
                        "`__len__` does not count it and `__getitem__` does not index it by the sample index, so its "
                        "size need not grow with the dataset");
    }
  }
}

}  // namespace ll
