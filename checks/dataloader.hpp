// DataLoader and device recognition shared by the LL4xx and LL5xx checks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "checks/facts.hpp"

namespace ll {

bool is_dataloader_call(const Facts& f, Id call);

// num_workers of a DataLoader call: 0 when absent or literal 0, the literal when visible,
// -1 when it is an expression whose value is not known (assumed > 0).
long workers_of(const Facts& f, const CallSite& c);

// The shape of one sample (channels, height, width) that a DataLoader's dataset yields, when
// the file shows it: a torchvision dataset of known image size (the MNIST family 1 x 28 x 28,
// CIFAR and SVHN 3 x 32 x 32, STL10 3 x 96 x 96), resized or cropped by the `transform=` it is
// built with (the last `Resize` / `CenterCrop` / `RandomCrop` / `RandomResizedCrop` of literal
// size in a `Compose([...])`, through the names and dict entries it is bound to; `Grayscale`
// makes one channel), or an `ImageFolder` whose transform sets the size.
struct SampleShape {
  long c = 0, h = 0, w = 0;
};
std::optional<SampleShape> sample_shape(const Facts& f, const CallSite& loader);

// DataLoader call sites whose dataset argument is an instance of class `cls`.
std::vector<int> loaders_of_class(const Facts& f, Id cls);

// Functions passed to DataLoaders as `collate_fn` / `worker_init_fn` with num_workers > 0
// (or any DataLoader when assume-dataloader-workers is set); pairs of (function, loader call site).
std::vector<std::pair<Id, int>> worker_functions(const Facts& f);

// Is the expression a CUDA device ("cuda", "cuda:0", torch.device("cuda"), a name bound to one)?
bool is_cuda_device(const Facts& f, Id func, Id expr);
// Does the call create a tensor on, move one to, or initialise CUDA?
bool is_cuda_call(const Facts& f, const CallSite& c);

// LL403's finding: containers of Python objects that a Dataset subclass builds in
// __init__ and reads in __getitem__.
struct CopySite {
  Id stmt;
  std::string attr;  // "self.items"
  std::string what;  // how it was built
  // Size class: one element per sample (what `__len__` counts, or indexed by
  // `__getitem__`'s index), so it grows with the dataset; otherwise its size is unknowable
  // here (a few shard paths or class names are common) and the evidence is weak.
  bool per_sample = false;
  // Large by what it is, whatever the dataset: an index a library builds of every record
  // (pycocotools' `COCO(annotation_file)`, a dict per image and per annotation).
  bool large = false;
  // Its elements are records parsed from the data's text (`self.data.append(json.loads(line))`,
  // `eval(line)`, `[json.loads(l) for l in f]`): the corpus itself, a dict of tokens and fields
  // per sample, held as Python objects (not an index of names or paths).
  bool records = false;
};
std::vector<CopySite> copy_on_access_sites(const Facts& f, Id cls);

}  // namespace ll
