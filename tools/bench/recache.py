#!/usr/bin/env python3
# recache.py FILE...: drop FILE's clean cached pages and read it again through a mapping advised for
# huge pages, so that its page cache holds 2 MiB folios and later mmaps of it map 2 MiB pages.
import mmap, os, sys
for path in sys.argv[1:]:
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
    m.madvise(mmap.MADV_HUGEPAGE)
    s = 0
    for off in range(0, len(m), 1 << 21):
        s += m[off]
    m.close()
    os.close(fd)
