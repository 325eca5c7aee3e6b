// DataLoader recognition shared by the LL4xx checks.
#pragma once

#include "checks/facts.hpp"

namespace ll {

inline bool is_dataloader_call(const Facts& f, Id call) {
  std::string q = f.callee_qual(call);
  return q == "torch.utils.data.DataLoader" || q == "torch.utils.data.dataloader.DataLoader" ||
         q == "torch.data.DataLoaderOptions";
}

}  // namespace ll
