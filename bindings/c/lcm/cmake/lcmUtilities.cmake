# include(${LCM_USE_FILE}) for Nerve's liblcm: LCM 1.5.3's CMake functions with LCM's signatures, generating with
# `nerve gen` (the imported target lcm-gen is the nerve executable):
#
#   lcm_wrap_types([C_HEADERS <VAR> C_SOURCES <VAR> [C_NOPUBSUB]]
#                  [CPP_HEADERS <VAR> [CPP11]]
#                  [PYTHON_SOURCES <VAR>]
#                  [DESTINATION <PATH>]
#                  <FILE> [<FILE>...])
#     generates bindings for .lcm files at build time; the variables receive the generated files, named as
#     lcm-gen names them (C: DEST/<package>_<type>.{h,c}; C++: DEST/<package>/<type>.hpp; Python:
#     DEST/<package>/<type>.py). Nerve's generated code also needs its runtime header, written next to it
#     (DEST/nerve_lcm.h for C, DEST/nerve_lcm.hpp for C++).
#     Options of LCM's that Nerve does not generate (JAVA_SOURCES, CSHARP_SOURCES, LUA_SOURCES, GO_SOURCES,
#     C_EXPORT, C_INCLUDE, CPP_INCLUDE, C_TYPEINFO, aggregate headers) are an error.
#
#   lcm_add_library(<NAME> C [STATIC|SHARED|MODULE] <SOURCES>)
#   lcm_add_library(<NAME> CPP <HEADERS>)
#     a library of the generated bindings (C: compiled, using lcm-static; C++: an INTERFACE library)
#
#   lcm_target_link_libraries(<TARGET> <...>)
#     target_link_libraries, as LCM's
cmake_minimum_required(VERSION 3.10.0)
include(CMakeParseArguments)

