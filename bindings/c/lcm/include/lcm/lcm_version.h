/* lcm/lcm_version.h (Nerve's liblcm): the LCM release this library's API and ABI are those of. */
#ifndef NERVE_LIBLCM_VERSION_H
#define NERVE_LIBLCM_VERSION_H

#define LCM_VERSION_MAJOR 1
#define LCM_VERSION_MINOR 5
#define LCM_VERSION_PATCH 3
#define LCM_ABI_VERSION 1

/* LCM's older names for the same numbers. */
#define LCM_MAJOR_VERSION LCM_VERSION_MAJOR
#define LCM_MINOR_VERSION LCM_VERSION_MINOR
#define LCM_MICRO_VERSION LCM_VERSION_PATCH

#define NERVE_LCM_STRINGIFY_(x) #x
#define NERVE_LCM_STRINGIFY(x) NERVE_LCM_STRINGIFY_(x)
#define LCM_VERSION_STRING                                                                                   \
    NERVE_LCM_STRINGIFY(LCM_VERSION_MAJOR) "." NERVE_LCM_STRINGIFY(LCM_VERSION_MINOR) "." NERVE_LCM_STRINGIFY( \
        LCM_VERSION_PATCH)

#endif
