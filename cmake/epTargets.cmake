# libep's imported targets; included by epConfig.cmake, which sets _ep_prefix (the
# installation prefix) and _ep_fortran_available (see epConfig.cmake for the contract).
if(NOT TARGET ep::ep)
  add_library(ep::ep SHARED IMPORTED)
  set_target_properties(ep::ep PROPERTIES
    IMPORTED_LOCATION "${_ep_prefix}/lib/libep.so"
    # libep.so has no SONAME: link it as -lep from its directory, not by its full path.
    IMPORTED_NO_SONAME TRUE
    INTERFACE_INCLUDE_DIRECTORIES "${_ep_prefix}/include"
    INTERFACE_LINK_LIBRARIES "MPI::MPI_C")
endif()

if(_ep_fortran_available AND NOT TARGET ep::ep_fortran)
  add_library(ep::ep_fortran SHARED IMPORTED)
  set_target_properties(ep::ep_fortran PROPERTIES
    IMPORTED_LOCATION "${_ep_prefix}/lib/libep_fortran.so"
    # With or without a SONAME: link it as -lep_fortran, never by its full path.
    IMPORTED_NO_SONAME TRUE
    INTERFACE_INCLUDE_DIRECTORIES "${_ep_prefix}/include/ep"
    INTERFACE_LINK_LIBRARIES "ep::ep;MPI::MPI_Fortran")
endif()
