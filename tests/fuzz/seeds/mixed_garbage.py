import torch
@@@
:::
for for in in:
  with with:
    async await yield
lambda lambda: :
loss.backward()
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
\
match x:
 case [a, *b] if c: pass