function(lcm_wrap_types)
  set(_flags C_NOPUBSUB CPP11)
  set(_sv_opts C_HEADERS C_SOURCES CPP_HEADERS PYTHON_SOURCES DESTINATION)
  set(_unsupported JAVA_SOURCES CSHARP_SOURCES LUA_SOURCES GO_SOURCES C_EXPORT C_INCLUDE CPP_INCLUDE C_TYPEINFO
                   CREATE_C_AGGREGATE_HEADER CREATE_CPP_AGGREGATE_HEADER GO_DESTINATION PACKAGE_PREFIX)
  foreach(_opt IN LISTS _unsupported)
    list(FIND ARGN ${_opt} _at)
    if(NOT _at EQUAL -1)
      message(SEND_ERROR "lcm_wrap_types: ${_opt} is not supported by Nerve's lcm package (nerve gen)")
      return()
    endif()
  endforeach()
  cmake_parse_arguments("" "${_flags}" "${_sv_opts}" "" ${ARGN})

  if(DEFINED _C_HEADERS AND NOT DEFINED _C_SOURCES OR DEFINED _C_SOURCES AND NOT DEFINED _C_HEADERS)
    message(SEND_ERROR "lcm_wrap_types: C_HEADERS and C_SOURCES go together")
    return()
  endif()
  if(NOT DEFINED _C_HEADERS AND NOT DEFINED _CPP_HEADERS AND NOT DEFINED _PYTHON_SOURCES)
    message(SEND_ERROR "lcm_wrap_types: at least one of C_HEADERS, CPP_HEADERS or PYTHON_SOURCES is required")
    return()
  endif()
  if(NOT DEFINED _DESTINATION)
    set(_DESTINATION "${CMAKE_CURRENT_BINARY_DIR}")
  endif()

  set(_args gen)
  if(DEFINED _C_HEADERS)
    list(APPEND _args --c --c-cpath ${_DESTINATION} --c-hpath ${_DESTINATION})
    if(_C_NOPUBSUB)
      list(APPEND _args --c-no-pubsub)
    endif()
  endif()
  if(DEFINED _CPP_HEADERS)
    list(APPEND _args --cpp --cpp-hpath ${_DESTINATION})
  endif()
  if(DEFINED _PYTHON_SOURCES)
    list(APPEND _args --python --python-no-init --ppath ${_DESTINATION})
  endif()

  set(_c_headers "")
  set(_c_sources "")
  set(_cpp_headers "")
  set(_python_sources "")
  set(_inputs "")
  set(_outputs "")
  foreach(_file IN LISTS _UNPARSED_ARGUMENTS)
    get_filename_component(_full "${_file}" ABSOLUTE)
    list(APPEND _inputs "${_full}")
    # The package and the types a file declares, to name the outputs before generating (as LCM's does).
    file(READ "${_full}" _text)
    string(REGEX REPLACE "//[^\n]*" "" _text "${_text}")
    string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" "" _text "${_text}")
    set(_package "")
    if(_text MATCHES "package[ \t\r\n]+([A-Za-z0-9_.]+)[ \t\r\n]*;")
      set(_package "${CMAKE_MATCH_1}")
    endif()
    string(REPLACE "." "_" _package_pre "${_package}")
    string(REPLACE "." "/" _package_dir "${_package}")
    if(_package_dir STREQUAL "")
      set(_package_dir ".")
    endif()
    string(REGEX MATCHALL "(struct|enum)[ \t\r\n]+[A-Za-z_][A-Za-z0-9_]*" _decls "${_text}")
    foreach(_decl IN LISTS _decls)
      string(REGEX REPLACE "^(struct|enum)[ \t\r\n]+" "" _type "${_decl}")
      if(_package_pre STREQUAL "")
        set(_c_name "${_type}")
      else()
        set(_c_name "${_package_pre}_${_type}")
      endif()
      if(DEFINED _C_HEADERS)
        list(APPEND _c_headers "${_DESTINATION}/${_c_name}.h")
        list(APPEND _c_sources "${_DESTINATION}/${_c_name}.c")
      endif()
      if(DEFINED _CPP_HEADERS)
        list(APPEND _cpp_headers "${_DESTINATION}/${_package_dir}/${_type}.hpp")
      endif()
      if(DEFINED _PYTHON_SOURCES)
        list(APPEND _python_sources "${_DESTINATION}/${_package_dir}/${_type}.py")
      endif()
    endforeach()
  endforeach()
  list(APPEND _outputs ${_c_headers} ${_c_sources} ${_cpp_headers} ${_python_sources})

  # One run for all the files: types in one may use types of another.
  add_custom_command(
    OUTPUT ${_outputs}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_DESTINATION}
    COMMAND ${LCM_NAMESPACE}lcm-gen ${_args} ${_inputs}
    DEPENDS ${_inputs}
    COMMENT "nerve gen: LCM types"
    VERBATIM)

  if(DEFINED _C_HEADERS)
    set(${_C_HEADERS} ${_c_headers} PARENT_SCOPE)
    set(${_C_SOURCES} ${_c_sources} PARENT_SCOPE)
  endif()
  if(DEFINED _CPP_HEADERS)
    set(${_CPP_HEADERS} ${_cpp_headers} PARENT_SCOPE)
  endif()
  if(DEFINED _PYTHON_SOURCES)
    set(${_PYTHON_SOURCES} ${_python_sources} PARENT_SCOPE)
  endif()
endfunction()

function(lcm_add_library NAME LANGUAGE)
  string(TOUPPER ${LANGUAGE} LANGUAGE)
  set(_sources ${ARGN})
  if(LANGUAGE STREQUAL "C")
    set(_type "")
    if(ARGV2 MATCHES "^(STATIC|SHARED|MODULE)$")
      set(_type ${ARGV2})
      list(REMOVE_AT _sources 0)
    endif()
    add_custom_target(${NAME}.sources DEPENDS ${_sources})
    add_library(${NAME} ${_type} ${_sources})
    add_dependencies(${NAME} ${NAME}.sources)
    target_link_libraries(${NAME} PRIVATE ${LCM_NAMESPACE}lcm-static PUBLIC ${LCM_NAMESPACE}lcm-coretypes)
  elseif(LANGUAGE MATCHES "^(CXX|CPP|C\\+\\+)$")
    add_custom_target(${NAME}.sources DEPENDS ${_sources})
    add_library(${NAME} INTERFACE)
    target_link_libraries(${NAME} INTERFACE ${LCM_NAMESPACE}lcm-coretypes)
    add_dependencies(${NAME} ${NAME}.sources)
  else()
    message(SEND_ERROR "lcm_add_library: library language must be C or CPP")
  endif()
endfunction()

function(lcm_target_link_libraries TARGET)
  target_link_libraries(${TARGET} ${ARGN})
endfunction()
