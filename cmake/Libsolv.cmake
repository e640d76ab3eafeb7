# libsolv with conda support, built from the pinned source tarball into the build tree.
#
# Debian 12's libsolv (0.7.23) is built without conda support, so envlock builds its own static
# copy (>= 0.7.28, ENABLE_CONDA) once per build tree at configure time. scripts/fetch-libsolv puts
# the sha256-pinned tarball into .deps/. A libsolv handed in with -DENVLOCK_LIBSOLV_ROOT=<prefix>
# is used instead, after checking that it was built with LIBSOLV_FEATURE_CONDA.
#
# Before the build, the patches in cmake/patches/libsolv-*.patch are applied to the source (as
# conda-forge's libsolv-feedstock patches libsolv); docs/design.md#libsolv says what each changes.
#
# Defines the imported target envlock::libsolv (libsolv.a + libsolvext.a).

set(ENVLOCK_LIBSOLV_VERSION 0.7.32)
set(ENVLOCK_LIBSOLV_SHA256 8c5957fb417823768d70e0faefa6f75f497f41289641256e4fdfecd1954fa16c)
set(ENVLOCK_LIBSOLV_TARBALL "${PROJECT_SOURCE_DIR}/.deps/libsolv-${ENVLOCK_LIBSOLV_VERSION}.tar.gz"
    CACHE FILEPATH "libsolv source tarball (fetched by scripts/fetch-libsolv)")
set(ENVLOCK_LIBSOLV_ROOT "" CACHE PATH "a prefix holding a libsolv built with conda support")

if(ENVLOCK_LIBSOLV_ROOT)
  set(_solv_prefix "${ENVLOCK_LIBSOLV_ROOT}")
