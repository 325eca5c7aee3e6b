import torch
model = torch.nn.Linear(2, 2)
for x0 in range(3):
 if x0:
  with torch.no_grad():
   for x3 in range(3):
    if x3:
     with torch.no_grad():
      for x6 in range(3):
       if x6:
        with torch.no_grad():
         for x9 in range(3):
          if x9:
           with torch.no_grad():
            for x12 in range(3):
             if x12:
              with torch.no_grad():
               for x15 in range(3):
                if x15:
                 with torch.no_grad():
                  for x18 in range(3):
                   if x18:
                    with torch.no_grad():
                     for x21 in range(3):
                      if x21:
                       with torch.no_grad():
                        for x24 in range(3):
                         if x24:
                          with torch.no_grad():
                           for x27 in range(3):
                            if x27:
                             with torch.no_grad():
                              for x30 in range(3):
                               if x30:
                                with torch.no_grad():
                                 for x33 in range(3):
                                  if x33:
                                   with torch.no_grad():
                                    for x36 in range(3):
                                     if x36:
                                      with torch.no_grad():
                                       for x39 in range(3):
                                        if x39:
                                         with torch.no_grad():
                                          for x42 in range(3):
                                           if x42:
                                            with torch.no_grad():
                                             for x45 in range(3):
                                              if x45:
                                               with torch.no_grad():
                                                for x48 in range(3):
                                                 if x48:
                                                  with torch.no_grad():
                                                   for x51 in range(3):
                                                    if x51:
                                                     with torch.no_grad():
                                                      for x54 in range(3):
                                                       if x54:
                                                        with torch.no_grad():
                                                         for x57 in range(3):
                                                          if x57:
                                                           with torch.no_grad():
                                                            for x60 in range(3):
                                                             if x60:
                                                              with torch.no_grad():
                                                               for x63 in range(3):
                                                                if x63:
                                                                 with torch.no_grad():
                                                                  for x66 in range(3):
                                                                   if x66:
                                                                    with torch.no_grad():
                                                                     for x69 in range(3):
                                                                      if x69:
                                                                       with torch.no_grad():
                                                                        for x72 in range(3):
                                                                         if x72:
                                                                          with torch.no_grad():
                                                                           for x75 in range(3):
                                                                            if x75:
                                                                             with torch.no_grad():
                                                                              for x78 in range(3):
                                                                               if x78:
                                                                                with torch.no_grad():
                                                                                 for x81 in range(3):
                                                                                  if x81:
                                                                                   with torch.no_grad():
                                                                                    for x84 in range(3):
                                                                                     if x84:
                                                                                      with torch.no_grad():
                                                                                       for x87 in range(3):
                                                                                        if x87:
                                                                                         with torch.no_grad():
                                                                                          for x90 in range(3):
                                                                                           if x90:
                                                                                            with torch.no_grad():
                                                                                             for x93 in range(3):
                                                                                              if x93:
                                                                                               with torch.no_grad():
                                                                                                for x96 in range(3):
                                                                                                 if x96:
                                                                                                  with torch.no_grad():
                                                                                                   for x99 in range(3):
                                                                                                    if x99:
                                                                                                     with torch.no_grad():
                                                                                                      for x102 in range(3):
                                                                                                       if x102:
                                                                                                        with torch.no_grad():
                                                                                                         for x105 in range(3):
                                                                                                          if x105:
                                                                                                           with torch.no_grad():
                                                                                                            for x108 in range(3):
                                                                                                             if x108:
                                                                                                              with torch.no_grad():
                                                                                                               for x111 in range(3):
                                                                                                                if x111:
                                                                                                                 with torch.no_grad():
                                                                                                                  for x114 in range(3):
                                                                                                                   if x114:
                                                                                                                    with torch.no_grad():
                                                                                                                     for x117 in range(3):
                                                                                                                      if x117:
                                                                                                                       with torch.no_grad():
                                                                                                                        for x120 in range(3):
                                                                                                                         if x120:
                                                                                                                          with torch.no_grad():
                                                                                                                           for x123 in range(3):
                                                                                                                            if x123:
                                                                                                                             with torch.no_grad():
                                                                                                                              for x126 in range(3):
                                                                                                                               if x126:
                                                                                                                                with torch.no_grad():
                                                                                                                                 for x129 in range(3):
                                                                                                                                  if x129:
                                                                                                                                   with torch.no_grad():
                                                                                                                                    for x132 in range(3):
                                                                                                                                     if x132:
                                                                                                                                      with torch.no_grad():
                                                                                                                                       for x135 in range(3):
                                                                                                                                        if x135:
                                                                                                                                         with torch.no_grad():
                                                                                                                                          for x138 in range(3):
                                                                                                                                           if x138:
                                                                                                                                            with torch.no_grad():
                                                                                                                                             for x141 in range(3):
                                                                                                                                              if x141:
                                                                                                                                               with torch.no_grad():
                                                                                                                                                for x144 in range(3):
                                                                                                                                                 if x144:
                                                                                                                                                  with torch.no_grad():
                                                                                                                                                   for x147 in range(3):
                                                                                                                                                    if x147:
                                                                                                                                                     with torch.no_grad():
                                                                                                                                                      for x150 in range(3):
                                                                                                                                                       if x150:
                                                                                                                                                        with torch.no_grad():
                                                                                                                                                         for x153 in range(3):
                                                                                                                                                          if x153:
                                                                                                                                                           with torch.no_grad():
                                                                                                                                                            for x156 in range(3):
                                                                                                                                                             if x156:
                                                                                                                                                              with torch.no_grad():
                                                                                                                                                               for x159 in range(3):
                                                                                                                                                                if x159:
                                                                                                                                                                 with torch.no_grad():
                                                                                                                                                                  for x162 in range(3):
                                                                                                                                                                   if x162:
                                                                                                                                                                    with torch.no_grad():
                                                                                                                                                                     for x165 in range(3):
                                                                                                                                                                      if x165:
                                                                                                                                                                       with torch.no_grad():
                                                                                                                                                                        for x168 in range(3):
                                                                                                                                                                         if x168:
                                                                                                                                                                          with torch.no_grad():
                                                                                                                                                                           for x171 in range(3):
                                                                                                                                                                            if x171:
                                                                                                                                                                             with torch.no_grad():
                                                                                                                                                                              for x174 in range(3):
                                                                                                                                                                               if x174:
                                                                                                                                                                                with torch.no_grad():
                                                                                                                                                                                 for x177 in range(3):
                                                                                                                                                                                  if x177:
                                                                                                                                                                                   with torch.no_grad():
                                                                                                                                                                                    for x180 in range(3):
                                                                                                                                                                                     if x180:
                                                                                                                                                                                      with torch.no_grad():
                                                                                                                                                                                       for x183 in range(3):
                                                                                                                                                                                        if x183:
                                                                                                                                                                                         with torch.no_grad():
                                                                                                                                                                                          for x186 in range(3):
                                                                                                                                                                                           if x186:
                                                                                                                                                                                            with torch.no_grad():
                                                                                                                                                                                             for x189 in range(3):
                                                                                                                                                                                              if x189:
                                                                                                                                                                                               with torch.no_grad():
                                                                                                                                                                                                for x192 in range(3):
                                                                                                                                                                                                 if x192:
                                                                                                                                                                                                  with torch.no_grad():
                                                                                                                                                                                                   for x195 in range(3):
                                                                                                                                                                                                    if x195:
                                                                                                                                                                                                     with torch.no_grad():
                                                                                                                                                                                                      for x198 in range(3):
                                                                                                                                                                                                       if x198:
                                                                                                                                                                                                        loss = model(x0).sum(); loss.backward(); total = total + loss
