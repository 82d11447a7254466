# find_package(lcm) for Nerve's liblcm (installed by scripts/install-c into <prefix>/lib/lcm/cmake, where LCM's own
# package lives), giving what LCM 1.5.3's package gives, so a CMakeLists.txt written for LCM needs no edit:
#   targets lcm (liblcm.so.1), lcm-static (liblcm.a), lcm-coretypes (headers only), lcm-gen (runs `nerve gen`);
#   LCM_VERSION, LCM_NAMESPACE (empty), LCM_USE_FILE (lcm_wrap_types, lcm_add_library, lcm_target_link_libraries).
get_filename_component(_nerve_lcm_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

set(LCM_VERSION 1.5.3)
set(LCM_NAMESPACE "")
set(LCM_USE_FILE "${CMAKE_CURRENT_LIST_DIR}/lcmUtilities.cmake")

if(NOT TARGET lcm)
  add_library(lcm SHARED IMPORTED)
  set_target_properties(lcm PROPERTIES
    IMPORTED_LOCATION "${_nerve_lcm_prefix}/lib/liblcm.so.1.5.3"
    IMPORTED_SONAME "liblcm.so.1"
    INTERFACE_INCLUDE_DIRECTORIES "${_nerve_lcm_prefix}/include")

  # What a static Rust library needs besides libc (rustc --print native-static-libs).
  add_library(lcm-static STATIC IMPORTED)
  set_target_properties(lcm-static PROPERTIES
    IMPORTED_LOCATION "${_nerve_lcm_prefix}/lib/liblcm.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES "C"
    INTERFACE_COMPILE_DEFINITIONS "LCM_STATIC"
    INTERFACE_INCLUDE_DIRECTORIES "${_nerve_lcm_prefix}/include"
    INTERFACE_LINK_LIBRARIES "gcc_s;util;rt;pthread;m;dl")

  add_library(lcm-coretypes INTERFACE IMPORTED)
  set_target_properties(lcm-coretypes PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_nerve_lcm_prefix}/include")

  # lcm-gen is `nerve gen` (lcmUtilities.cmake adds the `gen` argument): the nerve installed next to this library,
  # else the one on PATH.
  find_program(NERVE_EXECUTABLE nerve HINTS "${_nerve_lcm_prefix}/bin")
  if(NOT NERVE_EXECUTABLE)
    message(FATAL_ERROR "find_package(lcm): Nerve's liblcm generates types with `nerve gen`, and no `nerve` was "
                        "found in ${_nerve_lcm_prefix}/bin or on PATH")
  endif()
  add_executable(lcm-gen IMPORTED)
  set_target_properties(lcm-gen PROPERTIES IMPORTED_LOCATION "${NERVE_EXECUTABLE}")
endif()

unset(_nerve_lcm_prefix)
