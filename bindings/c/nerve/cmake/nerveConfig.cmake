# find_package(nerve): nerve::nerve (libnerve.so.0, include/nerve/nerve.h and nerve.hpp), nerve::nerve-static
# (libnerve.a), and NERVE_EXECUTABLE (the installed `nerve`, for `nerve gen` in custom commands). Installed by
# scripts/install-c into <prefix>/lib/cmake/nerve.
get_filename_component(_nerve_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET nerve::nerve)
  add_library(nerve::nerve SHARED IMPORTED)
  set_target_properties(nerve::nerve PROPERTIES
    IMPORTED_LOCATION "${_nerve_prefix}/lib/libnerve.so.0"
    IMPORTED_SONAME "libnerve.so.0"
    INTERFACE_INCLUDE_DIRECTORIES "${_nerve_prefix}/include")
  add_library(nerve::nerve-static STATIC IMPORTED)
  set_target_properties(nerve::nerve-static PROPERTIES
    IMPORTED_LOCATION "${_nerve_prefix}/lib/libnerve.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES "C"
    INTERFACE_INCLUDE_DIRECTORIES "${_nerve_prefix}/include"
    INTERFACE_LINK_LIBRARIES "gcc_s;util;rt;pthread;m;dl")
endif()
find_program(NERVE_EXECUTABLE nerve HINTS "${_nerve_prefix}/bin")
unset(_nerve_prefix)
