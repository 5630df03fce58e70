/* A stand-in for Windows' bcryptprimitives.dll, which Wine 8 lacks: the Go runtime
   (1.22 and later) needs its one export ProcessPrng. It forwards to RtlGenRandom
   (advapi32's SystemFunction036), which Wine implements. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buf, ULONG len);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, n))
            return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
