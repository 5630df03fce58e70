#!/usr/bin/env python3
# degrade.py FILE FRAC: drop FRAC of FILE (from a third in) from the page cache, read it back in
# small folios (4 KiB at a time, backwards), as a file looks after the kernel reclaimed part of it.
import os, sys
p, frac = sys.argv[1], float(sys.argv[2])
fd = os.open(p, os.O_RDONLY); size = os.fstat(fd).st_size
n = int(size * frac) // 4096 * 4096; off = size // 3 // 4096 * 4096
os.posix_fadvise(fd, off, n, os.POSIX_FADV_DONTNEED); os.posix_fadvise(fd, off, n, os.POSIX_FADV_RANDOM)
for o in range(off + n - 4096, off - 1, -4096):
    os.pread(fd, 4096, o)