else()
  set(_solv_prefix "${CMAKE_BINARY_DIR}/_deps/libsolv-install")
  file(GLOB _solv_patches "${PROJECT_SOURCE_DIR}/cmake/patches/libsolv-*.patch")
  list(SORT _solv_patches)
  set(_solv_key "${ENVLOCK_LIBSOLV_SHA256}")
  foreach(_p IN LISTS _solv_patches)
    file(SHA256 "${_p}" _ph)
    string(APPEND _solv_key "-${_ph}")
  endforeach()
  string(SHA256 _solv_key "${_solv_key}")
  set(_solv_stamp "${_solv_prefix}/.envlock-${_solv_key}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_solv_patches})
  if(NOT EXISTS "${_solv_stamp}")
    if(NOT EXISTS "${ENVLOCK_LIBSOLV_TARBALL}")
      message(FATAL_ERROR "libsolv source not found at ${ENVLOCK_LIBSOLV_TARBALL}.\n"
                          "Run scripts/fetch-libsolv (or scripts/setup) first.")
    endif()
    file(SHA256 "${ENVLOCK_LIBSOLV_TARBALL}" _got)
    if(NOT _got STREQUAL ENVLOCK_LIBSOLV_SHA256)
      message(FATAL_ERROR "libsolv tarball ${ENVLOCK_LIBSOLV_TARBALL} has sha256 ${_got}, "
                          "expected ${ENVLOCK_LIBSOLV_SHA256}. Delete it and rerun scripts/fetch-libsolv.")
    endif()
    set(_src "${CMAKE_BINARY_DIR}/_deps/libsolv-src")
    set(_bld "${CMAKE_BINARY_DIR}/_deps/libsolv-build")
    file(REMOVE_RECURSE "${_src}" "${_bld}" "${_solv_prefix}")
    file(MAKE_DIRECTORY "${_src}" "${_bld}")
    message(STATUS "Building libsolv ${ENVLOCK_LIBSOLV_VERSION} with conda support (once per build tree)")
    execute_process(COMMAND ${CMAKE_COMMAND} -E tar xzf "${ENVLOCK_LIBSOLV_TARBALL}"
                    WORKING_DIRECTORY "${_src}" RESULT_VARIABLE _rc)
    file(GLOB _top LIST_DIRECTORIES true "${_src}/*")
    if(_solv_patches)
      find_program(ENVLOCK_PATCH_EXECUTABLE patch)
      if(NOT ENVLOCK_PATCH_EXECUTABLE)
        message(FATAL_ERROR "patch(1) is needed to apply cmake/patches/libsolv-*.patch (apt-get install patch)")
      endif()
    endif()
    foreach(_p IN LISTS _solv_patches)
      execute_process(COMMAND "${ENVLOCK_PATCH_EXECUTABLE}" -p1 --forward --batch -i "${_p}"
                      WORKING_DIRECTORY "${_top}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
      if(NOT _rc EQUAL 0)
        message(FATAL_ERROR "applying ${_p} to libsolv ${ENVLOCK_LIBSOLV_VERSION} failed (${_rc}):\n${_out}")
      endif()
    endforeach()
    execute_process(
      COMMAND ${CMAKE_COMMAND} -S "${_top}" -B "${_bld}" -G "${CMAKE_GENERATOR}"
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=${_solv_prefix}
        -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_POSITION_INDEPENDENT_CODE=ON
        -DENABLE_CONDA=ON -DENABLE_STATIC=ON -DDISABLE_SHARED=ON
        -DENABLE_RPMMD=OFF -DENABLE_SUSEREPO=OFF -DENABLE_DEBIAN=OFF -DENABLE_ARCHREPO=OFF
        -DENABLE_COMPS=OFF -DENABLE_APPDATA=OFF -DENABLE_HELIXREPO=OFF -DENABLE_MDKREPO=OFF
        -DENABLE_PERL=OFF -DENABLE_PYTHON=OFF -DENABLE_RUBY=OFF -DENABLE_TCL=OFF
        -DWITHOUT_COOKIEOPEN=OFF -DCMAKE_C_FLAGS=-w
      RESULT_VARIABLE _rc OUTPUT_QUIET)
    if(NOT _rc EQUAL 0)
      message(FATAL_ERROR "configuring libsolv failed (${_rc}); see ${_bld}")
    endif()
    include(ProcessorCount)
    ProcessorCount(_ncpu)
    execute_process(COMMAND ${CMAKE_COMMAND} --build "${_bld}" --target install -j ${_ncpu}
                    RESULT_VARIABLE _rc OUTPUT_QUIET)
    if(NOT _rc EQUAL 0)
      message(FATAL_ERROR "building libsolv failed (${_rc}); see ${_bld}")
    endif()
    file(WRITE "${_solv_stamp}" "${ENVLOCK_LIBSOLV_VERSION}\n")
  endif()
endif()

set(_solvversion "${_solv_prefix}/include/solv/solvversion.h")
if(NOT EXISTS "${_solvversion}")
  message(FATAL_ERROR "no libsolv headers at ${_solv_prefix}/include/solv")
endif()
file(STRINGS "${_solvversion}" _conda REGEX "^#define LIBSOLV_FEATURE_CONDA")
if(NOT _conda)
  message(FATAL_ERROR "the libsolv at ${_solv_prefix} was built without conda support "
                      "(solvversion.h lacks LIBSOLV_FEATURE_CONDA). envlock needs libsolv >= 0.7.28 "
                      "configured with -DENABLE_CONDA=ON; leave ENVLOCK_LIBSOLV_ROOT empty to build one.")
endif()
file(STRINGS "${_solvversion}" _ver REGEX "^#define LIBSOLV_VERSION_STRING")
message(STATUS "libsolv: ${_ver} (conda support) at ${_solv_prefix}")

add_library(envlock_libsolv_core STATIC IMPORTED GLOBAL)
set_target_properties(envlock_libsolv_core PROPERTIES IMPORTED_LOCATION "${_solv_prefix}/lib/libsolv.a")
add_library(envlock_libsolv_ext STATIC IMPORTED GLOBAL)
set_target_properties(envlock_libsolv_ext PROPERTIES IMPORTED_LOCATION "${_solv_prefix}/lib/libsolvext.a")
add_library(envlock_libsolv INTERFACE)
target_include_directories(envlock_libsolv SYSTEM INTERFACE "${_solv_prefix}/include")
find_package(ZLIB REQUIRED)  # libsolvext's compressed-file support (solv_xfopen)
target_link_libraries(envlock_libsolv INTERFACE envlock_libsolv_ext envlock_libsolv_core ZLIB::ZLIB)
add_library(envlock::libsolv ALIAS envlock_libsolv)
