/* lcm/lcm_export.h (Nerve's liblcm): LCM's export macros, for code that names them. */
#ifndef NERVE_LIBLCM_EXPORT_H
#define NERVE_LIBLCM_EXPORT_H
#ifndef LCM_EXPORT
#define LCM_EXPORT __attribute__((visibility("default")))
#endif
#ifndef LCM_NO_EXPORT
#define LCM_NO_EXPORT __attribute__((visibility("hidden")))
#endif
#ifndef LCM_DEPRECATED
#define LCM_DEPRECATED __attribute__((__deprecated__))
#endif
#endif
