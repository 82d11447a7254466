/* lcm/lcm_export.h (Nerve's liblcm): LCM's export macros, for code that names them. On Windows, as the header
 * CMake generates for LCM's own Windows build: imported from lcm.dll, or nothing when LCM_STATIC links liblcm.a. */
#ifndef NERVE_LIBLCM_EXPORT_H
#define NERVE_LIBLCM_EXPORT_H
#if defined(_WIN32)
#ifndef LCM_EXPORT
#ifdef LCM_STATIC
#define LCM_EXPORT
#else
#define LCM_EXPORT __declspec(dllimport)
#endif
#endif
#ifndef LCM_NO_EXPORT
#define LCM_NO_EXPORT
#endif
#else
#ifndef LCM_EXPORT
#define LCM_EXPORT __attribute__((visibility("default")))
#endif
#ifndef LCM_NO_EXPORT
#define LCM_NO_EXPORT __attribute__((visibility("hidden")))
#endif
#endif
#ifndef LCM_DEPRECATED
#define LCM_DEPRECATED __attribute__((__deprecated__))
#endif
#endif
