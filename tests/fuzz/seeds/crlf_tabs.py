import torch
for b in dl:
	if b:
		l = m(b)
        	l.backward()
	tot += l
