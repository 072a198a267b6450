# libep's CMake package (installed as PREFIX/lib/cmake/ep/epConfig.cmake by
# tools/install_files.sh). With CMAKE_PREFIX_PATH=PREFIX:
#
#   find_package(ep CONFIG REQUIRED)                      # ep::ep
#   find_package(ep CONFIG REQUIRED COMPONENTS Fortran)   # ep::ep and ep::ep_fortran
#
# ep::ep          ep/ep.h and libep.so; links MPI::MPI_C (found here with
#                 find_dependency(MPI COMPONENTS C)), as API.md's "Building and linking" says.
# ep::ep_fortran  the Fortran module ep_f08 (PREFIX/include/ep/ep_f08.mod) and
#                 PREFIX/lib/libep_fortran.so; links ep::ep and MPI::MPI_Fortran. Defined only
#                 when both files are installed and the calling project has enabled Fortran
#                 (MPI::MPI_Fortran needs it); component "Fortran" is found exactly then.
#
# The package is relocatable: every path is derived from this file's location.
include(CMakeFindDependencyMacro)
find_dependency(MPI COMPONENTS C)

get_filename_component(_ep_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

set(_ep_fortran_available FALSE)
if(EXISTS "${_ep_prefix}/lib/libep_fortran.so" AND EXISTS "${_ep_prefix}/include/ep/ep_f08.mod")
  if(CMAKE_Fortran_COMPILER_LOADED)
    # Not find_dependency: a C-only user must not lose ep::ep when MPI's Fortran part is missing.
    find_package(MPI QUIET COMPONENTS Fortran)
    if(MPI_Fortran_FOUND)
      set(_ep_fortran_available TRUE)
    else()
      set(_ep_fortran_why "MPI's Fortran component (MPI::MPI_Fortran) was not found")
    endif()
  else()
    set(_ep_fortran_why "the project has not enabled the Fortran language")
  endif()
else()
  set(_ep_fortran_why "this installation has no libep_fortran.so and ep_f08.mod")
endif()

include("${CMAKE_CURRENT_LIST_DIR}/epTargets.cmake")

set(ep_C_FOUND TRUE)
set(ep_Fortran_FOUND ${_ep_fortran_available})
foreach(_ep_component IN LISTS ep_FIND_COMPONENTS)
  if(NOT ep_${_ep_component}_FOUND AND ep_FIND_REQUIRED_${_ep_component})
    set(ep_FOUND FALSE)
    if(_ep_component STREQUAL "Fortran")
      set(ep_NOT_FOUND_MESSAGE "ep component Fortran is unavailable: ${_ep_fortran_why}")
    else()
      set(ep_NOT_FOUND_MESSAGE "ep has no component ${_ep_component} (components: C, Fortran)")
    endif()
  endif()
endforeach()

unset(_ep_component)
unset(_ep_fortran_available)
unset(_ep_fortran_why)
unset(_ep_prefix)
