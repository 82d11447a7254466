/* bcryptprimitives.dll for Wine only: Rust's std on Windows imports ProcessPrng from it, and Wine 8.0 has no such
 * DLL, so a Rust program does not start. This one exports ProcessPrng over RtlGenRandom (advapi32's
 * SystemFunction036, which Wine has). Never ship it for real Windows, which has the genuine DLL. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    /* RtlGenRandom takes a ULONG: fill larger requests in pieces. */
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
